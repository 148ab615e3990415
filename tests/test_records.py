"""`profilekit.records.record` behaves as `@dataclass` with the same arguments, for what profilekit uses.

Each shape is defined twice, once with each decorator, under the same name, and the two are compared on what a
caller can observe: construction with defaults and factories, repr, equality (and NotImplemented against another
class), hashing, frozen assignment and deletion, `dataclasses.fields`/`replace`, `__match_args__`, `__slots__`,
copy and pickle. What `record` does not support is refused when the class is defined.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from profilekit.records import record

OPTIONS = [
    {"frozen": True, "slots": True},
    {"frozen": False, "slots": True},
    {"frozen": True, "slots": False},
    {"frozen": False, "slots": False},
    {"frozen": False, "slots": True, "eq": False},
]
IDS = ["frozen-slots", "slots", "frozen", "plain", "slots-no-eq"]


def _shapes(decorate: Callable[[type], type]) -> dict[str, type]:
    """The same class bodies under `decorate` (module-level pickling finds them through `_made`)."""

    class Empty:
        pass

    class One:
        name: str

    class Defaults:
        name: str
        count: int = 3
        tags: list[str] = field(default_factory=list)
        meta: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    class Hashing:
        key: str
        noise: int = field(default=0, compare=False)
        weight: int = field(default=1, compare=False, hash=True)

    return {c.__name__: decorate(c) for c in (Empty, One, Defaults, Hashing)}


def _pair(options: dict[str, bool]) -> tuple[dict[str, type], dict[str, type]]:
    return _shapes(dataclass(**options)), _shapes(record(**options))


ARGS: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "Empty": [((), {})],
    "One": [(("a",), {}), ((), {"name": "b"})],
    "Defaults": [(("x",), {}), (("x", 5), {}), (("x",), {"tags": ["t"], "meta": {"m": 1}})],
    "Hashing": [(("k",), {}), (("k", 9, 2), {})],
}


def _outcome(action: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    try:
        return "ok", action(*args)
    except Exception as exc:  # the comparison is of what each raises, by type and message
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("options", OPTIONS, ids=IDS)
def test_record_behaves_as_dataclass(options: dict[str, bool]) -> None:
    real, fast = _pair(options)
    for name, calls in ARGS.items():
        want, got = real[name], fast[name]
        assert [f.name for f in dataclasses.fields(got)] == [f.name for f in dataclasses.fields(want)]
        assert got.__match_args__ == want.__match_args__  # type: ignore[attr-defined]
        assert ("__slots__" in got.__dict__) == ("__slots__" in want.__dict__)
        assert getattr(got, "__slots__", None) == getattr(want, "__slots__", None)
        assert (got.__hash__ is None) == (want.__hash__ is None)
        for args, kwargs in calls:
            a, b = want(*args, **kwargs), got(*args, **kwargs)
            a2, b2 = want(*args, **kwargs), got(*args, **kwargs)
            assert repr(b) == repr(a)
            assert (b == b2) == (a == a2)
            assert (b != b2) == (a != a2)
            assert b.__eq__(object()) is a.__eq__(object())  # NotImplemented when eq, else object's
            if options.get("eq", True):
                assert _outcome(hash, b) == _outcome(hash, a)  # the same tuple hashed, or both unhashable
            else:
                assert hash(b) == object.__hash__(b)  # identity, as object's
            if dataclasses.fields(want):
                first = dataclasses.fields(want)[0].name
                a3, b3 = dataclasses.replace(a2, **{first: "r"}), dataclasses.replace(b2, **{first: "r"})
                assert repr(b3) == repr(a3)
                # a field's assignment and deletion (on another name Python 3.11's frozen slots dataclass
                # raises a TypeError of its own: CPython's gh-90562)
                assert _outcome(setattr, b, first, "z") == _outcome(setattr, a, first, "z")
                assert _outcome(delattr, b, first) == _outcome(delattr, a, first)
            assert repr(copy.copy(b2)) == repr(b2) and repr(copy.deepcopy(b2)) == repr(b2)


@pytest.mark.parametrize("options", OPTIONS, ids=IDS)
def test_factories_give_each_instance_its_own_value(options: dict[str, bool]) -> None:
    _real, fast = _pair(options)
    first, second = fast["Defaults"]("a"), fast["Defaults"]("b")
    assert first.tags == [] and first.tags is not second.tags


@record(frozen=True, slots=True)
class Pickled:
    name: str
    parts: tuple[int, ...] = ()


def test_a_frozen_record_pickles() -> None:
    value = Pickled("p", (1, 2))
    assert pickle.loads(pickle.dumps(value)) == value


@given(
    name=st.text(max_size=5),
    count=st.integers(),
    tags=st.lists(st.text(max_size=3), max_size=3),
    other=st.text(max_size=5),
)
def test_equality_and_hash_agree_with_dataclass_on_any_values(
    name: str, count: int, tags: list[str], other: str
) -> None:
    real, fast = _pair({"frozen": True, "slots": True})
    a, b = real["Defaults"](name, count, tags), fast["Defaults"](name, count, tags)
    a2, b2 = real["Defaults"](other, count, tags), fast["Defaults"](other, count, tags)
    assert (a == a2) == (b == b2)
    assert repr(a) == repr(b) and repr(a2) == repr(b2)
    h1, h2 = real["Hashing"](name, count), fast["Hashing"](name, count)
    assert hash(h1) == hash(h2)


def test_what_record_does_not_support_is_refused_at_definition() -> None:
    with pytest.raises(TypeError, match="__post_init__"):

        @record(frozen=True, slots=True)
        class Posted:
            name: str

            def __post_init__(self) -> None:
                pass

    with pytest.raises(TypeError, match="InitVar"):

        @record(slots=True)
        class Initvar:
            name: str
            extra: InitVar[int] = 0

    with pytest.raises(TypeError, match="plain init fields"):

        @record(slots=True)
        class NotInit:
            name: str = field(default="", init=False)

    with pytest.raises(TypeError, match="plain init fields"):

        @record(slots=True)
        class KeywordOnly:
            name: str = field(default="", kw_only=True)


def test_profilekit_classes_are_records() -> None:
    """The classes a run defines are built by `record` (a stray `@dataclass` costs start-up again)."""
    from profilekit.compose.model import Entry
    from profilekit.errors import Finding, Location

    for cls in (Finding, Location, Entry):
        assert "__record_fields__" in cls.__dict__, cls
