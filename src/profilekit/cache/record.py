"""What a run read: every file it opened, every folder it listed, every path it only looked at; and what it
rendered (`note_write`), so that a repeat run can write the same files again.

Files opened for reading and folders listed are seen through Python's audit hooks ("open", "os.scandir",
"os.listdir"), so a reader added anywhere (a team template, a model's config.json) is a dependency without
anyone remembering to say so. A path that is only tested (`is_file()`, `is_dir()`: a `stat`, which raises no
audit event) is named with `probe()` by the code that tests it. profilekit's own files and the interpreter's
are left out: `code_stamp()` covers them.

Nothing is recorded unless a recording is running, and the hook, once installed, costs one comparison.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see profilekit.cli)
if TYPE_CHECKING:
    from typing import Any

_READ_ONLY = os.O_RDONLY
_ACCESS = os.O_ACCMODE


class Recording:
    """The inputs of one run, as absolute paths."""

    def __init__(self, ignored: tuple[str, ...], watched: tuple[str, ...] = ()) -> None:
        self.files: dict[str, None] = {}
        self.folders: dict[str, None] = {}
        self.probes: dict[str, None] = {}
        self.ignored = ignored
        # folders inside an ignored one that are input all the same (the copies of sources in the cache)
        self.watched = watched
        self.paused = 0

    def _keep(self, path: Any) -> str | None:
        if isinstance(path, int) or self.paused:  # a file descriptor: its file was opened (and seen) before
            return None
        try:
            absolute = os.path.abspath(os.fsdecode(path))
        except (TypeError, ValueError):
            return None
        inside = absolute + os.sep
        if inside.startswith(self.ignored) and not (self.watched and inside.startswith(self.watched)):
            return None
        return absolute

    def opened(self, path: Any, mode: Any, flags: Any) -> None:
        if isinstance(mode, str):
            if not mode.startswith("r") or "+" in mode:
                return
        elif not isinstance(flags, int) or flags & _ACCESS != _READ_ONLY:
            return
        kept = self._keep(path)
        if kept is not None:
            self.files[kept] = None

    def listed(self, path: Any) -> None:
        kept = self._keep("." if path is None else path)
        if kept is not None:
            self.folders[kept] = None

    def probed(self, path: Any) -> None:
        kept = self._keep(path)
        if kept is not None:
            self.probes[kept] = None


_IMPORTLIB = f"{os.sep}importlib{os.sep}"
_EVENTS = frozenset({"open", "os.scandir", "os.listdir"})


class _State:
    recordings: tuple[Recording, ...] = ()  # a lint records its checks' reads while the whole run is recorded
    hooked = False


_STATE = _State()


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _STATE.recordings or event not in _EVENTS:
        return
    caller = sys._getframe(1).f_code.co_filename
    if caller.startswith("<frozen importlib") or _IMPORTLIB in caller:
        return  # the import system looking for modules or metadata on `sys.path` (which may hold the working folder)
    for recording in _STATE.recordings:
        if event == "open":
            recording.opened(*args[:3])
        else:
            recording.listed(args[0] if args else None)


def start(ignored: tuple[str, ...], watched: tuple[str, ...] = ()) -> Recording:
    """Record what this process reads from now on (until `stop`), except below `ignored` unless below `watched`."""
    if not _STATE.hooked:
        sys.addaudithook(_hook)  # for the life of the process: a hook cannot be removed
        _STATE.hooked = True
    recording = Recording(ignored, watched)
    _STATE.recordings = (*_STATE.recordings, recording)
    return recording


def stop(recording: Recording) -> None:
    _STATE.recordings = tuple(r for r in _STATE.recordings if r is not recording)


def read_again(path: str) -> None:
    """Say that the run read file `path` again without opening it (profilekit.cache.file_digest remembered it)."""
    for recording in _STATE.recordings:
        recording.opened(path, "r", 0)


def probe(path: Any) -> None:
    """Say that the run looked at `path` (whether it exists, is a file or a folder) without reading it."""
    for recording in _STATE.recordings:
        recording.probed(path)


def listed(path: Any) -> None:
    """Say that the run depends on the names in folder `path` (it looked files up there by name)."""
    for recording in _STATE.recordings:
        recording.listed(path)


class paused:
    """What is read inside is no input of the run (the output folder a render replaces, say)."""

    def __enter__(self) -> None:
        for recording in _STATE.recordings:
            recording.paused += 1

    def __exit__(self, *_exc: object) -> None:
        for recording in _STATE.recordings:
            recording.paused -= 1


def kind(path: str) -> str:
    """What is at `path` now: file, folder, other or nothing."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return "absent"
    return kind_of(mode)


def kind_of(mode: int) -> str:
    """What a stat's `st_mode` says is there: file, folder or other."""
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "other"


def listing(path: str) -> list[str] | None:
    try:
        return sorted(os.listdir(path))
    except (OSError, ValueError):
        return None


class _Writes:
    """The renders of the run being recorded, as `output.write_outputs` was asked for them."""

    made: list[Any] | None = None


WRITES = _Writes()


def note_write(folder: str, files: dict[str, tuple[str, int]], partial: bool) -> None:
    """Called by `output.write_outputs`: a render wrote `files` into `folder`."""
    if WRITES.made is not None:
        WRITES.made.append([folder, files, partial])
