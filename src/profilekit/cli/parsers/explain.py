"""`profilekit explain` as typer declares it; its body is in `commands.explain`."""

from __future__ import annotations

from typing import Annotated

import typer

from profilekit.cli.app import app, command
from profilekit.cli.candidates import complete_role, complete_stack, complete_stack_key


@app.command()
@command
def explain(
    stack: Annotated[str, typer.Argument(help="Layers joined by '+'", autocompletion=complete_stack)],
    key: Annotated[
        str | None,
        typer.Argument(
            help="Only entries at or below this key: serve.max_num_seqs, max_num_seqs, port, HF_TOKEN",
            autocompletion=complete_stack_key,
        ),
    ] = None,
    role: Annotated[str | None, typer.Option("--role", help="Only this role.", autocompletion=complete_role)] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> int:
    """Show each effective value with its origin and what it overrode, or vLLM's default where no layer sets it."""
    from profilekit.cli.commands import explain as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.explain(stack=stack, key=key, role=role, fmt=fmt)
