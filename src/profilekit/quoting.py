"""Quoting owned by profilekit: bash words and env-file values that bash and python-dotenv read alike."""

from __future__ import annotations

import re

_SAFE_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
# python-dotenv (interpolate=True, its default) expands this in quoted and unquoted values alike
_DOTENV_VARIABLE = re.compile(r"\$\{[^}]*\}")


def shell_quote(value: str) -> str:
    """One bash word that expands to exactly `value`, whatever characters it holds."""
    if _SAFE_WORD.fullmatch(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def env_file_value(value: str) -> str | None:
    """The right-hand side of `KEY=...` that `set -a; . file` and python-dotenv read as `value`.

    Single quotes: bash takes everything literally; python-dotenv only turns `\\\\` and `\\'`
    into one character, so the value must not hold a quote, a doubled backslash, or end in one.
    Double quotes: both undo `\\\\` and `\\"`, but bash expands `$` and backticks there while
    python-dotenv keeps them, so those characters must be absent.
    python-dotenv expands `${NAME}` in every kind of value and has no escape for it.
    None means no syntax works for both readers (e.g. a value with both `'` and `$`).
    """
    if "\x00" in value or "\r" in value or _DOTENV_VARIABLE.search(value):
        return None
    if "'" not in value and "\\\\" not in value and not value.endswith("\\"):
        return "'" + value + "'"
    if not any(c in value for c in "$`"):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return None


def comment_text(value: str) -> str:
    """`value` fit for one line of a `#` comment: every character that could end the line, or hide in it, escaped.

    A layer file may be named `evil\\ntouch PWNED\\n#.toml`; written raw into a script's header comment, its
    newline would start a command. Bash ends a comment at `\\n` only, python-dotenv at `\\r` too; the escape also
    covers the other control and separator characters so the header reads the same in every viewer.
    """
    if value.isprintable():
        return value
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in value)
