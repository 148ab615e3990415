"""The command line: options in, pipeline calls, text out, exit code out. The only package that prints.

`main` answers, in this order and each before the next is imported: a shell's completion request
(`_PROFILEKIT_COMPLETE`, `cli.completion`), a bare `--version` or `--help`, a repeat run from the cache
(`cli.replay`), and then runs the command (`cli.run`): a hot command with plain arguments through `fastpath`
without typer, anything else through the typer app (`cli.app`) with its command's declaration (`cli.parsers`);
every command's body is in `cli.commands`.
"""

from __future__ import annotations

import os
import sys

from profilekit import __version__
from profilekit.cli.ending import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Terminated,
    handle_sigterm,
    silence_stdout,
    write_all,
)
from profilekit.cli.run import EXIT_OK, run, typer_app

# not `typing.TYPE_CHECKING`: importing typing (and re with it) is a fifth of a warm run; mypy knows this name
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name == "app":
        return typer_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `profilekit` command and `python -m profilekit`.

    A run from the command line (`argv` None) may be answered from the cache; a call with `argv` (tests,
    embedding programs) neither reads nor writes it, as with `--no-cache`. However the run is stopped from
    outside, it ends here, quietly (`cli.ending`): Ctrl-C 130, SIGTERM 143 (handled only for a command-line
    run: a program that embeds profilekit keeps its own handlers), a closed pipe 141.
    """
    try:
        if argv is None:
            handle_sigterm()
        code = _main(argv)
        sys.stdout.flush()  # here, not at exit: a reader gone before the last bytes is a closed pipe, 141
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Terminated:
        return EXIT_TERMINATED
    except BrokenPipeError:
        silence_stdout()
        return EXIT_BROKEN_PIPE
    return code


def _main(argv: list[str] | None) -> int:
    if argv is not None:
        return run(["--no-cache", *argv] if argv else [])
    instruction = os.environ.get("_PROFILEKIT_COMPLETE")
    if instruction:  # a shell asking for completions: never answered from the cache (its words are in env)
        from profilekit.cli.completion import run_completion  # noqa: PLC0415 - each answer loads only what it needs

        return run_completion(instruction)
    args = sys.argv[1:]
    if args == ["--version"]:
        sys.stdout.write(f"profilekit {__version__}\n")
        return EXIT_OK
    if args in (["--help"], ["-h"]):
        from profilekit.cli.helptext import static_help  # noqa: PLC0415 - as completion: --help loads no command

        text = static_help()
        if text is not None:
            write_all(sys.stdout, text)
            return EXIT_OK
    from profilekit.cli.replay import cached_run  # noqa: PLC0415 - not for --version, --help or completion

    return cached_run(args, run)
