"""The command line: options in, pipeline calls, text out, exit code out. The only package that prints.

`app` holds the typer app, `common` what every command shares; one module per command family registers its
commands (in the order `--help` lists them). Importing this package loads none of them: `main` answers a repeat
run from the cache (`profilekit.cache.replay`) before typer, pydantic or jinja2 are imported, and a shell's
completion request (`_PROFILEKIT_COMPLETE`, `cli.completion`) before the cache is consulted. A first run of a
hot command with plain arguments is parsed by `fastpath` and never imports typer.
"""

from __future__ import annotations

import importlib
import sys

# not `typing.TYPE_CHECKING`: importing typing (and re with it) is a fifth of a warm run; mypy knows this name
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from typer import Typer

EXIT_OK = 0  # profilekit.errors.EXIT_OK, without importing that module (dataclasses, enum) on the warm path

__all__ = ["app", "main"]

# each module registers its commands with `app`, in the order `--help` lists them
COMMAND_MODULES = (
    "listing",
    "show",
    "explain",
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


def _app(args: list[str] | None = None) -> Typer:
    """The typer app with every command, or with `args`'s command alone when it names a known one."""
    from profilekit.cli.app import app

    own = COMMANDS.get(_command_word(args) or "") if args is not None else None
    for module in (own,) if own is not None else COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{module}")
    # in the order `--help` lists them, whichever module an earlier run in this process imported first
    order = {name: index for index, name in enumerate(COMMANDS)}
    app.registered_commands.sort(key=lambda c: order.get(command_name(c), len(order)))
    return app


def command_name(info: Any) -> str:
    """The name typer gives a registered command: its own, else its function's (`check`)."""
    return str(info.name or info.callback.__name__)


def __getattr__(name: str) -> Any:
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `profilekit` command and `python -m profilekit`.

    A run from the command line (`argv` None) may be answered from the cache; a call with `argv` (tests,
    embedding programs) neither reads nor writes it, as with `--no-cache`.
    """
    if argv is not None:
        return _run(["--no-cache", *argv] if argv else [])
    import os  # already loaded by the interpreter: a dictionary lookup

    instruction = os.environ.get("_PROFILEKIT_COMPLETE")
    if instruction:  # a shell asking for completions: never answered from the cache (its words are in env)
        from profilekit.cli.completion import run_completion

        return run_completion(instruction)
    args = sys.argv[1:]
    if args == ["--version"]:
        from profilekit import __version__

        sys.stdout.write(f"profilekit {__version__}\n")
        return EXIT_OK
    if args in (["--help"], ["-h"]):
        from profilekit.cli.helptext import static_help

        text = static_help()
        if text is not None:
            sys.stdout.write(text)
            return EXIT_OK
    from profilekit.cache.replay import cached_run

    return cached_run(args, _run)


def _run(args: list[str]) -> int:
    """Run a command: a hot one with plain arguments without typer (`cli.fastpath`), anything else with it."""
    from profilekit.cli.fastpath import run_fast

    code = run_fast(args)
    if code is not None:
        return code
    return _run_typer(args)


def _run_typer(args: list[str]) -> int:
    try:
        _app(args)(args=args, prog_name="profilekit", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return EXIT_OK
