"""`profilekit init` and `profilekit schema`: start a profile repository, and describe its layers to editors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.cli.common import G, err, out, release_without_layers
from profilekit.edit.scaffold import scaffold_files, write_new_files
from profilekit.errors import EXIT_OK, UsageError
from profilekit.load.schema import dumps, layer_schema
from profilekit.output import replace_file
from profilekit.vllm.catalogue import load_catalogue
from profilekit.vllm.versions import resolve_version

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Catalogue


def _catalogue(version: str) -> Catalogue:
    catalogue = load_catalogue(version)
    if catalogue is None:
        raise UsageError(f"this build of profilekit ships no flag catalogue for vLLM {version}")
    return catalogue


def init(*, directory: Path = Path(".")) -> int:
    """`profilekit init`, as cli/parsers/scaffold.py declares it."""
    version = resolve_version(G.vllm_version, None)  # the newest release unless --vllm-version names one
    files = scaffold_files(_catalogue(version))
    shown = directory.as_posix()
    write_new_files(directory, files, shown=shown)
    for name in files:
        out((directory / name).as_posix())
    err(f"a profile repository for vLLM {version} is in {shown}; next: profilekit --repo {shown} lint")
    return EXIT_OK


def schema(*, output: Path | None = None) -> int:
    """`profilekit schema`, as cli/parsers/scaffold.py declares it."""
    text = dumps(layer_schema(_catalogue(release_without_layers())))
    if output is None:
        out(text)
    else:
        replace_file(output, text)
        out(output.as_posix())
    return EXIT_OK
