"""`profilekit --help` is answered from help.txt without typer, and help.txt is what typer prints."""

from __future__ import annotations

import os
import subprocess
import sys

from profilekit.cli.helptext import HELP_FILE, typer_help

SHOW = "import sys; sys.argv = ['profilekit', *sys.argv[1:]]; from profilekit.cli import main; main(); "
PROBE = SHOW + "sys.stderr.write(' '.join(m for m in ('typer', 'pydantic', 'click') if m in sys.modules))"


def _help(*args: str, columns: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, check=True)


def test_help_txt_is_what_typer_prints() -> None:
    with open(HELP_FILE, encoding="utf-8") as file:
        kept = file.read()
    assert kept == typer_help(), "help.txt is stale: run `python -m profilekit.cli.helptext` and commit it"


def test_a_wide_terminal_gets_the_kept_text_without_importing_typer() -> None:
    for flag in ("--help", "-h"):
        done = _help(flag, columns=120)
        assert done.stdout == typer_help()
        assert done.stderr == ""  # neither typer, pydantic nor click was imported


def test_a_narrow_terminal_gets_typer_wrapping_its_lines() -> None:
    done = _help("--help", columns=60)
    assert done.stderr.split()[0] == "typer"  # typer formatted it
    assert max(len(line) for line in done.stdout.splitlines()) <= 58
    assert done.stdout != typer_help()
    assert done.stdout.startswith("Usage: profilekit [OPTIONS] COMMAND [ARGS]...\n")
