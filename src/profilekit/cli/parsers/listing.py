"""`profilekit list` as typer declares it; its body is in `commands.listing`."""

from __future__ import annotations

from typing import Annotated

import typer

from profilekit.cli.app import app, command


@app.command("list")
@command
def list_layers(
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> int:
    """List the layers with description, group, extends and abstract; exit 1 when a file has errors."""
    from profilekit.cli.commands import listing as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.list_layers(fmt=fmt)
