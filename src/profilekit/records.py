"""`@record`: a dataclass that costs a third as much to define, for the classes every run imports.

Python 3.11's `@dataclass` compiles up to six methods of generated source per class (`__init__`, `__repr__`,
`__eq__`, `__hash__`, and for a frozen class `__setattr__` and `__delattr__`): about 3 M instructions a frozen
class, and a first `profilekit check` defines some sixty of them before it reads a layer, a fifth of its
start-up (issue 12). `record` leaves the field handling to `dataclasses` itself (`__dataclass_fields__`,
`fields()`, `replace()`, `__slots__`, `__match_args__` behave as for any dataclass) and compiles only
`__init__`; the other methods are shared functions that read a per-class tuple of field names, with the
semantics of the generated ones (tests/test_records.py holds them to `@dataclass` class by class):

- `__eq__` compares the tuples of `compare` fields of two instances of the same class, else NotImplemented;
- `__hash__` hashes the tuple of hashed fields for `frozen=True, eq=True`, and is None for `eq=True` alone;
- `__repr__` is `Name(field=value, ...)` over the `repr` fields;
- a frozen class refuses assignment and deletion with `dataclasses.FrozenInstanceError` after `__init__`,
  whose generated body stores with `object.__setattr__`, as `@dataclass(frozen=True)` does.

What it supports is what profilekit uses: fields with or without a default or a `default_factory`, `compare`,
`repr` and `hash` per field, `frozen`, `slots`, `eq`. Anything else (`__post_init__`, `InitVar`, `init=False`
fields, `kw_only`, `order`) is refused when the class is defined, so it cannot be silently wrong.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing on the warm path (see profilekit.cli)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T", bound=type)
else:

    def dataclass_transform(**_: object) -> Callable[[Any], Any]:
        return lambda decorator: decorator


_FACTORY = object()  # the default of a parameter whose field has a default_factory: "not given"


@dataclass_transform(field_specifiers=(dataclasses.field,))
def record(*, frozen: bool = False, slots: bool = False, eq: bool = True) -> Callable[[T], T]:
    """`@dataclass(frozen=..., slots=..., eq=...)`, for the subset of dataclass features described above."""

    def wrap(cls: T) -> T:
        return _build(cls, frozen=frozen, slots=slots, eq=eq)

    return wrap


def _build(cls: T, *, frozen: bool, slots: bool, eq: bool) -> T:
    own = dict(cls.__dict__)
    if "__post_init__" in own:
        raise TypeError(f"{cls.__qualname__}: @record does not run __post_init__; use @dataclass")
    # fields, slots and match_args from dataclasses itself, with no method generated
    made: Any = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=False, slots=slots)
    fields = dataclasses.fields(made)
    written = own.get("__annotations__", {})
    for name, annotation in written.items():  # InitVar fields are not among fields(): they would be dropped
        if "InitVar" in str(annotation):
            raise TypeError(f"{cls.__qualname__}.{name}: @record does not support InitVar; use @dataclass")
    for f in fields:
        if not f.init or f.kw_only is True:
            raise TypeError(f"{cls.__qualname__}.{f.name}: @record supports plain init fields only; use @dataclass")
    made.__init__ = _init(made, fields, frozen=frozen)
    if "__repr__" not in own:
        made.__repr__ = _repr
    made.__record_repr__ = tuple(f.name for f in fields if f.repr)
    if eq:
        made.__record_key__ = staticmethod(_getter(tuple(f.name for f in fields if f.compare)))
        if "__eq__" not in own:
            made.__eq__ = _eq
        explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
        if frozen:
            hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
            made.__record_hash__ = staticmethod(_getter(hashed))  # a lambda would bind as a method
            if not explicit_hash:
                made.__hash__ = _hash
        elif not explicit_hash:
            made.__hash__ = None
    if frozen:
        if "__setattr__" in own or "__delattr__" in own:
            raise TypeError(f"{cls.__qualname__}: a frozen record cannot define __setattr__ or __delattr__")
        made.__setattr__ = _frozen_setattr
        made.__delattr__ = _frozen_delattr
        if slots:  # copy and pickle restore slots with setattr, which a frozen class refuses
            made.__getstate__ = _getstate
            made.__setstate__ = _setstate
    made.__record_fields__ = tuple(f.name for f in fields)
    return made  # type: ignore[no-any-return]


def _init(cls: Any, fields: tuple[dataclasses.Field[Any], ...], *, frozen: bool) -> Any:
    """`cls.__init__`, compiled from the same source shape `@dataclass` writes."""
    names: dict[str, Any] = {"_FACTORY": _FACTORY, "_set": object.__setattr__}
    params = ["self"]
    body = []
    for f in fields:
        if f.default is not dataclasses.MISSING:
            names[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
            value = f.name
        elif f.default_factory is not dataclasses.MISSING:
            names[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            value = f"_factory_{f.name}() if {f.name} is _FACTORY else {f.name}"
        else:
            params.append(f.name)
            value = f.name
        body.append(f"_set(self, {f.name!r}, {value})" if frozen else f"self.{f.name} = {value}")
    source = f"def __init__({', '.join(params)}):\n    " + ("\n    ".join(body) or "pass") + "\n"
    exec(compile(source, f"<record {cls.__qualname__}>", "exec"), names)
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A function from an instance to the tuple of its `names` fields."""
    if len(names) >= 2:
        return attrgetter(*names)
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda self: (one(self),)
    return lambda self: ()


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_repr__)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:  # bool, or NotImplemented
    if other.__class__ is self.__class__:
        key = self.__record_key__
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__record_hash__(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, name) for name in self.__record_fields__]


def _setstate(self: Any, state: list[Any]) -> None:
    for name, value in zip(self.__record_fields__, state, strict=True):
        object.__setattr__(self, name, value)
