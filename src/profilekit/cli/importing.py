"""`profilekit import`: an existing `vllm serve` launch becomes a layer file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from profilekit.cli.app import app, command, err, open_session, out
from profilekit.errors import EXIT_OK


@app.command("import")
@command
def import_launch(
    launch: Annotated[
        list[str] | None,
        typer.Argument(help="A launch after --: `-- [VAR=value ...] vllm serve MODEL ...`, or a bash script file."),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Layer name (default: from the model), written to profiles/NAME.toml.")
    ] = None,
) -> int:
    """Turn an existing vllm serve launch into a layer file (VAR=value and export lines become [env])."""
    from profilekit.errors import UsageError
    from profilekit.importing.launch import import_launch as read_launch
    from profilekit.importing.launch import write_layer

    session = open_session()
    catalogue = session.catalogue
    if catalogue is None:
        raise UsageError(f"this build of profilekit ships no flag catalogue for vLLM {session.version}")
    imported = read_launch(session.root, list(launch or []), name=name, catalogue=catalogue, cwd=Path.cwd())
    for note in imported.notes:
        err(f"note: {note}")
    write_layer(session.root, imported)
    out(imported.path.as_posix())  # relative to the repository root, like every file profilekit names
    return EXIT_OK
