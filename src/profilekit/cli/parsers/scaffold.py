"""`profilekit init` and `profilekit schema`: start a profile repository, and describe its layers to editors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from profilekit.cli.app import app, command

if TYPE_CHECKING:
    pass


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
    from profilekit.cli.commands import scaffold as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.init(directory=directory)


@app.command()
@command
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the schema to this file instead of stdout.")
    ] = None,
) -> int:
    """Print the JSON Schema (draft 2020-12) of a layer file for the targeted vLLM release (for Taplo, CI)."""
    from profilekit.cli.commands import scaffold as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.schema(output=output)
