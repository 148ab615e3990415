"""Scope's prefix index changes nothing but speed: random assign/unset sequences against the plain scan it replaced."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from profilekit.compose.model import UNSET, Assignment, Entry, Scope
from profilekit.errors import Location
from profilekit.tomlio.positions import Path as KeyPath


class PlainScope:
    """Scope as it was before the index: every take and unset scans all entries."""

    def __init__(self) -> None:
        self.entries: dict[KeyPath, Entry] = {}
        self.removed: dict[KeyPath, Entry] = {}

    def _take(self, path: KeyPath) -> list[Assignment]:
        history: list[Assignment] = []
        for depth in range(1, len(path)):
            above = self.entries.pop(path[:depth], None)
            if above is not None:
                history.extend(above.history)
        for key in [k for k in self.entries if k[: len(path)] == path]:
            history.extend(self.entries.pop(key).history)
        gone = self.removed.pop(path, None)
        if gone is not None:
            history = [*gone.history, *history]
        return history

    def assign(self, path: KeyPath, value: Any, origin: Location) -> None:
        current = self.entries.get(path)
        if current is not None:
            self.entries[path] = Entry(value, origin, current.history)
            return
        history = self._take(path)
        for key in [k for k in self.removed if k[: len(path)] == path and k != path]:
            del self.removed[key]
        self.entries[path] = Entry(value, origin, tuple(history))

    def unset(self, path: KeyPath, origin: Location) -> bool:
        hit = [k for k in self.entries if k[: len(path)] == path]
        for key in hit:
            entry = self.entries.pop(key)
            self.removed[key] = Entry(UNSET, origin, entry.history)
        return bool(hit)


PATHS = st.lists(st.sampled_from(["env", "a", "b", "c"]), min_size=1, max_size=4).map(tuple)
STEPS = st.lists(st.tuples(st.booleans(), PATHS), max_size=40)


@settings(max_examples=300, deadline=None)
@given(STEPS, st.integers(min_value=0, max_value=40))
def test_the_index_gives_what_the_scan_gave(steps: list[tuple[bool, KeyPath]], copy_at: int) -> None:
    fast, plain = Scope(), PlainScope()
    for i, (is_unset, path) in enumerate(steps):
        origin = Location("f.toml", i + 1, 1)
        if i == copy_at:
            fast = fast.copy()  # a role starts from a copy of the top-level scope
        if is_unset:
            assert fast.unset(path, origin) == plain.unset(path, origin)
        else:
            fast.assign(path, i, origin)
            plain.assign(path, i, origin)
        assert fast.entries == plain.entries
        assert list(fast.entries) == list(plain.entries)
        assert fast.removed == plain.removed
