"""`profilekit capacity` as typer declares it; its body is in `commands.capacity`."""

from __future__ import annotations

from typing import Annotated

import typer

from profilekit.cli.app import app, command
from profilekit.cli.candidates import complete_role, complete_stack


@app.command()
@command
def capacity(
    stack: Annotated[str, typer.Argument(help="Layers joined by '+'", autocompletion=complete_stack)],
    role: Annotated[str | None, typer.Option("--role", help="Only this role.", autocompletion=complete_role)] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> int:
    """Will the weights and the KV cache fit: per role, on its declared GPU, with every input and its source."""
    from profilekit.cli.commands import capacity as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.capacity(stack=stack, role=role, fmt=fmt)
