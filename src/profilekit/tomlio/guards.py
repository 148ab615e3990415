"""Limits on what a TOML file may hold, and where a broken one went wrong: the loader's defences against hostile input.

tomli accepts tables nested 400 levels deep and keys of 1,000 parts; every later step (validation, merge,
references, rendering) walks values, and a value nested that deep would exhaust the stack somewhere. A layer
nests at most MAX_DEPTH levels (vLLM's deepest JSON option needs a handful), checked here without recursion,
before anything else walks the data. A NUL character cannot be carried by a process argument or an
environment variable (bash drops it, so vLLM would run with another value than the one composed): refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from profilekit.errors import Finding, Location, Severity
from profilekit.tomlio.positions import Path as KeyPath
from profilekit.tomlio.positions import Pos, format_key

# key path components below the top-level table: `roles.R.serve.kv_transfer_config.kv_connector_extra_config.a`
# is 6; vLLM's JSON options need a few levels, a hostile file has hundreds
MAX_DEPTH = 32
# tomli's own nesting limit, for placing its RecursionError in the file
_TOMLI_NESTING = 400


def display_key(path: KeyPath) -> str:
    """A key path as a message shows it: a NUL or line break inside a key is escaped, never printed raw."""
    return format_key(path).replace("\x00", "\\u0000").replace("\n", "\\n").replace("\r", "\\r")


def _walk(data: dict[str, Any]) -> Iterator[tuple[KeyPath, Any]]:
    """Every (path, value) of a parsed document, depth-first, without recursion; a path is not entered past MAX_DEPTH."""
    pending: list[tuple[KeyPath, Any]] = [((), data)]
    while pending:
        path, value = pending.pop()
        if path:
            yield path, value
        if len(path) > MAX_DEPTH:
            continue
        if isinstance(value, dict):
            pending.extend(((*path, k), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            pending.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))))


def nesting_depth(value: Any) -> int:
    """How many tables and arrays deep `value` goes (a scalar: 0), counted without recursion."""
    deepest = 0
    pending: list[tuple[int, Any]] = [(0, value)]
    while pending:
        depth, item = pending.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            continue
        if isinstance(item, dict):
            pending.extend((depth + 1, v) for v in item.values())
        elif isinstance(item, list):
            pending.extend((depth + 1, v) for v in item)
    return deepest


def could_be_unsafe(text: str) -> bool:
    """Whether a document's text can hold what `content_findings` looks for (lint loads every layer: most need no walk).

    A NUL is written as an escape (`\\u0000`, `\\U00000000`, or TOML 1.1's `\\x00`, which tomli reads; a raw
    NUL is not valid TOML), and every level of a key path below the first
    is written with a `.`, `[` or `{`, so a path longer than MAX_DEPTH needs at least MAX_DEPTH of them.
    """
    escapes = ("\\u0000", "\\U00000000", "\\x00")
    return any(escape in text for escape in escapes) or sum(map(text.count, ".[{")) >= MAX_DEPTH


def content_findings(data: dict[str, Any], locate: Any, *, file: str, rule: str, layer: str = "") -> list[Finding]:
    """Nesting deeper than MAX_DEPTH, and NUL characters in keys or string values, as `rule` findings.

    `locate(path)` is the position of a key path in the file.
    """
    findings: list[Finding] = []
    for path, value in _walk(data):
        if len(path) > MAX_DEPTH:
            at = path[: MAX_DEPTH + 1]
            pos: Pos = locate(at)
            key = display_key(at[:3]) + "..."
            findings.append(
                Finding(
                    rule,
                    Severity.ERROR,
                    f"{key}: tables and arrays are nested more than {MAX_DEPTH} levels deep",
                    [Location(file, pos.line, pos.column, key, layer)],
                    fix="flatten the value: no vLLM option nests more than a few levels",
                )
            )
            break  # one report: the data below is not walked
        last = path[-1]
        has_nul = (isinstance(last, str) and "\x00" in last) or (isinstance(value, str) and "\x00" in value)
        if has_nul:
            pos = locate(path)
            key = display_key(path)
            findings.append(
                Finding(
                    rule,
                    Severity.ERROR,
                    f"{key}: holds a NUL character, which no process argument or environment variable can carry "
                    "(bash drops it, so the process would get another value)",
                    [Location(file, pos.line, pos.column, key, layer)],
                    fix="remove the NUL (a \\u0000 escape) from the key or value",
                )
            )
    return findings


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _string_end(text: str, i: int) -> int | None:
    """The index after the string that opens at `i`, or None when the file ends first."""
    quote = text[i]
    if text.startswith(quote * 3, i):
        j = i + 3
        while j < len(text):
            if quote == '"' and text[j] == "\\":
                j += 2
                continue
            if text.startswith(quote * 3, j):
                j += 3
                while j < len(text) and text[j] == quote:
                    j += 1
                return j
            j += 1
        return None
    j = i + 1
    while j < len(text) and text[j] != "\n":
        if quote == '"' and text[j] == "\\":
            j += 2
            continue
        if text[j] == quote:
            return j + 1
        j += 1
    return j if j < len(text) else None


_LINE_START_HEADER = re.compile(r"[ \t]*\[")


def open_construct(text: str, *, deeper_than: int | None = None) -> tuple[int, int, str] | None:
    """Where a construct that the file never closes began: a string, an array or an inline table.

    With `deeper_than`, instead the first bracket that nests deeper than that. A rough scanner (the file is
    not valid TOML): it knows strings, comments, and table headers at the start of a line.
    """
    brackets: list[int] = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and not brackets:
            m = _LINE_START_HEADER.match(text, i)
            line_start = False
            if m is not None:  # a table header: its brackets are not values
                close = text.find("\n", m.end())
                i = n if close < 0 else close
                continue
        if c == "\n":
            line_start = True
        elif c == "#":
            close = text.find("\n", i)
            i = n if close < 0 else close
            continue
        elif c in "\"'":
            end = _string_end(text, i)
            if end is None:
                if deeper_than is not None:
                    return None
                line, col = _position(text, i)
                return line, col, "the string"
            i = end
            continue
        elif c in "[{":
            brackets.append(i)
            if deeper_than is not None and len(brackets) > deeper_than:
                line, col = _position(text, i)
                return line, col, c
        elif c in "]}" and brackets:
            brackets.pop()
        i += 1
    if brackets and deeper_than is None:
        line, col = _position(text, brackets[0])
        return line, col, "the array" if text[brackets[0]] == "[" else "the inline table"
    return None


def syntax_error_position(text: str, message: str) -> tuple[int, int, str]:
    """Line, column and message for tomli's error text (`... (at line 3, column 5)`, `(at end of document)`)."""
    m = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if m is not None:
        return int(m.group(1)), int(m.group(2)), message[: m.start()].strip()
    if "(at end of document)" in message:
        bare = message.replace("(at end of document)", "").strip()
        opened = open_construct(text)
        if opened is not None:
            line, col, what = opened
            return line, col, f"{bare}: {what} opened here is not closed before the end of the file"
        line, col = _position(text, len(text))
        return line, col, f"{bare} at the end of the file"
    return 1, 1, message


def nesting_error_position(text: str, message: str) -> tuple[int, int]:
    """Where tomli's RecursionError (nesting over 400 levels, a key of over 1,000 parts) happened."""
    if "key" in message:
        for number, line in enumerate(text.split("\n"), start=1):
            if line.count(".") >= 999:
                return number, 1
        return 1, 1
    found = open_construct(text, deeper_than=_TOMLI_NESTING - 1)
    return (found[0], found[1]) if found else (1, 1)
