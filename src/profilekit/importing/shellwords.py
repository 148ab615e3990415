"""Split a bash launch script into simple commands of words, the way bash would, or say why it cannot.

`profilekit import` must read a script the way bash would. A quote-aware pass joins backslash
continuations, drops comments (a `#` that starts a word), splits commands at unquoted newlines and
expands what the script itself decides: `$VAR` / `${VAR}` assigned earlier in the script, and
`${VAR:-default}` (its default when the script does not assign it, with a note). What only the running
shell could decide (other expansions, `$(...)`, backticks, an unquoted leading `~`, globs, brace lists)
and control operators (pipes, subshells, input redirections) are problems, recorded on the
word or command they belong to and reported together, so a script with several is fixed in one pass;
the importer drops the problems of words it does not use (a docker option, say). What changes neither
vLLM's argv nor its environment is dropped with a note: a trailing `&`, output redirections (`2>&1`,
`> log`) and a final `| tee log`. `;`, `&&` and `||` end a command as a newline does (`||` with a note); `$'...'` decodes as bash's ANSI-C
quoting; a backslash that ends the text is dropped. Each command's text is then split into words by `shlex` in POSIX mode,
which unquotes '...' and "..." as bash does once no expansion is left.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import field

from profilekit.records import record

_ONE_COMMAND = "cannot be represented; import one command at a time"
_OPERATORS = {
    "|": f"a pipe {_ONE_COMMAND}",
    ";": f"`;` {_ONE_COMMAND}",
    "(": f"a subshell or function {_ONE_COMMAND}",
    ")": f"a subshell or function {_ONE_COMMAND}",
    "<": "bash reads a redirection here; write the value in place of a placeholder such as <model>",
}
_IGNORED = "is ignored: it changes neither vLLM's argv nor its environment"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_PARAMETER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(?:(:?[-=])([^}$`]*))?\}")
_ASSIGNMENT_START = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=$")  # bash expands ~ right after NAME=
_ASSIGNMENT_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PLACEHOLDER = re.compile(r"<[A-Za-z][A-Za-z0-9_.-]*>")
_REDIRECTION = re.compile(r"(\d*|&)(>>?|>\|)(&\d+|&-)?")


class ShellError(ValueError):
    """A script that cannot be read at all (a quote never closed); the message names the line."""


@record(frozen=True, slots=True)
class Problem:
    """What only a shell could evaluate: at a line, on one word of the command (None: the whole command)."""

    line: int
    word: int | None
    message: str


@record(slots=True)
class Command:
    line: int  # where the command starts, 1-based
    words: list[str]
    text: str  # the command as written (continuations joined), for messages
    word_lines: list[int] = field(default_factory=list)  # the line each word starts on
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    expanded: list[str] = field(default_factory=list)  # the script's variables this command expands

    def line_of(self, index: int) -> int:
        return self.word_lines[index] if 0 <= index < len(self.word_lines) else self.line


def _expansion(text: str, index: int) -> str:
    """The `$...` construct that starts at `index`, for the message: `$(...)`, `$((...))` and `${...}` to their
    matching close, past nested ones and quoted strings (bash's `parse_comsub`), a name, or `$` and one character."""
    rest = text[index:]
    if rest.startswith(("$(", "${")):
        end = _matching(text, index + 1)
        return text[index:end] if end > 0 else rest[:2] + "..."
    name = 1
    while name < len(rest) and (rest[name].isalnum() or rest[name] == "_"):
        name += 1
    return rest[: max(name, 2)]


_CLOSE = {"(": ")", "{": "}"}


def _matching(text: str, at: int) -> int:
    """Past the bracket that closes the `(` or `{` at `at`, skipping quoted strings and nested brackets; -1 if none."""
    depth = 0
    index = at
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char in "'\"":
            index = _past_quote(text, index)
            if index < 0:
                return -1
            continue
        if char == text[at]:
            depth += 1
        elif char == _CLOSE[text[at]]:
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return -1


def _past_quote(text: str, at: int) -> int:
    """Past the quote that closes the one at `at` (inside "...", `$(...)` and `${...}` nest); -1 if none."""
    quote = text[at]
    index = at + 1
    while index < len(text):
        char = text[index]
        if quote == '"' and char == "\\":
            index += 2
        elif quote == '"' and text.startswith(("$(", "${"), index):
            index = _matching(text, index + 1)
            if index < 0:
                return -1
        elif char == quote:
            return index + 1
        else:
            index += 1
    return -1


def _unquoted(text: str) -> str:
    """A `${X:-default}`'s default as bash reads it: quotes around the whole of it removed."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _double_quoted(value: str) -> str:
    """A value spliced inside "...": shlex must read it back unchanged."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


class _Scanner:
    """One pass over the script text; `commands` holds the result.

    The steps follow how bash's parse.y reads a script: `read_token` sorts what starts at the scan position
    (newline, blank, comment, operator or word), `read_word_part` reads a word as `read_token_word` does
    (backslash, quotes, `$`, backticks), and `quoted` reads a quoted string as `parse_matched_pair` does.
    """

    def __init__(self, text: str, variables: dict[str, str] | None = None) -> None:
        self.text = text
        self.n = len(text)
        self.index = 0
        self.line = 1
        self.commands: list[Command] = []
        # assigned by the script so far (VAR=x lines, export VAR=x), from what its environment is known to hold
        self.variables: dict[str, str] = dict(variables or {})
        self._reset(1)

    def _reset(self, start: int) -> None:
        self.segment: list[str] = []  # characters of the current command, quotes kept, continuations removed
        self.start_line = start
        self.word_lines: list[int] = []
        self.word_started = False
        self.word_text: list[str] = []  # unquoted characters of the current word so far (glob / brace checks)
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.expanded: list[str] = []

    # ---- words and commands ----

    def problem(self, what: str, why: str, *, whole: bool = False) -> None:
        word = None if whole else max(len(self.word_lines) - 1, 0)
        self.problems.append(Problem(self.line, word, f"line {self.line}: {what}: {why}"))

    def start_word(self) -> None:
        if not self.word_started:
            self.word_started = True
            self.word_lines.append(self.line)

    def end_word(self) -> None:
        unquoted = "".join(self.word_text)
        if self.word_started and "{" in unquoted and "," in unquoted and "}" in unquoted:
            self.problem(unquoted, "bash expands a brace list; quote the value")
        self.word_started = False
        self.word_text.clear()

    def end_command(self) -> None:
        if self.word_started:
            self.end_word()
        body = "".join(self.segment).strip()
        if body:
            try:
                words = shlex.split(body, posix=True)
            except ValueError as exc:  # cannot happen after the scan, but never a traceback
                raise ShellError(f"line {self.start_line}: {exc}") from None
            command = Command(
                self.start_line,
                words,
                " ".join(body.split()),
                self.word_lines,
                self.problems,
                self.notes,
                self.expanded,
            )
            self.commands.append(command)
            self._remember_assignments(command)
        self._reset(self.line)

    def _remember_assignments(self, command: Command) -> None:
        words = command.words[1:] if command.words[0] == "export" else command.words
        matches = [_ASSIGNMENT.match(word) for word in words]
        if words and all(matches) and not command.problems:
            for match in matches:
                assert match is not None
                self.variables[match.group(1)] = match.group(2)

    # ---- expansions ----

    def splice(self, value: str, *, quoted: bool) -> None:
        in_assignment = len(self.word_lines) == 1 and _ASSIGNMENT_PREFIX.match("".join(self.word_text))
        if in_assignment and not quoted:  # bash does not split the value of an assignment (`M=${1:-"a b"}`)
            self.start_word()
            self.word_text.append("x")
            self.segment.append(shlex.quote(value))
            return
        if quoted:
            self.segment.append(_double_quoted(value))
            return
        parts = value.split()  # bash splits an unquoted expansion into words
        for number, part in enumerate(parts):
            if number:
                self.end_word()
                self.segment.append(" ")
            self.start_word()
            self.word_text.append("x")
            self.segment.append(shlex.quote(part))

    def expansion(self, *, quoted: bool) -> None:
        """A `$` that starts an expansion: the script's own value, a default, or a problem."""
        text, at = self.text, self.index
        self.start_word()
        shown = _expansion(text, at)
        name = _NAME.match(text, at + 1)
        parameter = _PARAMETER.match(text, at)
        if parameter is not None:
            var, operator, default = parameter.groups()
            self.index = parameter.end()
            if var in self.variables and (operator not in {":-", ":="} or self.variables[var]):
                self.expanded.append(var)
                self.splice(self.variables[var], quoted=quoted)
            elif operator:
                default = _unquoted(default)
                unset = (
                    f"the script is run without argument {var}" if var.isdigit() else f"the script does not set {var}"
                )
                self.notes.append(f"line {self.line}: {shown}: {unset}; took the default {default!r}")
                if operator.endswith("="):
                    self.variables[var] = default
                self.splice(default, quoted=quoted)
            else:
                self._unknown(shown, var, quoted=quoted)
            return
        if name is not None and text[at + 1] != "{":
            self.index = name.end()
            if name.group(0) in self.variables:
                self.expanded.append(name.group(0))
                self.splice(self.variables[name.group(0)], quoted=quoted)
            else:
                self._unknown(shown, name.group(0), quoted=quoted)
            return
        self.index = at + len(shown)
        self.problem(shown, "shell expansions cannot be represented; write the value")
        self.segment.append(shlex.quote(shown) if not quoted else _double_quoted(shown))

    def _unknown(self, shown: str, var: str, *, quoted: bool) -> None:
        self.problem(
            shown, f"the script does not set {var}, so its value is only known when the script runs; write the value"
        )
        self.segment.append(shlex.quote(shown) if not quoted else _double_quoted(shown))

    # ---- operators ----

    def rest_of_line_is_empty(self, start: int) -> bool:
        end = self.text.find("\n", start)
        rest = self.text[start : end if end >= 0 else self.n].strip()
        return rest == "" or rest.startswith("#")

    def redirection(self) -> bool:
        """An output redirection at `index` (its leading fd already in the word): dropped with a note."""
        match = _REDIRECTION.match(self.text, self.index)
        prefix = "".join(self.word_text)
        if match is None or not (prefix.isdigit() or prefix == ""):
            return False
        end = match.end()
        shown = prefix + self.text[self.index : end]
        if not match.group(3):  # a file name follows: `> log`, `2>> err.log`
            while end < self.n and self.text[end] in " \t":
                end += 1
            start = end
            while end < self.n and self.text[end] not in " \t\n;&|":
                end += 1
            if start == end:
                return False
            shown = f"{shown} {self.text[start:end]}" if start > match.end() else shown + self.text[start:end]
        if prefix:  # the fd number was taken for the start of a word
            del self.segment[-len(prefix) :]
            self.word_started = False
            self.word_text.clear()
            self.word_lines.pop()
        self.notes.append(f"line {self.line}: `{shown}` {_IGNORED}")
        self.index = end
        return True

    def pipe(self) -> None:
        match = re.compile(r"\|[ \t]*tee([ \t]+-a)?[ \t]+([^\s&;|]+)[ \t]*(?=&?[ \t]*(\n|$|#))").match(
            self.text, self.index
        )
        if self.text[self.index : self.index + 2] == "||":
            self.notes.append(f"line {self.line}: `||`: what follows runs only when what precedes fails")
            self.sequence("||")
            return
        if match is None:
            self.problem("|", _OPERATORS["|"], whole=True)
            self.index += 1
            return
        self.notes.append(f"line {self.line}: `{' '.join(match.group(0).split())}` {_IGNORED}")
        self.index = match.end()

    def sequence(self, op: str) -> None:
        """`;`, `&&` and `||` end a command as a newline does (bash runs the next one after it; `&&` when it
        succeeds, `||` when it fails):
        each side is read as a command of its own, on the same line."""
        self.end_command()
        self.start_line = self.line
        self.index += len(op)

    def ampersand(self) -> None:
        if self.text[self.index : self.index + 2] == "&&":
            self.sequence("&&")
        elif self.text[self.index : self.index + 2] == "&>" and self.redirection():
            pass
        elif self.rest_of_line_is_empty(self.index + 1):
            self.notes.append(f"line {self.line}: `&` (run in the background) {_IGNORED}")
            self.index += 1
        else:
            self.problem("&", f"`&` in the middle of a line {_ONE_COMMAND}", whole=True)
            self.index += 1

    # ---- quotes ----

    def quoted(self, quote: str) -> None:
        """A '...' or "..." string, to its closing quote: bash's `parse_matched_pair` in parse.y.

        The quotes stay in the command's text for shlex to remove; a quote never closed stops the whole read.
        """
        opened = self.line
        self.start_word()
        self.segment.append(quote)
        self.index += 1
        read = self.single_quoted_char if quote == "'" else self.double_quoted_char
        while self.index < self.n:
            if read():
                return
        raise ShellError(f"line {opened}: a {quote} quote is never closed")

    def single_quoted_char(self) -> bool:
        """One character inside '...', where bash gives nothing a meaning; True at the closing quote."""
        char = self.text[self.index]
        self.segment.append(char)
        self.line += char == "\n"
        self.index += 1
        return char == "'"

    def double_quoted_char(self) -> bool:
        """One step inside "...", where `$`, backticks and a backslash keep their meaning; True at the closing quote."""
        char = self.text[self.index]
        if char == "\\" and self.index + 1 < self.n:
            self.double_quoted_backslash()
            return False
        if char == "$" and self.starts_expansion():
            self.expansion(quoted=True)
            return False
        if char == "`":
            self._backticks()
            return False
        self.line += char == "\n"
        self.segment.append(char)
        self.index += 1
        return char == '"'

    def double_quoted_backslash(self) -> None:
        """A backslash inside "...": bash removes it only before $, `, ", \\ and a newline (a continuation)."""
        nxt = self.text[self.index + 1]
        self.index += 2
        if nxt == "\n":  # a continuation inside double quotes disappears
            self.line += 1
            return
        # bash reads \$ and \` as the bare characters; shlex would keep the backslash (it removes the one before " and \)
        self.segment += [nxt] if nxt in "$`" else ["\\", nxt]

    def starts_expansion(self) -> bool:
        """Whether the `$` at `index` starts an expansion (a name, a `{`, a `(` or a special parameter)."""
        after = self.index + 1
        return after < self.n and (self.text[after].isalnum() or self.text[after] in "_{(@*#?!$-")

    # ---- the scan ----

    def run(self) -> list[Command]:
        """The script token by token (`read_token`), then the command the end of the text leaves open."""
        while self.index < self.n:
            self.read_token()
        self.end_command()
        return self.commands

    def read_token(self) -> None:
        """What starts at `index`, as bash's `read_token` in parse.y sorts it: a newline ends the command, a blank
        ends the word, a `#` at the start of a word is a comment, a metacharacter is an operator, and anything else
        is part of a word."""
        char = self.text[self.index]
        if char == "\n":
            self.newline()
        elif char in " \t":
            self.blank(char)
        elif char == "#" and not self.word_started:
            self.comment()
        elif char in "|&;()<>":
            self.operator(char)
        else:
            self.read_word_part(char)

    def newline(self) -> None:
        """An unquoted newline ends the simple command; the next one starts on the next line."""
        self.end_command()
        self.line += 1
        self.start_line = self.line
        self.index += 1

    def blank(self, char: str) -> None:
        """A space or tab ends the word; it stays in the command's text, for shlex to split at."""
        if self.word_started:
            self.end_word()
        self.segment.append(char)
        self.index += 1

    def comment(self) -> None:
        """To the end of the line; the newline itself still ends the command."""
        while self.index < self.n and self.text[self.index] != "\n":
            self.index += 1

    def operator(self, char: str) -> None:
        """A metacharacter: an output redirection, a trailing `&` or a final `| tee` is dropped with a note (it
        changes neither vLLM's argv nor its environment); a `<model>` placeholder is one problem on its word; any
        other operator is a problem on the whole command."""
        if char == ">" and self.redirection():
            return
        if char == "|":
            self.pipe()
            return
        if char == "&":
            self.ampersand()
            return
        if char == ";" and self.text[self.index : self.index + 2] != ";;":
            self.sequence(";")
            return
        placeholder = _PLACEHOLDER.match(self.text, self.index)
        if placeholder is not None:  # `vllm serve <model>`: a documentation placeholder, one problem
            self.start_word()
            self.problem(placeholder.group(0), _OPERATORS["<"])
            self.segment.append(shlex.quote(placeholder.group(0)))
            self.index = placeholder.end()
            return
        self.problem(char, _OPERATORS.get(char, _OPERATORS["<"]), whole=True)
        self.index += 1

    def read_word_part(self, char: str) -> None:
        """One part of a word, as bash's `read_token_word` in parse.y reads it: a backslash, a quoted string, a `$`
        expansion, a backtick substitution, or a plain character."""
        if char == "\\":
            self.backslash()
        elif char in "'\"":
            self.quoted(char)
        elif char == "$":
            self.dollar()
        elif char == "`":
            self._backticks()
        else:
            self.word_char(char)

    def backslash(self) -> None:
        """A backslash-newline is a continuation (bash's `shell_getc` removes it); any other backslash quotes the
        next character, which shlex unquotes."""
        if self.index + 1 < self.n and self.text[self.index + 1] == "\n":
            self.line += 1
            self.index += 2
            return
        if self.index + 1 == self.n:  # a backslash that ends the file: bash drops it (a continuation into nothing)
            self.index += 1
            return
        self.start_word()
        self.segment.append(self.text[self.index : self.index + 2])
        self.word_text.append("x")  # a quoted character is neither a brace nor an fd number
        self.index += 2

    def dollar(self) -> None:
        """An unquoted `$`: ANSI-C quoting `$'...'` (decoded as bash decodes it), an expansion, or a plain `$`."""
        if self.index + 1 < self.n and self.text[self.index + 1] == "'":
            self.ansi_c()
        elif self.starts_expansion():
            self.expansion(quoted=False)
        else:
            self.word_char("$")

    def ansi_c(self) -> None:
        """`$'...'`: the escapes bash's ANSI-C quoting decodes (`ansicstr`), the result one quoted piece."""
        start = self.index + 2
        index = start
        while index < self.n and self.text[index] != "'":
            index += 2 if self.text[index] == "\\" else 1
        if index >= self.n:
            raise ShellError(f"line {self.line}: $'...' is never closed")
        body = self.text[start:index]
        self.start_word()
        self.word_text.append("x")
        self.segment.append(shlex.quote(ansi_c_decode(body)))
        self.line += body.count("\n")
        self.index = index + 1

    def word_char(self, char: str) -> None:
        """A character of a word that stands for itself, unless bash expands it: a leading `~`, a glob character."""
        if char == "~" and (not self.word_started or _ASSIGNMENT_START.match("".join(self.word_text))):
            self.start_word()
            self.problem("~", "bash expands ~ to the home folder of whoever runs the script; write the path")
        elif char in "*?[" and not _is_literal_glob(self.text, self.index):
            self.start_word()
            self.problem(char, "bash expands a glob against the files present at launch; quote the value")
        self.start_word()
        self.word_text.append(char)
        self.segment.append(char)
        self.index += 1

    def _backticks(self) -> None:
        self.start_word()
        self.problem("`...`", "command substitution cannot be represented; write the value")
        end = self.text.find("`", self.index + 1)
        self.index = self.n if end < 0 else end + 1


def split_commands(text: str, variables: dict[str, str] | None = None) -> list[Command]:
    """The simple commands of a script, each with its words, problems and notes (raises ShellError); `variables`:
    what the script's environment is known to hold (a container's env, for its `sh -c` string)."""
    return _Scanner(text, variables).run()


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


_ANSI_C = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ANSI_C_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL)


def ansi_c_decode(body: str) -> str:
    """The text of `$'BODY'` as bash decodes it: \\n \\t ... , \\xHH, \\uHHHH, \\nnn octal, \\cX, \\\\ \\' \\" (an
    unknown escape keeps its backslash)."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code in _ANSI_C:
            return _ANSI_C[code]
        if code[0] in "xuU" and len(code) > 1:
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8) & 0xFF)
        if code[0] == "c" and len(code) == 2:
            return chr(ord(code[1].upper()) ^ 0x40) if code[1] != "?" else "\x7f"
        if code in ("\\", "'", '"', "?"):
            return code
        return "\\" + code

    return _ANSI_C_ESCAPE.sub(one, body)
