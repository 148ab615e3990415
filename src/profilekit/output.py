"""Atomic writes of rendered files, and removal of the files a previous render left behind.

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

from profilekit.cache import new_temp, record

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


def _previous_files(out_dir: Path) -> set[str]:
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
        return {str(item["path"]) for item in data.get("files", [])}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return set()


def write_temp(out_dir: Path, name: str, item: Rendered) -> Path:
    """`item` written in full beside its final name (a temporary name nobody reads); its mode already set."""
    fd, name_made = new_temp(str(out_dir), f".{name}.", ".tmp")
    tmp = Path(name_made)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(item.text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, item.mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


@contextmanager
def _locked(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on the output folder: two renders into one folder run one after the other."""
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
    """Write every file, then put them all in place, and remove the stale files of the last render.

    Every file is first written in full under a temporary name: a write that fails half-way (a full disk, a
    file size limit) leaves the folder with the previous render, whole. The renames that follow cannot fail
    for lack of space; the manifest is renamed last. The folder is locked meanwhile, so two renders into it
    leave one complete set. A `partial` render (one role) removes nothing and keeps the other files in the
    manifest. A symlink planted in the folder is replaced, never followed.
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
        fd, probe = new_temp(str(out_dir), ".profilekit-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        from profilekit.errors import UsageError  # noqa: PLC0415 - a repeat render writes without the error classes (dataclasses, enum)

        raise UsageError(
            f"cannot write to output folder {out_dir}: {exc.strerror or exc}",
            hint="choose another folder with --out",
        ) from None
    with _locked(out_dir):
        return _replace_all(out_dir, files, partial=partial)


def _replace_all(out_dir: Path, files: dict[str, Rendered], *, partial: bool) -> list[Path]:
    if partial:
        files = keep_other_files(out_dir, files)
    stale = set() if partial else _previous_files(out_dir) - set(files)
    order = sorted(files, key=lambda n: n == MANIFEST)
    temps: dict[str, Path] = {}
    try:
        for name in order:
            if (out_dir / name).is_dir() and not (out_dir / name).is_symlink():
                raise IsADirectoryError(errno.EISDIR, "a folder is in the way")
            temps[name] = write_temp(out_dir, name, files[name])
    except OSError as exc:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        from profilekit.errors import UsageError  # noqa: PLC0415 - a repeat render writes without the error classes (dataclasses, enum)

        raise UsageError(
            f"cannot write {out_dir / name}: {exc.strerror or exc}; the folder keeps the previous render",
            hint="free space (or raise the file size limit) and render again"
            if exc.errno in {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
            else f"remove what is in the way in {out_dir}, or choose another folder with --out",
        ) from None
    written: list[Path] = []
    for name in order:
        os.replace(temps[name], out_dir / name)
        written.append(out_dir / name)
    for name in sorted(stale):
        # only plain names inside the folder: a tampered manifest must not delete elsewhere
        if _plain_name(name):
            (out_dir / name).unlink(missing_ok=True)
    return written


def replace_file(path: Path, text: str) -> None:
    """Write one file (`schema --output`) in full under a temporary name, then put it in place at once."""
    from profilekit.errors import UsageError  # noqa: PLC0415 - a repeat render writes without the error classes (dataclasses, enum)

    try:
        tmp = write_temp(path.parent, path.name, Rendered(text))
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}", hint="choose another file") from None
    try:
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}; it was left as it was") from None
