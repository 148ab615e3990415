"""`profilekit doctor`: what on this machine changes vLLM's effective configuration (never cached: it reads the
environment and the installed packages, which the cache does not record)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from profilekit.cli.app import app, command
from profilekit.cli.candidates import complete_stack

if TYPE_CHECKING:
    pass


@app.command()
@command
def doctor(
    stack: Annotated[
        str | None,
        typer.Argument(
            help="Also check this stack as launched from this shell.",
            show_default=False,
            metavar="STACK",
            autocompletion=complete_stack,
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> int:
    """Audit this machine: the installed vLLM, vLLM plugins, and environment variables that change the config."""
    from profilekit.cli.commands import doctor as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.doctor(stack=stack, fmt=fmt)
