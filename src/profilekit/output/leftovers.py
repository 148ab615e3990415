"""The sibling folder a render is written into, and what an interrupted write leaves behind.

A render writes its files into `.OUT.profilekit-<12 hex>` beside the output folder OUT and swaps it into
OUT's place (profilekit.output). A write that is killed leaves that folder, or a `.NAME.<hex>.tmp` file beside a
file written whole (a layer `set` edits, the lock file); the next write into the same place removes them, under
the same lock, so no write in progress is touched. Only names of profilekit's own making are ever removed, and in
a left-over folder only what is profilekit's: the files its manifest lists, the files the output folder's manifest
lists, and copies of what the output folder still holds. Anything else in it (a folder of the user's that was
being carried over) goes back into the output folder.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from profilekit.cache import new_temp

MANIFEST = "manifest.json"
STAGE_MARK = ".profilekit-"
_HEX = frozenset("0123456789abcdef")
# tempfile.mkstemp's names (`set` used them before): 8 of these
_MKSTEMP = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
_PROBE = ".profilekit-probe."


def stage_prefix(out_dir: Path) -> str:
    return f".{out_dir.name}{STAGE_MARK}"


def new_stage_name(out_dir: Path) -> Path:
    return out_dir.parent / f"{stage_prefix(out_dir)}{os.urandom(6).hex()}"


def make_stage(out_dir: Path) -> Path:
    """A new empty folder beside `out_dir`, with its mode (it takes `out_dir`'s place)."""
    for _attempt in range(100):
        stage = new_stage_name(out_dir)
        try:
            os.mkdir(stage, 0o700)
        except FileExistsError:
            continue
        os.chmod(stage, stat.S_IMODE(os.stat(out_dir).st_mode))
        return stage
    raise FileExistsError(f"no unused folder name beside {out_dir}")


def is_stage(name: str, out_dir: Path) -> bool:
    prefix = stage_prefix(out_dir)
    token = name[len(prefix) :]
    return name.startswith(prefix) and len(token) == 12 and set(token) <= _HEX


def is_temp(name: str, target: str | None = None) -> bool:
    """A temporary name of profilekit's: `.NAME.<hex>.tmp` (of `target` only, if given), or the write probe."""
    if name.startswith(_PROBE):
        return target is None and set(name[len(_PROBE) :]) <= _HEX
    if not (name.startswith(".") and name.endswith(".tmp")):
        return False
    stem, _, token = name[1:-4].rpartition(".")
    if not stem or (target is not None and stem != target):
        return False
    return (len(token) == 12 and set(token) <= _HEX) or (len(token) == 8 and set(token) <= _MKSTEMP)


def listed(folder: Path) -> set[str]:
    """The file names `folder`'s manifest lists (none if it has no readable manifest)."""
    import json  # noqa: PLC0415 - json is loaded by every run already; kept local to this rare path

    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        return {str(item["path"]) for item in data.get("files", [])}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return set()


def write_new(path: Path, text: str, mode: int) -> None:
    """A new file written whole, with its mode, never through a symlink."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
    except OSError as exc:  # a write names no file (a full disk, a size limit): the message should
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def carry_over(out_dir: Path, stage: Path, *, skip: set[str]) -> None:
    """What else `out_dir` holds, into `stage` as it is: files as hard links (a copy where a link is refused),
    symlinks as symlinks; folders are moved at the swap (`move_folders`). A folder where an output goes is
    refused, as it would be in place."""
    for entry in os.scandir(out_dir):
        name = entry.name
        if name in skip:
            if entry.is_dir(follow_symlinks=False):
                raise IsADirectoryError(21, "a folder is in the way", str(out_dir / name))
            continue
        if is_temp(name):
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), stage / name)
        elif entry.is_file(follow_symlinks=False):
            try:
                os.link(entry.path, stage / name, follow_symlinks=False)
            except OSError:
                import shutil  # noqa: PLC0415 - only where a hard link is refused

                shutil.copy2(entry.path, stage / name, follow_symlinks=False)


def move_folders(source: Path, dest: Path) -> None:
    """Every entry of `source` that is neither a file nor a symlink (folders, fifos, sockets) into `dest`."""
    for entry in os.scandir(source):
        if not (entry.is_symlink() or entry.is_file(follow_symlinks=False)) and not os.path.lexists(dest / entry.name):
            os.rename(entry.path, dest / entry.name)


def _same(path: Path, other: Path) -> bool:
    """`path` is what `other` holds too: the same file (a hard link), an equal copy, or an equal symlink."""
    try:
        mine, theirs = os.lstat(path), os.lstat(other)
    except OSError:
        return False
    if (mine.st_ino, mine.st_dev) == (theirs.st_ino, theirs.st_dev):
        return True
    if stat.S_ISLNK(mine.st_mode) and stat.S_ISLNK(theirs.st_mode):
        return os.readlink(path) == os.readlink(other)
    if stat.S_ISREG(mine.st_mode) and stat.S_ISREG(theirs.st_mode) and mine.st_size == theirs.st_size:
        return path.read_bytes() == other.read_bytes()
    return False


def clear_stage(stage: Path, out_dir: Path) -> None:
    """Remove a sibling folder a render wrote (before its swap: the new files; after it: the previous render).
    profilekit's files go; anything else goes back into `out_dir` where its name is free, else the folder stays."""
    ours = listed(stage) | listed(out_dir) | {MANIFEST}
    kept = False
    # the manifest last: it is what says which files are profilekit's, should this be cut short too
    for entry in sorted(os.scandir(stage), key=lambda entry: entry.name == MANIFEST):
        path = stage / entry.name
        plain = entry.is_symlink() or entry.is_file(follow_symlinks=False)
        if plain and (entry.name in ours or is_temp(entry.name) or _same(path, out_dir / entry.name)):
            path.unlink()
        elif not os.path.lexists(out_dir / entry.name):
            out_dir.mkdir(exist_ok=True)
            os.rename(path, out_dir / entry.name)
        else:
            kept = True
    if not kept:
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(stage)


def clear_leftovers(out_dir: Path) -> None:
    """What interrupted writes into `out_dir` left: sibling folders, and temporary files inside it."""
    with os.scandir(out_dir.parent) as entries:
        stages = [
            entry.name for entry in entries if is_stage(entry.name, out_dir) and entry.is_dir(follow_symlinks=False)
        ]
    for name in sorted(stages):
        clear_stage(out_dir.parent / name, out_dir)
    if out_dir.is_dir() and not out_dir.is_symlink():
        remove_temps(out_dir)


def remove_temps(folder: Path, target: str | None = None) -> None:
    """profilekit's temporary files in `folder` (of the file `target` only, if given): an interrupted write's."""
    for entry in os.scandir(folder):
        if is_temp(entry.name, target) and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)


def write_temp(folder: Path, name: str, text: str, mode: int) -> Path:
    """`text` written in full beside `name` (a temporary name nobody reads); its mode already set."""
    fd, name_made = new_temp(str(folder), f".{name}.", ".tmp")
    tmp = Path(name_made)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp
