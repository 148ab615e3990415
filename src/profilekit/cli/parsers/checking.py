"""`profilekit check` and `profilekit lint` as typer declares them; their bodies are in `commands.checking`."""

from __future__ import annotations

from typing import Annotated

import typer

from profilekit.cli.app import app, command
from profilekit.cli.candidates import complete_stack
from profilekit.cli.parsers import IGNORE_HELP, SELECT_HELP

FORMAT_HELP = (
    "text; json; github (workflow annotations); sarif (code scanning); "
    "markdown (for $GITHUB_STEP_SUMMARY and pull-request comments)"
)


STACKS_HELP = "Stacks: layer names or layer files joined by '+' (e.g. base+replayssm, profiles/qwen.toml)"
ALL_HELP = "Every deployable layer and every [lint] stacks entry."


@app.command()
@command
def check(
    stacks: Annotated[
        list[str] | None,
        typer.Argument(help=STACKS_HELP, show_default=False, metavar="STACK", autocompletion=complete_stack),
    ] = None,
    *,
    every: Annotated[bool, typer.Option("--all", help=ALL_HELP)] = False,
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "text",
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too.")] = False,
    select: Annotated[list[str] | None, typer.Option("--select", help=SELECT_HELP, metavar="RULE")] = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore", help=IGNORE_HELP, metavar="RULE")] = None,
) -> int:
    """Run every check on one or more stacks."""
    from profilekit.cli.commands import checking as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.check(stacks=stacks, every=every, fmt=fmt, strict=strict, select=select, ignore=ignore)


@app.command()
@command
def lint(
    *,
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "text",
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too.")] = False,
    combinations: Annotated[
        str | None,
        typer.Option("--combinations", help="none, pairs or all (default: [lint] combinations)"),
    ] = None,
    to_release: Annotated[
        str | None, typer.Option("--to-release", help="What upgrading vLLM to this release changes (text, json).")
    ] = None,
    sources: Annotated[
        bool, typer.Option("--sources", help="Lint the layers of every [sources] entry too, not only those used.")
    ] = False,
    select: Annotated[list[str] | None, typer.Option("--select", help=SELECT_HELP, metavar="RULE")] = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore", help=IGNORE_HELP, metavar="RULE")] = None,
) -> int:
    """Check the whole repository: every file, every deployable layer, every [lint] stack, layer combinations."""
    from profilekit.cli.commands import checking as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.lint(
        fmt=fmt,
        strict=strict,
        combinations=combinations,
        to_release=to_release,
        sources=sources,
        select=select,
        ignore=ignore,
    )
