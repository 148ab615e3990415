"""How a run ends when it is stopped from outside: Ctrl-C (SIGINT) exits 130, SIGTERM 143, a reader that closed
the pipe 141 — quietly, in every command and cache state, after the cleanup of whatever was being written.

Ctrl-C is Python's KeyboardInterrupt; SIGTERM is turned into `Terminated`, raised wherever the run is, so the
same `except BaseException: clean up; raise` paths run for both (a render's staging folder, a temporary file).
`cli.main` is the one place either is turned into an exit code.

A closed pipe is noticed on every write: `write_all` writes a text whole or raises BrokenPipeError. Python's
buffered stdout reports a write the kernel cut short (a reader that exits after 64 KiB of a larger report) as a
shorter count and then drops the rest, so a truncated report used to exit 0 like a complete one.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal without the enum module it imports: the start-up budget
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see profilekit.cli.run)
if TYPE_CHECKING:
    from typing import TextIO

# profilekit.errors' exit codes, without importing that module (dataclasses, enum) on the warm path
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


class Terminated(BaseException):
    """SIGTERM arrived: a BaseException, as KeyboardInterrupt, so no `except Exception` takes it for an error."""


def _terminate(_signum: int, _frame: object) -> None:
    raise Terminated


def handle_sigterm() -> None:
    """Raise `Terminated` on SIGTERM, unless the parent had it ignored (then it stays ignored, as it would)."""
    if _signal.getsignal(_signal.SIGTERM) == _signal.SIG_DFL:
        _signal.signal(_signal.SIGTERM, _terminate)


def write_all(stream: TextIO, text: str) -> None:
    """Write `text` to `stream` whole, or raise BrokenPipeError (OSError for other failures).

    A text larger than the stream's buffer, on a stream with a binary buffer (the real stdout and stderr), is
    written through that buffer in a loop until every byte is taken; a smaller one is buffered whole by the
    stream, and the flush at the end of the run (`cli.main`) notices a closed pipe. Anything else (a test's
    capture, the cache's recording tee) is written as it is."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None or len(text) <= LARGE:
        stream.write(text)
        return
    data = memoryview(text.encode(stream.encoding or "utf-8", stream.errors or "strict"))
    stream.flush()  # what the text layer still holds goes first
    while data:
        written = buffer.write(data)
        if not written:
            raise BlockingIOError(0, "the stream took none of the text")
        data = data[written:]


# above this a buffered writer hands the text to the kernel directly, where a short write can be lost
LARGE = 4096


def silence_stdout() -> None:
    """Point stdout at /dev/null once the reader is gone, so that the flush at exit does not fail on the closed
    pipe again (and print Python's 'Exception ignored')."""
    try:  # noqa: SIM105 - contextlib is not loaded on the warm path
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (captured in tests): nothing to redirect
        pass
