"""`profilekit lock` and `profilekit update`: pin the repository's sources, and move them with a diff."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from profilekit.cli.app import app, command
from profilekit.cli.candidates import complete_source

if TYPE_CHECKING:
    pass


@app.command()
@command
def lock() -> int:
    """Resolve every [sources.NAME] rev to a commit and write profilekit.lock (a locked source stays put).

    A source whose git or rev changed in profilekit.toml is resolved again; `profilekit update` moves the others.
    """
    from profilekit.cli.commands import sources as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.lock()


@app.command()
@command
def update(
    names: Annotated[
        list[str] | None,
        typer.Argument(metavar="[SOURCE]...", help="Sources to move (default: all).", autocompletion=complete_source),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would change; write nothing.")] = False,
) -> int:
    """Move sources to the newest commit of their rev; print what changes in every stack; write profilekit.lock."""
    from profilekit.cli.commands import sources as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.update(names=names, fmt=fmt, dry_run=dry_run)
