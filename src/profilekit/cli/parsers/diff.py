"""`profilekit diff`: two stacks key by key, or one stack across two vLLM releases (upgrade impact)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from profilekit.cli.app import app, command
from profilekit.cli.candidates import complete_role, complete_stack

if TYPE_CHECKING:
    pass


@app.command()
@command
def diff(
    stacks: Annotated[
        list[str], typer.Argument(help="STACK_A STACK_B, or one STACK with --to-release", autocompletion=complete_stack)
    ],
    role: Annotated[str | None, typer.Option("--role", help="Only this role.", autocompletion=complete_role)] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
    from_release: Annotated[
        str | None, typer.Option("--from-release", help="Release the stack targets today (default: [vllm] version).")
    ] = None,
    to_release: Annotated[
        str | None, typer.Option("--to-release", help="Release to upgrade to: what changes for STACK.")
    ] = None,
) -> int:
    """Differences between two stacks, with origins; or what upgrading vLLM changes for one stack.

    Exit 0 when there is no difference, 1 when there is one, 2 on usage errors.
    """
    from profilekit.cli.commands import diff as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.diff(stacks=stacks, role=role, fmt=fmt, from_release=from_release, to_release=to_release)
