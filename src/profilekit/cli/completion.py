"""Shell completion: the click protocol (`_PROFILEKIT_COMPLETE=bash_source|zsh_source|fish_source`, then
`*_complete` with `COMP_WORDS`/`COMP_CWORD`), answered with the candidates of `cli.candidates`.

`cli.main` sends a completion request here before the cache is consulted. A completion that fails offers
nothing; it never prints a traceback.
"""

from __future__ import annotations

import sys

COMPLETE_VAR = "_PROFILEKIT_COMPLETE"
SHELLS = ("bash", "zsh", "fish")


def run_completion(instruction: str) -> int:
    """Answer one completion request (`bash_complete`, `zsh_source`, ...); exit code 0, or 2 for a bad one."""
    shell, _, action = instruction.partition("_")
    if shell not in SHELLS or action not in ("source", "complete"):
        sys.stderr.write(
            f"profilekit: error: unknown completion instruction {COMPLETE_VAR}={instruction!r}\n"
            "  hint: use bash_source, zsh_source or fish_source (see README, Shell completion)\n"
        )
        return 2
    try:
        import typer.main  # noqa: PLC0415 - only a shell's completion request loads these

        from profilekit.cli.run import typer_app  # noqa: PLC0415 - only a shell's completion request loads these
        from profilekit.cli.shells import SHELL_CLASSES  # noqa: PLC0415 - only a shell's completion request loads these

        # typer vendors click without its bash/zsh/fish classes, and its own read `complete_bash` the other way
        # round with other variables: profilekit speaks click's documented protocol (cli/shells.py)
        complete = SHELL_CLASSES[shell](typer.main.get_command(typer_app()), {}, "profilekit", COMPLETE_VAR)
        text = complete.source() if action == "source" else complete.complete()
        sys.stdout.write(text if action == "source" or not text else text + "\n")
        return 0
    except Exception:  # a completion offers nothing rather than a traceback in the middle of the command line
        return 1
