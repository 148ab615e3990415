"""`profilekit init` and `profilekit schema`: start a profile repository, and describe its layers to editors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from profilekit.cli.app import G, app, command, err, out, release_without_layers
from profilekit.errors import EXIT_OK

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Catalogue


def _catalogue(version: str) -> Catalogue:
    from profilekit.errors import UsageError
    from profilekit.vllm.catalogue import load_catalogue

    catalogue = load_catalogue(version)
    if catalogue is None:
        raise UsageError(f"this build of profilekit ships no flag catalogue for vLLM {version}")
    return catalogue


@app.command()
@command
def init(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="Folder of the new repository (created if missing).")
    ] = Path("."),
) -> int:
    """Scaffold a profile repository: profilekit.toml, example layers, lint hook, editor schema; never overwrites.

    It targets the newest supported vLLM release, or the one --vllm-version names.
    """
    from profilekit.edit.scaffold import scaffold_files, write_new_files
    from profilekit.vllm.versions import resolve_version

    version = resolve_version(G.vllm_version, None)  # the newest release unless --vllm-version names one
    files = scaffold_files(_catalogue(version))
    shown = directory.as_posix()
    write_new_files(directory, files, shown=shown)
    for name in files:
        out((directory / name).as_posix())
    err(f"a profile repository for vLLM {version} is in {shown}; next: profilekit --repo {shown} lint")
    return EXIT_OK


@app.command()
@command
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the schema to this file instead of stdout.")
    ] = None,
) -> int:
    """Print the JSON Schema (draft 2020-12) of a layer file for the targeted vLLM release (for Taplo, CI)."""
    from profilekit.load.schema import dumps, layer_schema

    text = dumps(layer_schema(_catalogue(release_without_layers())))
    if output is None:
        out(text)
    else:
        from profilekit.output import replace_file

        replace_file(output, text)
        out(output.as_posix())
    return EXIT_OK
