"""Plain data as a TOML document, in the layout `tomlkit.dumps` gives, in time linear in its size.

`tomlkit.dumps` of a table with 20,000 keys takes over a minute (each key added to its container scans the
keys before it); `show` prints tables of any size. Values and keys are still written by tomlkit, one at a
time, so quoting and escapes are tomlkit's; only the walk over tables is done here.
"""

from __future__ import annotations

import re
from typing import Any

import tomlkit
from tomlkit.items import SingleKey

Table = dict[str, Any]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
# a string tomlkit writes as it is between double quotes: no quote, backslash or control character
_PLAIN = re.compile(r"[^\x00-\x1f\x7f\"\\]*")


def _is_aot(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _is_table(value: Any) -> bool:
    return isinstance(value, dict) or _is_aot(value)


def dumps(data: Table) -> str:
    """`data` as TOML: values first, then sub-tables; a table that holds only tables gets no header."""

    def key_text(key: str) -> str:
        return key if _BARE.fullmatch(key) else SingleKey(key).as_string()

    def value_text(value: Any) -> str:
        # the common cases written here, every other value by tomlkit (the tests compare both on random data)
        if isinstance(value, str) and _PLAIN.fullmatch(value):
            return f'"{value}"'
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        text: str = tomlkit.item(value).as_string()
        return text

    lines: list[str] = []
    # (header key text, kind, table, apart): kind "" for the root, "[" for a table, "[[" for an array element;
    # `apart`: tomlkit sets the element off with a blank line (it was added to a table that held something)
    pending: list[tuple[str, str, Table, bool]] = [("", "", data, False)]
    while pending:
        header, kind, table, apart = pending.pop()
        values = [(k, v) for k, v in table.items() if not _is_table(v)]
        tables = [(k, v) for k, v in table.items() if _is_table(v)]
        # a non-empty table of tables only is implicit (tomlkit's "super table"), as is the root
        shown = kind == "[[" or (kind == "[" and bool(values or not tables))
        if shown:
            if lines and apart:
                lines.append("")
            lines.append(f"[[{header}]]" if kind == "[[" else f"[{header}]")
        lines.extend(f"{key_text(k)} = {value_text(v)}" for k, v in values)
        first_key = next(iter(table), None)
        children: list[tuple[str, str, Table, bool]] = []
        for k, v in tables:
            path = f"{header}.{key_text(k)}" if header else key_text(k)
            table_apart, aot_apart = _set_apart(kind, shown, apart, first=k == first_key)
            if isinstance(v, dict):
                children.append((path, "[", v, table_apart))
            else:
                # an array-of-tables element keeps the order tomlkit gives it: its table values last
                children.extend(
                    (
                        path,
                        "[[",
                        dict(sorted(e.items(), key=lambda i: isinstance(i[1], dict))),
                        bool(v[i - 1]) if i else aot_apart,
                    )
                    for i, e in enumerate(v)
                )
        pending.extend(reversed(children))
    return "\n".join(lines) + "\n" if lines else ""


def _set_apart(kind: str, shown: bool, apart: bool, *, first: bool) -> tuple[bool, bool]:
    """Whether tomlkit puts a blank line before a child table, and before a child array's first element.

    Only the first key of a table can go without one; an implicit table hands its own place on to its first child.
    """
    if kind == "":  # the root
        return True, not first
    if shown:
        return not first or kind != "[[", not first
    return not first or apart, not first or apart
