"""Which command a run names, and running it: a hot command with plain arguments without typer (`cli.fastpath`),
anything else through the typer app with the one command module it needs (`cli.parsers`)."""

from __future__ import annotations

import importlib

# not `typing.TYPE_CHECKING`: importing typing (and re with it) is a fifth of a warm run; mypy knows this name
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from typer import Typer

EXIT_OK = 0  # profilekit.errors.EXIT_OK, without importing that module (dataclasses, enum) on the warm path

# each module registers its commands with `app`, in the order `--help` lists them
COMMAND_MODULES = (
    "listing",
    "show",
    "explain",
    "capacity",
    "checking",
    "render",
    "diff",
    "importing",
    "editing",
    "flags",
    "scaffold",
    "doctor",
    "sources",
)


# the module of each command: a run imports only its own (typer then builds one command, not sixteen: a
# tenth of a cold start); tests/test_cli.py keeps this equal to what the modules register
COMMANDS = {
    "list": "listing",
    "show": "show",
    "explain": "explain",
    "capacity": "capacity",
    "check": "checking",
    "lint": "checking",
    "render": "render",
    "diff": "diff",
    "import": "importing",
    "set": "editing",
    "unset": "editing",
    "flags": "flags",
    "init": "scaffold",
    "schema": "scaffold",
    "doctor": "doctor",
    "lock": "sources",
    "update": "sources",
}
_VALUED_GLOBALS = ("--repo", "--vllm-version")


def _command_word(args: list[str]) -> str | None:
    """The command `args` names (global options may come first), or None."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
        index += 2 if arg in _VALUED_GLOBALS else 1
    return None


def typer_app(args: list[str] | None = None) -> Typer:
    """The typer app with every command, or with `args`'s command alone when it names a known one."""
    from profilekit.cli.app import app  # noqa: PLC0415 - typer: only a run the fast path declines loads it

    own = COMMANDS.get(_command_word(args) or "") if args is not None else None
    for module in (own,) if own is not None else COMMAND_MODULES:
        importlib.import_module(f"profilekit.cli.parsers.{module}")
    # in the order `--help` lists them, whichever module an earlier run in this process imported first
    order = {name: index for index, name in enumerate(COMMANDS)}
    app.registered_commands.sort(key=lambda c: order.get(command_name(c), len(order)))
    return app


def command_name(info: Any) -> str:
    """The name typer gives a registered command: its own, else its function's (`check`)."""
    return str(info.name or info.callback.__name__)


def run(args: list[str]) -> int:
    """Run a command: a hot one with plain arguments without typer (`cli.fastpath`), anything else with it."""
    from profilekit.cli.fastpath import run_fast  # noqa: PLC0415 - not for a run the cache answers (test_import_budget)

    code = run_fast(args)
    if code is not None:
        return code
    return run_typer(args)


def run_typer(args: list[str]) -> int:
    try:
        typer_app(args)(args=args, prog_name="profilekit", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return EXIT_OK
