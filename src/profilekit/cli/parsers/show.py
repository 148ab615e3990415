"""`profilekit show` as typer declares it; its body is in `commands.show`."""

from __future__ import annotations

from typing import Annotated

import typer

from profilekit.cli.app import app, command
from profilekit.cli.candidates import complete_role, complete_stack


@app.command()
@command
def show(
    stacks: Annotated[
        list[str] | None,
        typer.Argument(
            help="Stacks: layer names or layer files joined by '+', e.g. base+replayssm",
            show_default=False,
            metavar="STACK",
            autocompletion=complete_stack,
        ),
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Every deployable layer and every [lint] stacks entry.")] = False,
    role: Annotated[str | None, typer.Option("--role", help="Only this role.", autocompletion=complete_role)] = None,
    fmt: Annotated[str, typer.Option("--format", help="toml or json")] = "toml",
) -> int:
    """Print the effective configuration of a stack (of several: {"stacks": [...]}, one entry per stack)."""
    from profilekit.cli.commands import show as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.show(stacks=stacks, every=every, role=role, fmt=fmt)
