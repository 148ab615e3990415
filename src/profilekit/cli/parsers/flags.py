"""`profilekit flags`: search the flag catalogue of the targeted release, offline."""

from __future__ import annotations

from typing import Annotated

import typer

from profilekit.cli.app import app, command


# `flags -O` searches for vLLM's -O short form instead of failing as an unknown option of `flags`
@app.command(context_settings={"ignore_unknown_options": True})
@command
def flags(
    pattern: Annotated[
        str | None, typer.Argument(help="Substring (also searched in help text) or glob (*, ?, [..]) of option names.")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> int:
    """Search the flag catalogue of the targeted vLLM release offline (exit 1 when nothing matches)."""
    from profilekit.cli.commands import flags as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.flags(pattern=pattern, fmt=fmt)
