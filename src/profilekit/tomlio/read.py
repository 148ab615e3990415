"""A TOML file read from disk: its text, the position of every key, its digest; a syntax error as a finding."""

from __future__ import annotations

import datetime
import hashlib
from pathlib import Path
from typing import Any

# tomli is the library the standard tomllib was taken from, with the same API and messages; its wheels are
# compiled (about 3x faster than tomllib), and lint parses every layer of a repository
import tomli

from profilekit.errors import Finding, Location, Severity
from profilekit.records import record
from profilekit.tomlio.guards import nesting_error_position, syntax_error_position
from profilekit.tomlio.positions import Path as KeyPath
from profilekit.tomlio.positions import Pos, locate_keys


@record(slots=True)
class TomlFile:
    """A TOML file as read: its text, where its keys are, and its digest."""

    file: str  # relative to the repository root, `/`-separated
    text: str
    positions: dict[KeyPath, Pos]
    sha256: str

    def pos(self, path: KeyPath) -> Pos:
        """The position of `path`, or of its nearest written ancestor."""
        for depth in range(len(path), 0, -1):
            found = self.positions.get(path[:depth])
            if found is not None:
                return found
        return Pos(1, 1)


def read_toml(root: Path, path: Path, prefix: str = "") -> tuple[TomlFile | None, dict[str, Any] | None, list[Finding]]:
    """Read and parse one TOML file; a syntax error becomes a `toml-syntax` finding.

    Its name in findings is its path below `root`, after `prefix` (`platform@3f2a9c1:` for a source's files).
    """
    rel = prefix + path.relative_to(root).as_posix()
    try:
        raw_bytes = path.read_bytes()
    except OSError as exc:
        return (
            None,
            None,
            [Finding("toml-syntax", Severity.ERROR, f"cannot read file: {exc.strerror}", [Location(rel, 1, 1)])],
        )
    digest = hashlib.sha256(raw_bytes).hexdigest()
    try:
        text = raw_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw_bytes[: exc.start].count(b"\n") + 1
        return (
            None,
            None,
            [
                Finding(
                    "toml-syntax",
                    Severity.ERROR,
                    "file is not valid UTF-8",
                    [Location(rel, line, 1)],
                    fix="save the file as UTF-8",
                )
            ],
        )
    try:
        data = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        line, col, msg = syntax_error_position(text, str(exc))
        return None, None, [_syntax_finding(rel, line, col, f"invalid TOML: {msg}")]
    except RecursionError as exc:  # tomli's own limits: inline values nested 400 deep, keys of 1,000 parts
        line, col = nesting_error_position(text, str(exc))
        return None, None, [_syntax_finding(rel, line, col, f"invalid TOML: {exc}")]
    source = TomlFile(rel, text, locate_keys(text), digest)
    return source, data, []


def _syntax_finding(file: str, line: int, col: int, message: str) -> Finding:
    return Finding(
        "toml-syntax", Severity.ERROR, message, [Location(file, line, col)], fix="fix the TOML syntax at that position"
    )


def with_article(noun: str) -> str:
    """`an array`, `a table`: the article a message puts before a type name."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def toml_type(value: Any) -> str:
    """What a TOML value is, as a message says it: `a boolean`, `an array`, `a date or time`."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return "a date or time"
    return type(value).__name__
