"""`profilekit schema` (and `init`): describe a repository's layers to editors, start a repository."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from profilekit.cli.app import app, command, out, release_without_layers
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
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the schema to this file instead of stdout.")
    ] = None,
) -> int:
    """Print the JSON Schema (draft 2020-12) of a layer file for the targeted vLLM release (for Taplo, CI)."""
    from profilekit.layerschema import dumps, layer_schema

    text = dumps(layer_schema(_catalogue(release_without_layers())))
    if output is None:
        out(text)
    else:
        from profilekit.output import replace_file

        replace_file(output, text)
        out(output.as_posix())
    return EXIT_OK
