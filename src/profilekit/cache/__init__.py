"""profilekit's cache of derived data, the way ruff and mypy keep one: never trusted blindly, never needed.

Entries live in the user cache folder (`PROFILEKIT_CACHE_DIR`, else platformdirs' `user_cache_dir`), one
file each, written whole under a temporary name and renamed into place, so concurrent runs never see half an
entry. Each file starts with the SHA-256 of the rest and names its own key and format: a damaged, truncated
or foreign entry is ignored (and removed), and the run derives everything again; so is one that another user
owns or could have written (a replayed render writes files: its entry must be the user's own). Below the cache
folder nothing is reached through a symlink, for reading or writing: an entry that is one is a miss, and a
folder that is one is replaced by a real folder when an entry is written. `--no-cache` turns it off.

What is cached is derived from the inputs it names (file contents, folder listings, profilekit's own code),
all checked again before an entry is used. Secrets never reach it: it holds what profilekit printed or
rendered, which is redacted, and digests of files, never their values.

This package imports nothing heavy: a warm run is answered from here before typer, pydantic or jinja2 load.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sys
import time
from stat import S_ISLNK, S_ISREG  # loaded by os already

from profilekit import __version__
from profilekit.cache import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see profilekit.cli)
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
ENV_DIR = "PROFILEKIT_CACHE_DIR"
# below the cache folder: the copies of sources' commits (profilekit.sources), which are input, not derived data
SOURCE_COPIES = os.path.join("sources", "trees")
# an input changed this close to (or after) the start of a run may have been read before or after the change:
# what the run derived from it is not stored (git's "racily clean" rule)
RACY_NS = 50_000_000


def cache_dir() -> str:
    """The cache folder: `PROFILEKIT_CACHE_DIR`, else the platform's user cache folder for profilekit.

    On Linux that is the XDG base directory rule, written out here because importing platformdirs would cost a
    warm run a third of its time (tests/test_cache.py checks both give the same folder); elsewhere platformdirs
    decides. Paths here are strings: pathlib (with re and urllib under it) would cost a warm run a tenth.
    """
    given = os.environ.get(ENV_DIR)
    if given:
        return os.path.abspath(given)
    if sys.platform == "linux":
        base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
        return os.path.join(base, "profilekit")
    import platformdirs  # noqa: PLC0415 - off Linux only: a warm run loads no library

    return platformdirs.user_cache_dir("profilekit", appauthor=False)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# what this process has digested: path -> (the file's stat then, its SHA-256)
_DIGESTS: dict[str, tuple[tuple[int, ...], str]] = {}


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def file_digest(path: str, st: os.stat_result | None = None) -> str | None:
    """The SHA-256 of a file's bytes; None when it cannot be read.

    A run asks for the same file's digest up to three times (is the stored run still good? which lint units
    are? what did this run read?): a file this process digested already and that has not changed since is not
    read again, which halves what a lint of a large repository does after one edit (issue 12). "Not changed" is
    the same device, inode, size, modification and change time; the change time moves with every write and
    every `touch -r`, and a file changed within the last RACY_NS (timestamps are coarser than a fast second
    write) is never remembered. A remembered digest is reported to the run's recordings as a read, as opening
    the file would have been (profilekit.cache.record). `st`: the file's stat, when the caller has just taken it.
    """
    try:
        known = _DIGESTS.get(path)
        if known is not None and known[0] == _stamp(os.stat(path) if st is None else st):
            record.read_again(path)
            return known[1]
        with open(path, "rb") as handle:
            before = os.fstat(handle.fileno())
            sha = digest(handle.read())
            stamp = _stamp(os.fstat(handle.fileno()))
    except OSError:
        return None
    settled = max(before.st_mtime_ns, before.st_ctime_ns) < time.time_ns() - RACY_NS
    if settled and stamp == _stamp(before):
        _DIGESTS[path] = (stamp, sha)
    return sha


def code_stamp() -> str:
    """A digest of profilekit's own files (code, templates, flag catalogues) and of the installed libraries.

    An editable install changes under the cache's feet; a library upgrade may change what profilekit derives.
    Sizes and modification times say so for the cost of a `stat` a file.
    """
    package = os.path.dirname(os.path.abspath(__file__ + "/.."))
    parts: list[str] = [__version__, sys.version]
    roots = [package, os.path.join(os.path.dirname(os.path.dirname(package)), "templates")]
    for root in roots:
        _stat_tree(root, parts)
    here = os.getcwd()
    for entry in sys.path:  # a package installed or removed changes its site folder's listing, and so its mtime
        if entry and os.path.isdir(entry) and os.path.abspath(entry) != here:
            parts.append(f"{entry}:{os.stat(entry).st_mtime_ns}")
    return digest("\n".join(parts).encode("utf-8", "surrogateescape"))


def _stat_tree(root: str, parts: list[str]) -> None:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name == "__pycache__" or entry.name.startswith("."):
            continue
        if entry.is_dir(follow_symlinks=False):
            _stat_tree(entry.path, parts)
        elif entry.name.endswith((".py", ".j2", ".json", ".toml", ".txt")):
            st = entry.stat()
            parts.append(f"{entry.path}:{st.st_size}:{st.st_mtime_ns}")


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# non-blocking: a FIFO planted as an entry would hold the run at open(); it is no regular file, so not read
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _entry_folder(kind: str, key: str, *, create: bool) -> int:
    """An open descriptor of the folder `kind/KEY[:2]` of the cache folder; raises OSError.

    Each folder below the cache folder is opened relative to the one above it and never through a symlink: an
    entry says what to print and what to write where, so one planted elsewhere must not be replayed, and a run
    must not write entries elsewhere through a planted link. The cache folder itself is reached as the user
    names it (a home or `PROFILEKIT_CACHE_DIR` that is a symlink is theirs to choose). With `create`, a missing
    folder is made, and a symlink where a folder belongs is removed (the link, not what it points to) and
    replaced by a folder.
    """
    root = cache_dir()
    if create:
        os.makedirs(root, mode=0o700, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in (kind, key[:2]):
            inner = _open_folder(fd, name, create=create)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_folder(parent: int, name: str, *, create: bool) -> int:
    if create:
        _make_folder(parent, name)
    try:
        return os.open(name, _FOLDER_FLAGS, dir_fd=parent)
    except NotADirectoryError:  # what O_DIRECTORY | O_NOFOLLOW says of a symlink, or of a file
        if not create or not S_ISLNK(os.lstat(name, dir_fd=parent).st_mode):
            raise
    os.unlink(name, dir_fd=parent)
    _make_folder(parent, name)
    return os.open(name, _FOLDER_FLAGS, dir_fd=parent)


def _make_folder(parent: int, name: str) -> None:
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:  # made already, or just now by another run
        return


def read_entry(kind: str, key: str) -> dict[str, Any] | None:
    """The entry stored under `key`; None when there is none, or it is damaged or not ours (then removed)."""
    try:
        folder = _entry_folder(kind, key, create=False)
    except OSError:
        return None
    try:
        raw = _read_own(folder, key)
        data = None if raw is None else _parsed(raw, key)
        if raw is not None and data is None:
            _discard(key, folder)
        return data
    finally:
        os.close(folder)


def _read_own(folder: int, name: str) -> bytes | None:
    """The bytes of the regular file `name` in `folder` when this user owns it and nobody else could write it."""
    try:
        with open(os.open(name, _READ_FLAGS, dir_fd=folder), "rb") as handle:  # a symlink is refused (ELOOP)
            st = os.fstat(handle.fileno())
            if not S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None  # written by someone else, or writable by others: an entry may say what to write where
            return handle.read()
    except OSError:
        return None


def _parsed(raw: bytes, key: str) -> dict[str, Any] | None:
    """The entry in `raw` when its checksum holds and it names `key` and this format; else None."""
    head, _, body = raw.partition(b"\n")
    try:
        if head.decode("ascii") != digest(body):
            raise ValueError("checksum")
        data = json.loads(body)
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
            raise ValueError("foreign")
    except ValueError:  # UnicodeDecodeError and json's errors are ValueErrors
        return None
    return data


def write_entry(kind: str, key: str, data: dict[str, Any]) -> None:
    """Store `data` under `key`, whole or not at all; a cache that cannot be written is no error."""
    body = json.dumps({**data, "format": FORMAT, "key": key}, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogateescape"
    )
    try:
        folder = _entry_folder(kind, key, create=True)
    except OSError:
        return
    try:
        fd, tmp = _new_temp(".entry.", "", dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(digest(body).encode("ascii") + b"\n" + body)
            os.replace(tmp, key, src_dir_fd=folder, dst_dir_fd=folder)  # replaces a symlink there, never follows it
        except BaseException:
            _discard(tmp, folder)
            raise
    except OSError:
        return
    finally:
        os.close(folder)


def new_temp(folder: str, prefix: str, suffix: str = "") -> tuple[int, str]:
    """A new file of mode 0600 in `folder` under a name nobody else uses, open for writing, as tempfile.mkstemp
    makes one (created exclusively, never through a symlink) without importing tempfile, which brings shutil,
    bz2, lzma and random into every first run."""
    return _new_temp(prefix, suffix, folder=folder)


def _new_temp(prefix: str, suffix: str, *, folder: str = "", dir_fd: int | None = None) -> tuple[int, str]:
    """new_temp in `folder`, or in the folder open as `dir_fd` (then the name returned is relative to it)."""
    for _attempt in range(100):
        name = f"{prefix}{os.urandom(6).hex()}{suffix}"
        path = os.path.join(folder, name) if folder else name
        try:
            return os.open(path, _TEMP_FLAGS, 0o600, dir_fd=dir_fd), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", folder or str(dir_fd))


def _discard(name: str, folder: int) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except OSError:
        return


__all__ = ["ENV_DIR", "FORMAT", "RACY_NS", "cache_dir", "code_stamp", "digest", "file_digest", "new_temp", "read_entry"]
