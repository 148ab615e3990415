"""`profilekit render` as typer declares it; its body is in `commands.render`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from profilekit.cli.app import app, command
from profilekit.cli.candidates import complete_role, complete_stack
from profilekit.cli.parsers import IGNORE_HELP, SELECT_HELP

OUT_HELP = "Output folder (default: build/STACK; with several stacks, one folder per stack inside it)."
TARGET_HELP = "script, env, vllm-config, k8s, slurm: repeatable or comma-separated (default: script and env)"


@app.command()
@command
def render(
    stacks: Annotated[
        list[str] | None,
        typer.Argument(
            help="Stacks: layer names or layer files joined by '+'",
            show_default=False,
            metavar="STACK",
            autocompletion=complete_stack,
        ),
    ] = None,
    *,
    every: Annotated[bool, typer.Option("--all", help="Every deployable layer and every [lint] stacks entry.")] = False,
    out_dir: Annotated[Path | None, typer.Option("--out", help=OUT_HELP)] = None,
    role: Annotated[
        str | None,
        typer.Option("--role", help="Only this role's files; the others are left alone.", autocompletion=complete_role),
    ] = None,
    print_: Annotated[bool, typer.Option("--print", help="Print one role's launch script instead.")] = False,
    target: Annotated[list[str] | None, typer.Option("--target", help=TARGET_HELP)] = None,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Print where each argument and env entry comes from; write nothing."),
    ] = False,
    select: Annotated[list[str] | None, typer.Option("--select", help=SELECT_HELP, metavar="RULE")] = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore", help=IGNORE_HELP, metavar="RULE")] = None,
) -> int:
    """Write launch scripts, env files and a manifest for each stack; a stack with errors stops them all."""
    from profilekit.cli.commands import render as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.render(
        stacks=stacks,
        every=every,
        out_dir=out_dir,
        role=role,
        print_=print_,
        target=target,
        explain=explain,
        select=select,
        ignore=ignore,
    )
