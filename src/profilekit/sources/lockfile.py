"""profilekit.lock: the commit and content hash each `[sources.NAME]` was locked at (read and written whole)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import tomli

from profilekit.output import replace_file
from profilekit.records import record
from profilekit.tomlio.guards import syntax_error_position
from profilekit.tomlio.positions import Path as KeyPath
from profilekit.tomlio.positions import Pos, locate_keys
from profilekit.tomlio.read import toml_type

LOCK_FILE = "profilekit.lock"
FORMAT = 1
HEADER = (
    "# profilekit.lock: the commit of every [sources.NAME] of profilekit.toml, and a digest of its files.\n"
    "# Written by `profilekit lock` and `profilekit update`; commit it, do not edit it by hand.\n"
)


@record(frozen=True, slots=True)
class Locked:
    git: str
    rev: str
    commit: str
    hash: str


WRITE_AGAIN = "run `profilekit lock` to write it again"
FIELDS = ("git", "rev", "commit", "hash")


@record(frozen=True, slots=True)
class Damage:
    """Why profilekit.lock, or its entry for one source, cannot be used: the reason, where in the lock, the fix."""

    why: str
    line: int = 1
    column: int = 1
    key: str = ""  # the key of the lock at that position (`sources.platform.commit`), if there is one
    fix: str = WRITE_AGAIN


class LockError(Exception):
    """profilekit.lock as a whole cannot be read; `damage` says why and where."""

    def __init__(self, damage: Damage) -> None:
        super().__init__(damage.why)
        self.damage = damage


@record(slots=True)
class Lock:
    """profilekit.lock as read: each entry, or why it cannot be used, and where each key of the lock is."""

    entries: dict[str, Locked | Damage]
    positions: dict[KeyPath, Pos]

    def usable(self) -> dict[str, Locked]:
        return {name: entry for name, entry in self.entries.items() if isinstance(entry, Locked)}

    def at(self, *path: str) -> tuple[int, int]:
        """The line and column of `path` in the lock, or of its nearest written ancestor (1, 1 if none)."""
        for depth in range(len(path), 0, -1):
            found = self.positions.get(path[:depth])
            if found is not None:
                return found.line, found.column
        return 1, 1


def read_lock(root: Path) -> Lock | None:
    """The lock, or None when there is no lock file; one that cannot be read as a whole raises LockError."""
    path = root / LOCK_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        fix = f"remove the folder {LOCK_FILE}, then run `profilekit lock` to write the file"
        raise LockError(Damage(f"{LOCK_FILE} is a folder, not a file", fix=fix)) from None
    except OSError as exc:
        raise LockError(Damage(f"{LOCK_FILE} cannot be read: {exc.strerror or exc}")) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LockError(Damage(f"{LOCK_FILE} is not valid UTF-8", raw[: exc.start].count(b"\n") + 1)) from None
    try:
        data = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        line, column, why = syntax_error_position(text, str(exc))
        raise LockError(Damage(f"{LOCK_FILE} is not valid TOML: {why}", line, column)) from None
    lock = Lock({}, locate_keys(text))
    if data.get("version") != FORMAT:
        said = f"it says version = {data['version']!r}" if "version" in data else "it has no `version`"
        why = f"{LOCK_FILE} is not a lock file of format {FORMAT} ({said}; profilekit writes version = {FORMAT})"
        raise LockError(Damage(why, *lock.at("version"), "version" if "version" in data else ""))
    sources = data.get("sources", {})
    if not isinstance(sources, dict):
        raise LockError(
            Damage(f"`sources` in {LOCK_FILE} is {toml_type(sources)}, not a table", *lock.at("sources"), "sources")
        )
    for name, entry in sources.items():
        lock.entries[name] = _entry(lock, name, entry)
    return lock


def _entry(lock: Lock, name: str, entry: object) -> Locked | Damage:
    """The entry of source `name`, or what is wrong with it, at its place in the lock."""
    table = f"sources.{name}"
    if not isinstance(entry, dict):
        return Damage(f"[{table}] of {LOCK_FILE} is {toml_type(entry)}, not a table", *lock.at("sources", name), table)
    for key in FIELDS:
        if key not in entry:
            return Damage(f"[{table}] of {LOCK_FILE} has no `{key}`", *lock.at("sources", name), table)
        if not isinstance(entry[key], str):
            why = f"`{key}` of [{table}] in {LOCK_FILE} is {toml_type(entry[key])}, not a string"
            return Damage(why, *lock.at("sources", name, key), f"{table}.{key}")
    return Locked(entry["git"], entry["rev"], entry["commit"], entry["hash"])


def lock_text(locked: dict[str, Locked]) -> str:
    lines = [HEADER, f"version = {FORMAT}\n"]
    for name in sorted(locked):
        entry = locked[name]
        lines.append(f"\n[sources.{name}]\n")
        for key in ("git", "rev", "commit", "hash"):
            lines.append(f"{key} = {json.dumps(getattr(entry, key), ensure_ascii=False)}\n")
    return "".join(lines)


def write_lock(root: Path, locked: dict[str, Locked]) -> None:
    replace_file(root / LOCK_FILE, lock_text(locked))


def tree_hash(folder: Path) -> str:
    """`sha256:` of every file below `folder`, path and content; anything but a regular file spoils it."""
    outer = hashlib.sha256()
    entries: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        for name in dirnames:
            if (here / name).is_symlink():
                entries.append(((here / name).relative_to(folder).as_posix(), "symlink"))
        for name in filenames:
            path = here / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink() or not path.is_file():
                entries.append((rel, "not a file"))
                continue
            entries.append((rel, hashlib.sha256(path.read_bytes()).hexdigest()))
    for rel, digest in sorted(entries):
        outer.update(f"{rel}\0{digest}\n".encode("utf-8", "surrogateescape"))
    return f"sha256:{outer.hexdigest()}"
