"""profilekit.lock: the commit and content hash each `[sources.NAME]` was locked at (read and written whole)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import tomli

from profilekit.output import replace_file
from profilekit.records import record

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


class LockError(Exception):
    """profilekit.lock cannot be read; the message says why."""


def read_lock(root: Path) -> dict[str, Locked] | None:
    """The locked sources, or None when there is no lock file; a damaged one raises LockError."""
    path = root / LOCK_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise LockError(f"cannot read {LOCK_FILE}: {exc}") from None
    try:
        data = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise LockError(f"{LOCK_FILE} is not valid TOML: {exc}") from None
    if data.get("version") != FORMAT:
        raise LockError(f"{LOCK_FILE} is not a lock file of format {FORMAT} (version = {FORMAT})")
    sources = data.get("sources", {})
    if not isinstance(sources, dict):
        raise LockError(f"{LOCK_FILE}: `sources` is not a table")
    found: dict[str, Locked] = {}
    for name, entry in sources.items():
        fields = ("git", "rev", "commit", "hash")
        if not isinstance(entry, dict) or any(not isinstance(entry.get(k), str) for k in fields):
            raise LockError(f"{LOCK_FILE}: [sources.{name}] needs the strings {', '.join(fields)}")
        found[name] = Locked(entry["git"], entry["rev"], entry["commit"], entry["hash"])
    return found


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
