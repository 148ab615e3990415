"""Putting a whole folder in place of another in one step.

On Linux `renameat2(RENAME_EXCHANGE)` swaps two names at once: whoever opens a path under the folder's name
finds the old folder or the new one, never neither and never a mix. Python has no binding for it, so it is
called through ctypes, loaded only by a render that replaces a folder. Where the call is missing (another
system, an old C library) or the file system refuses it, `exchange` says so and the caller falls back to two
renames, with an instant between them when the name holds nothing (README: "Writing the output folder").
"""

from __future__ import annotations

import errno
import os

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# what renameat2 answers when this system or this file system cannot exchange: a fallback, not a failure
_UNSUPPORTED = frozenset({errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})


def _renameat2() -> object | None:
    try:
        import ctypes  # noqa: PLC0415 - only a render that replaces a folder swaps one

        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (ImportError, OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def exchange(first: str, second: str) -> bool:
    """Swap the two names at once; False where this system or file system cannot (nothing was changed then).
    Any other failure raises OSError, as os.rename does."""
    if os.uname().sysname != "Linux":
        return False
    function = _renameat2()
    if function is None:
        return False
    import ctypes  # noqa: PLC0415 - loaded by _renameat2 already

    done = function(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)  # type: ignore[operator]
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), first, None, second)
