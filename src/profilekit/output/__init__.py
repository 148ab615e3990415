"""Atomic writes of rendered files: a render's whole set of files replaces the previous set in one step.

A render writes every file into a new folder beside the output folder and swaps the two (output.swap); the
previous render, and whatever an interrupted render left, is removed (output.leftovers). A reader of the folder
finds the old render or the new one, whole, at every instant (README: "Writing the output folder").

A repeat render answered from the cache writes its files again through here (profilekit.cli.replay), so this
module imports only what writing needs: no dataclasses, tempfile or error classes until something goes wrong
(about 75 M instructions of a 190 M repeat render, issue 12).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from profilekit.cache import record
from profilekit.output import leftovers
from profilekit.output.leftovers import (
    carry_over,
    clear_leftovers,
    clear_stage,
    listed,
    make_stage,
    move_folders,
    new_stage_name,
    remove_temps,
    write_new,
)
from profilekit.output.swap import exchange

MANIFEST = "manifest.json"


class Rendered:
    """One output file: its text and its mode. Immutable, compared and hashed by both."""

    __slots__ = ("mode", "text")
    text: str
    mode: int

    def __init__(self, text: str, mode: int = 0o644) -> None:
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "mode", mode)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Rendered is immutable: cannot assign to {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rendered):
            return NotImplemented
        return (self.text, self.mode) == (other.text, other.mode)

    def __hash__(self) -> int:
        return hash((self.text, self.mode))

    def __repr__(self) -> str:
        return f"Rendered(text={self.text!r}, mode={self.mode!r})"


def write_temp(out_dir: Path, name: str, item: Rendered) -> Path:
    """`item` written in full beside its final name (a temporary name nobody reads); its mode already set."""
    return leftovers.write_temp(out_dir, name, item.text, item.mode)


@contextmanager
def _locked(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on the folder that holds what is written (the output folder's parent, since the output
    folder itself is swapped): two writes there run one after the other, and none removes another's files."""
    fd = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def _plain_name(name: str) -> bool:
    """A file name that stays inside the output folder and reads the same in every shell and listing."""
    return name not in {"", ".", ".."} and "/" not in name and not name.startswith(".") and name.isprintable()


def keep_other_files(out_dir: Path, files: dict[str, Rendered]) -> dict[str, Rendered]:
    """`files` of a partial render (`--role R`) with a manifest that still lists the files it leaves alone.

    The previous manifest's other entries are kept when it was written for the same stack; for another stack
    the manifest lists only this render's files (the others stay on disk, unlisted, so none is removed later).
    """
    try:
        previous = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
        same = previous["stack"] == json.loads(files[MANIFEST].text)["stack"]
        kept = [item for item in previous["files"] if same and str(item["path"]) not in files]
    except (OSError, ValueError, TypeError, KeyError):
        return files
    data = json.loads(files[MANIFEST].text)
    data["files"] = sorted([*data["files"], *kept], key=lambda item: str(item["path"]))
    return {**files, MANIFEST: Rendered(json.dumps(data, indent=2, ensure_ascii=False) + "\n")}


def write_outputs(out_dir: Path, files: dict[str, Rendered], *, partial: bool = False) -> list[Path]:
    """Put the render `files` in `out_dir` in one step, and remove the stale files of the last render.

    Every file is written in full into a sibling folder, with what else the folder holds carried over (hard
    links), and that folder then takes `out_dir`'s place at once: a write that fails half-way (a full disk, a
    file size limit) or a process that is killed leaves the folder with the previous render, whole. Writes into
    one place are locked, so two renders leave one complete set. A `partial` render (one role) removes nothing and
    keeps the other files in the manifest. A symlink planted in the folder is replaced, never followed.
    """
    record.note_write(str(out_dir), {name: (item.text, item.mode) for name, item in files.items()}, partial)
    with record.paused():  # the folder a render replaces is its output, not its input
        return _write_outputs(out_dir, files, partial=partial)


def _write_outputs(out_dir: Path, files: dict[str, Rendered], *, partial: bool) -> list[Path]:
    bad = [name for name in files if not _plain_name(name)]
    if bad:
        from profilekit.errors import UsageError  # noqa: PLC0415 - a repeat render writes without the error classes (dataclasses, enum)

        raise UsageError(
            f"refusing to write {bad[0]!r}: an output must be a plain file name inside {out_dir}",
            hint="role names are letters, digits, '_', '.' and '-', starting with a letter or digit",
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        _writable(out_dir)
    except OSError as exc:
        from profilekit.errors import UsageError  # noqa: PLC0415 - a repeat render writes without the error classes (dataclasses, enum)

        raise UsageError(
            f"cannot write to output folder {out_dir}: {exc.strerror or exc}",
            hint="choose another folder with --out",
        ) from None
    # a symlinked folder stays a symlink: the folder it names is the one replaced
    real = Path(os.path.realpath(out_dir)) if out_dir.is_symlink() else out_dir
    with _locked(real.parent):
        clear_leftovers(real)
        if partial:
            files = keep_other_files(real, files)
        stale = set() if partial else listed(real) - set(files)
        try:
            swapped = _swap_in(real, files, stale)
        except OSError as exc:
            raise _cannot_write(out_dir, exc) from None
        if not swapped:  # no sibling folder could be made here, or this folder cannot be renamed: file by file
            _replace_all(real, files, stale)
    return [out_dir / name for name in sorted(files, key=lambda n: n == MANIFEST)]


def _writable(folder: Path) -> None:
    """Raise what writing into `folder` would raise, without writing (a probe file would be a stray if killed)."""
    if os.statvfs(folder).f_flag & os.ST_RDONLY:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(folder))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))


def _cannot_write(out_dir: Path, exc: OSError) -> Exception:
    from profilekit.errors import UsageError  # noqa: PLC0415 - a repeat render writes without the error classes (dataclasses, enum)

    name = Path(str(exc.filename)).name if exc.filename else ""
    return UsageError(
        f"cannot write {out_dir / name}: {exc.strerror or exc}; the folder keeps the previous render",
        hint="free space (or raise the file size limit) and render again"
        if exc.errno in {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
        else f"remove what is in the way in {out_dir}, or choose another folder with --out",
    )


def _swap_in(out_dir: Path, files: dict[str, Rendered], stale: set[str]) -> bool:
    """The whole render written into a new sibling folder, then put in the folder's place in one step; False
    (nothing changed) where no sibling can be made or the folder cannot be renamed (a mount point)."""
    try:
        stage = make_stage(out_dir)
    except OSError:
        return False
    try:
        _fill(stage, out_dir, files, stale)
        if not _commit(stage, out_dir):
            clear_stage(stage, out_dir)
            return False
    except BaseException:
        clear_stage(stage, out_dir)  # before the swap: the new files go; after it: the old folder goes
        raise
    return True


def _fill(stage: Path, out_dir: Path, files: dict[str, Rendered], stale: set[str]) -> None:
    """The new render in `stage`: the manifest first (what in `stage` is profilekit's, should it be left behind),
    then every file, then what else `out_dir` holds, carried over as it is (hard links, symlinks, folders)."""
    os.replace(write_temp(stage, MANIFEST, files[MANIFEST]), stage / MANIFEST)
    for name, item in files.items():
        if name != MANIFEST:
            write_new(stage / name, item.text, item.mode)
    carry_over(out_dir, stage, skip=set(files) | stale)
    _sync_folder(stage)


def _commit(stage: Path, out_dir: Path) -> bool:
    """`stage` in `out_dir`'s place: swapped at once where the system can; elsewhere two renames, between
    which the name holds nothing (never a mix). Afterwards `stage` names the previous render, then removed."""
    move_folders(out_dir, stage)
    try:
        if not exchange(str(stage), str(out_dir)):
            previous = new_stage_name(out_dir)
            os.rename(out_dir, previous)
            os.rename(stage, out_dir)
            os.rename(previous, stage)
    except OSError as exc:
        if exc.errno not in {errno.EBUSY, errno.EXDEV, errno.EPERM, errno.EACCES}:
            raise
        return False  # a mount point, or a folder this user may fill but not rename
    _sync_folder(out_dir.parent)
    clear_stage(stage, out_dir)
    return True


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_all(out_dir: Path, files: dict[str, Rendered], stale: set[str]) -> None:
    """File by file in the folder itself (where no sibling folder can be made): each file is whole or old, the
    manifest is renamed last, but a reader may meet a mix while the renames run."""
    order = sorted(files, key=lambda n: n == MANIFEST)
    temps: dict[str, Path] = {}
    try:
        for name in order:
            if (out_dir / name).is_dir() and not (out_dir / name).is_symlink():
                raise IsADirectoryError(errno.EISDIR, "a folder is in the way", str(out_dir / name))
            temps[name] = write_temp(out_dir, name, files[name])
    except OSError as exc:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        raise _cannot_write(
            out_dir, exc if exc.filename else OSError(exc.errno, exc.strerror, str(out_dir / name))
        ) from None
    except BaseException:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        raise
    for name in order:
        os.replace(temps[name], out_dir / name)
    for name in sorted(stale):
        # only plain names inside the folder: a tampered manifest must not delete elsewhere
        if _plain_name(name):
            (out_dir / name).unlink(missing_ok=True)


def replace_file(path: Path, text: str, *, mode: int = 0o644) -> None:
    """Write one file (the lock file, `schema --output`, a layer `set` edits) whole under a temporary name beside
    it, then put it in place at once. Writes into one folder take turns (a lock on it), and each first removes the
    temporary files an interrupted write of the same file left."""
    from profilekit.errors import UsageError  # noqa: PLC0415 - a repeat render writes without the error classes (dataclasses, enum)

    try:
        with _locked(path.parent):
            remove_temps(path.parent, path.name)
            tmp = write_temp(path.parent, path.name, Rendered(text, mode))
            try:
                os.replace(tmp, path)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
    except OSError as exc:
        kept = "; it was left as it was" if os.path.lexists(path) else ""  # a missing folder has nothing to keep
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}{kept}", hint="choose another file") from None
