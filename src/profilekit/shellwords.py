"""Split a bash launch script into simple commands of words, refusing what only a shell could evaluate.

`profilekit import` must read a script the way bash would, or say why it cannot. A quote-aware pass
joins backslash continuations, drops comments (a `#` that starts a word), splits commands at unquoted
newlines, and refuses expansions (`$VAR`, `${...}`, `$(...)`, backticks, an unquoted leading `~`,
globs, brace lists) and control operators (pipes, `&&`, `;`, `&`, redirections, subshells): their
meaning depends on the moment the script runs. Each command's text is then split into words by
`shlex` in POSIX mode, which unquotes '...' and "..." as bash does once no expansion is left.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

_ONE_COMMAND = "cannot be represented; import one command at a time"
_OPERATORS = {
    "|": f"a pipe {_ONE_COMMAND}",
    "&": f"`&` (background or `&&`) {_ONE_COMMAND}",
    ";": f"`;` {_ONE_COMMAND}",
    "(": f"a subshell or function {_ONE_COMMAND}",
    ")": f"a subshell or function {_ONE_COMMAND}",
    "<": "bash reads a redirection here; write the value in place of a placeholder such as <model>",
    ">": "bash reads a redirection here; write the value in place of a placeholder such as <model>",
}


class ShellError(ValueError):
    """A construct that cannot be represented; the message names the line."""


@dataclass(frozen=True, slots=True)
class Command:
    line: int  # where the command starts, 1-based
    words: list[str]
    text: str  # the command as written (continuations joined), for messages


def _expansion(text: str, index: int) -> str:
    """The `$...` construct that starts at `index`, for the message."""
    rest = text[index:]
    if rest.startswith("$(("):
        end = rest.find("))")
        return rest[: end + 2] if end > 0 else "$((...))"
    if rest.startswith(("$(", "${")):
        close = ")" if rest[1] == "(" else "}"
        end = rest.find(close)
        return rest[: end + 1] if end > 0 else rest[:2] + "..."
    name = 1
    while name < len(rest) and (rest[name].isalnum() or rest[name] == "_"):
        name += 1
    return rest[: max(name, 2)]


def split_commands(text: str) -> list[Command]:
    """The simple commands of a script, each with its words (raises ShellError)."""
    commands: list[Command] = []
    segment: list[str] = []  # characters of the current command, quotes kept, continuations removed
    start_line = line = quote_line = 1
    quote: str | None = None
    word_started = False
    word_text: list[str] = []  # unquoted characters of the current word so far (glob / brace checks)
    index = 0
    n = len(text)

    def refuse(what: str, why: str) -> ShellError:
        return ShellError(f"line {line}: {what}: {why}")

    def end_word() -> None:
        nonlocal word_started
        unquoted = "".join(word_text)
        if "{" in unquoted and "," in unquoted and "}" in unquoted:
            raise refuse(unquoted, "bash expands a brace list; quote the value")
        word_started = False
        word_text.clear()

    def end_command() -> None:
        nonlocal segment
        body = "".join(segment).strip()
        if body:
            try:
                words = shlex.split(body, posix=True)
            except ValueError as exc:  # cannot happen after the scan, but never a traceback
                raise ShellError(f"line {start_line}: {exc}") from None
            commands.append(Command(start_line, words, " ".join(body.split())))
        segment = []

    while index < n:
        char = text[index]
        if quote == "'":
            segment.append(char)
            if char == "\n":
                line += 1
            if char == "'":
                quote = None
            index += 1
            continue
        if quote == '"':
            if char == "\\" and index + 1 < n:
                nxt = text[index + 1]
                if nxt == "\n":  # a continuation inside double quotes disappears
                    line += 1
                    index += 2
                    continue
                # bash reads \$ and \` as the bare characters; shlex would keep the backslash
                segment += [nxt] if nxt in "$`" else [char, nxt]
                index += 2
                continue
            if char == "$" and index + 1 < n and (text[index + 1].isalnum() or text[index + 1] in "_{(@*#?!$-"):
                raise refuse(_expansion(text, index), "shell expansions cannot be represented; write the value")
            if char == "`":
                raise refuse("`...`", "command substitution cannot be represented; write the value")
            if char == "\n":
                line += 1
            if char == '"':
                quote = None
            segment.append(char)
            index += 1
            continue
        # outside quotes
        if char == "\\":
            if index + 1 < n and text[index + 1] == "\n":
                line += 1
                index += 2
                continue
            segment.append(text[index : index + 2])
            word_started = True
            word_text.append("x")
            index += 2
            continue
        if char == "#" and not word_started:
            while index < n and text[index] != "\n":
                index += 1
            continue
        if char in " \t":
            if word_started:
                end_word()
            segment.append(char)
            index += 1
            continue
        if char == "\n":
            if word_started:
                end_word()
            end_command()
            line += 1
            start_line = line
            index += 1
            continue
        if char in "'\"":
            quote = char
            quote_line = line
            word_started = True
            segment.append(char)
            index += 1
            continue
        if char == "$" and index + 1 < n and text[index + 1] == "'":
            raise refuse("$'...'", "ANSI-C quoting cannot be represented; use plain quotes")
        if char == "$" and index + 1 < n and (text[index + 1].isalnum() or text[index + 1] in "_{(@*#?!$-"):
            raise refuse(_expansion(text, index), "shell expansions cannot be represented; write the value")
        if char == "`":
            raise refuse("`...`", "command substitution cannot be represented; write the value")
        if char in _OPERATORS:
            op = text[index : index + 2] if text[index : index + 2] in ("&&", "||", ">>", "<<") else char
            raise refuse(op, _OPERATORS[char])
        if char == "~" and not word_started:
            raise refuse("~", "bash expands ~ to the home folder of whoever runs the script; write the path")
        if char in "*?[" and not _is_literal_glob(text, index):
            raise refuse(char, "bash expands a glob against the files present at launch; quote the value")
        if segment_is_assignment_value(word_text) and char == "~":
            raise refuse("~", "bash expands ~ in an assignment; write the path")
        word_started = True
        word_text.append(char)
        segment.append(char)
        index += 1
    if quote:
        raise ShellError(f"line {quote_line}: a {quote} quote is never closed")
    if word_started:
        end_word()
    end_command()
    return commands


def _is_literal_glob(text: str, index: int) -> bool:
    """A lone `[` without a closing `]` in the same word is literal in bash."""
    if text[index] != "[":
        return False
    end = index
    while end < len(text) and text[end] not in " \t\n":
        if text[end] == "]":
            return False
        end += 1
    return True


def segment_is_assignment_value(word: list[str]) -> bool:
    """Whether the word so far is `NAME=` (bash expands `~` right after it)."""
    joined = "".join(word)
    return joined.endswith("=") and joined[:-1].replace("_", "a").isalnum()
