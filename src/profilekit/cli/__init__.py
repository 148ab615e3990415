"""The command line: options in, pipeline calls, text out, exit code out. The only package that prints.

`app` holds the typer app and what every command shares; one module per command family registers its commands
(in the order `--help` lists them).
"""

from __future__ import annotations

import importlib

from profilekit.cli.app import app
from profilekit.errors import EXIT_OK

__all__ = ["app", "main"]

# each module registers its commands with `app`, in the order `--help` lists them
COMMAND_MODULES = ("listing", "show", "explain", "checking", "render", "diff", "importing", "flags")
for _module in COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_module}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `profilekit` command and `python -m profilekit`."""
    try:
        app(args=argv, prog_name="profilekit", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return EXIT_OK
