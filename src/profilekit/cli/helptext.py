"""`profilekit --help` without importing typer: the text typer prints on a terminal of 80 columns or more.

click wraps help at min(columns, 80) - 2, so on any terminal at least 80 wide the text is always the same; it is
kept beside this module as package data (`help.txt`, written by `python -m profilekit.cli.helptext`), and
`tests/test_help_text.py` fails when it is not what typer prints. A narrower terminal gets typer's own output.
"""

from __future__ import annotations

import os
import shutil
import sys

HELP_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "help.txt")
WIDE = 80  # click's max_width: from here on the text no longer depends on the terminal


def static_help() -> str | None:
    """The top-level help text, or None where typer must format it (a narrow terminal, no help.txt)."""
    if shutil.get_terminal_size().columns < WIDE:  # what click asks, COLUMNS first
        return None
    try:
        with open(HELP_FILE, encoding="utf-8") as file:
            return file.read()
    except OSError:
        return None


def typer_help() -> str:
    """What typer prints for `profilekit --help` at 80 columns."""
    import contextlib  # noqa: PLC0415 - only to write help.txt (python -m profilekit.cli.helptext) and in its test
    import io  # noqa: PLC0415 - only to write help.txt (python -m profilekit.cli.helptext) and in its test

    from profilekit.cli.run import run  # noqa: PLC0415 - only to write help.txt (python -m profilekit.cli.helptext) and in its test

    buffer = io.StringIO()
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDE)
    try:
        with contextlib.redirect_stdout(buffer):
            run(["--help"])
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return buffer.getvalue()


if __name__ == "__main__":
    with open(HELP_FILE, "w", encoding="utf-8") as out:
        out.write(typer_help())
    sys.stdout.write(f"wrote {HELP_FILE}\n")
