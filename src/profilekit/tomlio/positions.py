"""Where each key of a TOML document was written: a small scanner that maps key paths to line:column.

tomllib and tomlkit give values but no positions, and provenance needs them. The scanner only runs
on text that tomllib has already accepted, so it reads valid TOML and need not report errors; it
handles dotted keys, quoted keys, inline tables (also spread over lines), arrays (elements are
path components of type int), arrays of tables, multi-line strings and comments.
"""

from __future__ import annotations

import bisect
import re

from profilekit.records import record

Path = tuple[str | int, ...]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# The common line shapes, matched whole by one regular expression instead of character by character (lint
# scans every layer of a repository): blank space and comments; `[a.b]`; `a.b = <simple value>` up to the end
# of the line, where a simple value is a one-line basic or literal string, or a bare scalar without spaces. Any
# other shape (quoted keys, arrays, inline tables, multi-line strings, date-times with a space) goes through
# the general scanner below, from the same position.
_SPACE = re.compile(r"(?:[ \t\r\n]+|#[^\n]*)*")
_DOTTED = r"[A-Za-z0-9_-]+(?:[ \t]*\.[ \t]*[A-Za-z0-9_-]+)*"
_SIMPLE_HEADER = re.compile(rf"\[[ \t]*({_DOTTED})[ \t]*\][ \t]*(?:#[^\n]*)?(?=\r?\n|\Z)")
_SIMPLE_KEYVAL = re.compile(
    rf"({_DOTTED})[ \t]*=[ \t]*"
    r"(?:\"(?:[^\"\\\n]|\\.)*\"(?!\")|'[^'\n]*'(?!')|[^\s#,\[\]{}\"']+)"
    r"[ \t]*(?:#[^\n]*)?(?=\r?\n|\Z)"
)
# `a = ["x", "y"]` on one line, strings without escapes (`extends`, `provides`, `conflicts`, `unset`)
_SIMPLE_ARRAY = re.compile(
    rf"({_DOTTED})[ \t]*=[ \t]*(\[[ \t]*(?:\"[^\"\\\n]*\"[ \t]*(?:,[ \t]*\"[^\"\\\n]*\"[ \t]*)*,?[ \t]*)?\])"
    r"[ \t]*(?:#[^\n]*)?(?=\r?\n|\Z)"
)
_ELEMENT = re.compile(r'"[^"\\\n]*"')
_DOT = re.compile(r"[ \t]*\.[ \t]*")
_SCALAR_END = re.compile(r"[,\]}\s#]")
# keys nested deeper than this inside inline values are not recorded: a value nested hundreds of levels (tomli
# allows 400) would exhaust the stack of this recursive scanner; the loader refuses anything past 32 anyway
_LOCATED_DEPTH = 48
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\", "e": "\x1b"}


@record(frozen=True, slots=True)
class Pos:
    line: int
    column: int


class _Scanner:
    def __init__(self, text: str, *, fast: bool = True) -> None:
        self.fast = fast  # take the whole-line fast path where a line has a common shape
        self.s = text
        self.i = 0
        self.n = len(text)
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.positions: dict[Path, Pos] = {}
        # array-of-tables: concrete path of the array -> index of its last element
        self.aot_last: dict[Path, int] = {}

    # ---- low level -----------------------------------------------------------------------
    def pos(self, index: int) -> Pos:
        line = bisect.bisect_right(self.line_starts, index) - 1
        return Pos(line + 1, index - self.line_starts[line] + 1)

    def record(self, path: Path, index: int) -> None:
        self.positions.setdefault(path, self.pos(index))

    def skip_ws(self, *, newlines: bool) -> None:
        if newlines:
            self.i = _SPACE.match(self.s, self.i).end()  # type: ignore[union-attr]  # matches the empty string
            return
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in " \t" or (newlines and c in "\r\n"):
                self.i += 1
            elif c == "#" and newlines:
                while self.i < n and s[self.i] != "\n":
                    self.i += 1
            else:
                return

    def skip_line_rest(self) -> None:
        self.skip_ws(newlines=False)
        if self.i < self.n and self.s[self.i] == "#":
            while self.i < self.n and self.s[self.i] != "\n":
                self.i += 1

    # ---- keys and strings ----------------------------------------------------------------
    def read_basic_string(self) -> str:
        s = self.s
        self.i += 1  # opening quote
        out: list[str] = []
        while s[self.i] != '"':
            c = s[self.i]
            if c == "\\":
                nxt = s[self.i + 1]
                if nxt in "uU":
                    width = 4 if nxt == "u" else 8
                    out.append(chr(int(s[self.i + 2 : self.i + 2 + width], 16)))
                    self.i += 2 + width
                    continue
                if nxt == "x":
                    out.append(chr(int(s[self.i + 2 : self.i + 4], 16)))
                    self.i += 4
                    continue
                out.append(_ESCAPES.get(nxt, nxt))
                self.i += 2
                continue
            out.append(c)
            self.i += 1
        self.i += 1
        return "".join(out)

    def read_key_part(self) -> str:
        s = self.s
        c = s[self.i]
        if c == '"':
            return self.read_basic_string()
        if c == "'":
            end = s.index("'", self.i + 1)
            part = s[self.i + 1 : end]
            self.i = end + 1
            return part
        m = _BARE_KEY.match(s, self.i)
        if not m:  # pragma: no cover - tomllib accepted the text
            raise ValueError(f"unexpected character {c!r} at {self.pos(self.i)}")
        self.i = m.end()
        return m.group()

    def read_key(self) -> list[str]:
        parts = [self.read_key_part()]
        while True:
            self.skip_ws(newlines=False)
            if self.i < self.n and self.s[self.i] == ".":
                self.i += 1
                self.skip_ws(newlines=False)
                parts.append(self.read_key_part())
            else:
                return parts

    def skip_string(self) -> None:
        s = self.s
        q = s[self.i]
        if s.startswith(q * 3, self.i):
            self.i += 3
            while True:
                if q == '"' and s[self.i] == "\\":
                    self.i += 2
                    continue
                if s.startswith(q * 3, self.i):
                    self.i += 3
                    while self.i < self.n and s[self.i] == q:  # up to two quotes may close the string
                        self.i += 1
                    return
                self.i += 1
        if q == '"':
            self.read_basic_string()
        else:
            self.i = s.index("'", self.i + 1) + 1

    # ---- values --------------------------------------------------------------------------
    def read_value(self, path: Path) -> None:
        c = self.s[self.i]
        if c in "\"'":
            self.skip_string()
        elif c in "{[" and len(path) > _LOCATED_DEPTH:
            self.skip_nested()
        elif c == "{":
            self.read_inline_table(path)
        elif c == "[":
            self.read_array(path)
        else:
            m = _SCALAR_END.search(self.s, self.i)
            # a date-time may hold one space ("1979-05-27 07:32:00"); keep it whole
            end = m.start() if m else self.n
            if m and self.s[end] == " " and re.match(r"\d\d:", self.s[end + 1 : end + 4]):
                m2 = _SCALAR_END.search(self.s, end + 1)
                end = m2.start() if m2 else self.n
            self.i = end

    def skip_nested(self) -> None:
        """Step over an inline table or array without recording its keys (and without recursion)."""
        s, depth = self.s, 0
        while True:
            c = s[self.i]
            if c in "\"'":
                self.skip_string()
                continue
            if c == "#":
                self.i = s.index("\n", self.i)
                continue
            if c in "[{":
                depth += 1
            elif c in "]}":
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return
            self.i += 1

    def read_inline_table(self, path: Path) -> None:
        self.i += 1
        while True:
            self.skip_ws(newlines=True)
            if self.s[self.i] == "}":
                self.i += 1
                return
            if self.s[self.i] == ",":
                self.i += 1
                continue
            self.read_keyval(path)

    def read_array(self, path: Path) -> None:
        self.i += 1
        index = 0
        while True:
            self.skip_ws(newlines=True)
            c = self.s[self.i]
            if c == "]":
                self.i += 1
                return
            if c == ",":
                self.i += 1
                continue
            self.record((*path, index), self.i)
            self.read_value((*path, index))
            index += 1

    def record_keys(self, table: Path, parts: Path | list[str], start: int) -> None:
        """A key (or a header's path) and the implicit tables of its dotted parts below `table`, all at its start."""
        for depth in range(1, len(parts) + 1):
            self.record((*table, *parts[:depth]), start)

    def read_keyval(self, table: Path) -> None:
        start = self.i
        parts = self.read_key()
        self.record_keys(table, parts, start)
        full = (*table, *parts)
        self.skip_ws(newlines=False)
        self.i += 1  # '='
        self.skip_ws(newlines=False)
        self.read_value(full)

    # ---- headers -------------------------------------------------------------------------
    def concrete(self, parts: list[str]) -> Path:
        """Insert the current array-of-tables index after every prefix that is such an array."""
        out: list[str | int] = []
        for part in parts:
            out.append(part)
            last = self.aot_last.get(tuple(out))
            if last is not None:
                out.append(last)
        return tuple(out)

    def read_header(self) -> Path:
        start = self.i
        is_array = self.s.startswith("[[", self.i)
        self.i += 2 if is_array else 1
        self.skip_ws(newlines=False)
        parts = self.read_key()
        self.skip_ws(newlines=False)
        self.i += 2 if is_array else 1
        if is_array:
            parent = self.concrete(parts[:-1])
            array_path = (*parent, parts[-1])
            index = self.aot_last.get(array_path, -1) + 1
            self.aot_last[array_path] = index
            # forget deeper arrays of the previous element
            for key in [k for k in self.aot_last if len(k) > len(array_path) and k[: len(array_path)] == array_path]:
                del self.aot_last[key]
            self.record(array_path, start)
            path: Path = (*array_path, index)
        else:
            path = self.concrete(parts)
        self.record_keys((), path, start)
        return path

    def scan(self) -> dict[Path, Pos]:
        table: Path = ()
        while True:
            self.skip_ws(newlines=True)
            if self.i >= self.n:
                return self.positions
            if self.s[self.i] == "[":
                simple = _SIMPLE_HEADER.match(self.s, self.i) if self.fast else None
                if simple is not None:
                    table = self.simple_header(simple)
                    continue
                table = self.read_header()
            else:
                if self.fast and self.simple_keyval(table):
                    continue
                self.read_keyval(table)
            self.skip_line_rest()

    def simple_keyval(self, table: Path) -> bool:
        """`scan`'s fast path for a key/value line of a common shape; False (nothing read) for any other."""
        m = _SIMPLE_KEYVAL.match(self.s, self.i)
        array = m is None
        if array:
            m = _SIMPLE_ARRAY.match(self.s, self.i)
        if m is None:
            return False
        parts = _DOT.split(m.group(1))
        self.record_keys(table, parts, self.i)
        if array:
            full = (*table, *parts)
            for index, element in enumerate(_ELEMENT.finditer(self.s, m.start(2), m.end(2))):
                self.record((*full, index), element.start())
        self.i = m.end()
        return True

    def simple_header(self, m: re.Match[str]) -> Path:
        """A `[a.b]` header matched whole (`scan`'s fast path): as `read_header` records it."""
        path = self.concrete(_DOT.split(m.group(1)))
        self.record_keys((), path, m.start())
        self.i = m.end()
        return path


def locate_keys(text: str, *, fast: bool = True) -> dict[Path, Pos]:
    """Map every key path (and array element path) of a valid TOML document to where it starts.

    A dotted key or header also records its implicit parent tables at its own position, unless an
    earlier line already defined them. `fast=False` scans every line character by character (the tests
    prove both ways give the same map).
    """
    return _Scanner(text, fast=fast).scan()


def format_key(path: Path) -> str:
    """A key path as a TOML dotted key: segments quoted when they are not bare keys."""
    parts: list[str] = []
    for part in path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
            continue
        seg = part if _BARE_KEY.fullmatch(part) else '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'
        parts.append(seg if not parts else "." + seg)
    return "".join(parts)


def parse_key(text: str) -> tuple[str, ...]:
    """Split a dotted key as written on the command line or in `unset` (`a."b.c".d`)."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("empty key")
    scanner = _Scanner(stripped)
    try:
        parts = scanner.read_key()
        scanner.skip_ws(newlines=False)
    except (IndexError, ValueError) as exc:
        raise ValueError(f"{stripped!r} is not a dotted key") from exc
    if scanner.i != scanner.n:
        raise ValueError(f"{stripped!r} is not a dotted key: unexpected {stripped[scanner.i :]!r}")
    return tuple(parts)
