"""A repeat run answered from the cache: what the same command printed and rendered, while its inputs hold.

The key is everything a run's result depends on besides files: the command line, the working folder, `HOME`
(`~` in a model path), whether stdout and stderr are terminals, and profilekit's code (`code_stamp`). The
entry lists the run's inputs (`record`): each file with its size and SHA-256, each folder with its listing,
each probed path with what was there. Files are compared by their bytes, never by their times: the same bytes
rewritten (a `git checkout`) still count as unchanged, and other bytes with the old size and time do not. Any
difference, and the run is made again, in full, and stored anew.

Stored are runs that ended with exit 0 or 1 (findings are a result like any other); usage errors and internal
errors are not, nor a run whose inputs changed while it ran. A render's files are not replayed as bytes on
disk but written again through `output.write_outputs`, with its atomic swap, lock and symlink rules; if that
fails, the run is made again in full, to report it the usual way.
"""

from __future__ import annotations

import os
import sys
import time

from profilekit import cache
from profilekit.cache import record
from profilekit.cli.ending import EXIT_BROKEN_PIPE, silence_stdout, write_all

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see profilekit.cli.run)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TextIO

KIND = "runs"
# commands whose result is a function of the files they read: `import` writes layers, help depends on the terminal
CACHED_COMMANDS = frozenset({"check", "diff", "explain", "flags", "lint", "list", "render", "show"})
VALUED_GLOBALS = frozenset({"--repo", "--vllm-version"})
MAX_OUTPUT = 16 * 1024 * 1024


def command_of(args: list[str]) -> str | None:
    """The command word of `args` (global options may come first), or None when a run must not be cached."""
    index = 0
    command = None
    while index < len(args):
        arg = args[index]
        if arg == "--":
            break
        if arg in ("--no-cache", "-h", "--help", "--version"):
            return None
        if command is None and not arg.startswith("-"):
            command = arg
        elif arg in VALUED_GLOBALS:
            index += 1
        index += 1
    return command if command in CACHED_COMMANDS else None


def run_key(args: list[str]) -> str:
    parts = {
        "args": args,
        "cwd": os.getcwd(),
        "home": os.environ.get("HOME", ""),
        "tty": [_isatty(sys.stdout), _isatty(sys.stderr)],
        "code": cache.code_stamp(),
    }
    import json  # noqa: PLC0415 - only a run that is made, not one answered from the cache

    return cache.digest(json.dumps(parts, ensure_ascii=False).encode("utf-8", "surrogateescape"))


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


def cached_run(args: list[str], run: Callable[[list[str]], int]) -> int:
    """`run(args)`, or its stored result when every input it read is as it was."""
    if command_of(args) is None:
        return run(args)
    key = run_key(args)
    entry = cache.read_entry(KIND, key)
    if entry is not None and _inputs_hold(entry):
        code = _replay(entry)
        if code is not None:
            return code
    return _record(key, args, run)


# ---- checking an entry's inputs


def _inputs_hold(entry: dict[str, Any]) -> bool:
    try:
        return (
            all(_file_holds(*item) for item in entry["files"])
            and all(record.listing(path) == names for path, names in entry["folders"])
            and all(record.kind(path) == kind for path, kind in entry["probes"])
        )
    except (TypeError, ValueError, KeyError):  # a well-formed entry of another shape: not ours to trust
        return False


def _file_holds(path: str, size: int, sha: str) -> bool:
    """The file still holds the bytes the run read. Always the digest: a size and a time can be kept by a change
    (`tar`, `rsync -t` and `touch -r` set times), and reading a profile repository's files costs little."""
    try:
        if os.stat(path).st_size != size:
            return False
    except OSError:
        return False
    return cache.file_digest(path) == sha


# ---- replaying


def _replay(entry: dict[str, Any]) -> int | None:
    """Write the entry's outputs again and print what the run printed; None when a write fails."""
    if entry["writes"]:
        from pathlib import Path  # noqa: PLC0415 - a warm run loads no pathlib unless it replays a render

        from profilekit.output import Rendered, write_outputs  # noqa: PLC0415 - only a replayed render writes

        try:
            for folder, files, partial in entry["writes"]:
                write_outputs(Path(folder), {n: Rendered(t, m) for n, (t, m) in files.items()}, partial=partial)
        except OSError:
            return None
        except Exception as exc:  # profilekit.errors (dataclasses, typing) loaded only when a write is refused
            # the error classes (dataclasses, enum) only when a write is refused
            from profilekit.errors import ProfilekitError  # noqa: PLC0415

            if isinstance(exc, ProfilekitError):
                return None
            raise
    streams = {"out": sys.stdout, "err": sys.stderr}
    try:
        for stream, text in entry["printed"]:
            write_all(streams[stream], text)
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        return EXIT_BROKEN_PIPE
    code = entry["code"]
    return code if isinstance(code, int) else None


# ---- recording


class _Tee:
    """A text stream that writes through to `stream` and keeps what was written, in order with the other."""

    def __init__(self, stream: TextIO, name: str, printed: list[list[str]]) -> None:
        self._stream = stream
        self._name = name
        self._printed = printed

    def write(self, text: str) -> int:
        write_all(self._stream, text)
        written = len(text)
        if self._printed and self._printed[-1][0] == self._name:
            self._printed[-1][1] += text
        else:
            self._printed.append([self._name, text])
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _record(key: str, args: list[str], run: Callable[[list[str]], int]) -> int:
    started = time.time_ns()
    printed: list[list[str]] = []
    real = sys.stdout, sys.stderr
    folder = cache.cache_dir()
    # the copies of sources are input: a copy changed by hand must not replay what its old bytes gave
    recording = record.start(_ignored(folder), (os.path.join(folder, cache.SOURCE_COPIES) + os.sep,))
    writes: list[Any] = []
    record.WRITES.made = writes
    sys.stdout, sys.stderr = _Tee(real[0], "out", printed), _Tee(real[1], "err", printed)
    try:
        code = run(args)
    finally:
        sys.stdout, sys.stderr = real
        record.stop(recording)
        record.WRITES.made = None
    if code in (0, 1):
        _store(key, code, printed=printed, writes=writes, recording=recording, started=started)
    return code


def _ignored(cache_folder: str) -> tuple[str, ...]:
    """Folders whose files are code, not input: profilekit's own and the interpreter's (`code_stamp` covers them)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(cache.__file__)))
    here = os.getcwd()
    roots = {package, os.path.join(os.path.dirname(os.path.dirname(package)), "templates")}
    roots |= {os.path.abspath(p) for p in sys.path if p and os.path.abspath(p) != here and os.path.isdir(p)}
    return (*(root.rstrip(os.sep) + os.sep for root in roots), cache_folder.rstrip(os.sep) + os.sep)


def _store(
    key: str,
    code: int,
    *,
    printed: list[list[str]],
    writes: list[Any],
    recording: record.Recording,
    started: int,
) -> None:
    if sum(len(text) for _stream, text in printed) > MAX_OUTPUT:
        return
    files = []
    probes = [[path, record.kind(path)] for path in recording.probes]
    for path in recording.files:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            probes.append([path, "absent"])  # tried and not there: its absence counts
            continue
        kind = record.kind_of(st.st_mode)
        if kind != "file":  # a folder opened for its descriptor: what is there counts
            probes.append([path, kind])
            continue
        if st.st_mtime_ns >= started - cache.RACY_NS:
            return
        sha = cache.file_digest(path, st)
        if sha is None:
            return
        files.append([path, st.st_size, sha])
    folders = [[path, record.listing(path)] for path in recording.folders]
    cache.write_entry(
        KIND,
        key,
        {"files": files, "folders": folders, "probes": probes, "printed": printed, "writes": writes, "code": code},
    )
