"""Values against the compact pydantic schemas of vLLM's config classes, with pydantic's own messages.

The schemas come from `vllm-X.values.json` (tools/oracle/constraints.py writes them from pydantic-core's
schemas). This is the subset of pydantic's lax validation that a TOML value can meet: JSON mode for
config objects that vLLM reads with `TypeAdapter(cls).validate_json` while parsing arguments, Python
mode for values argparse has already converted (`max_num_seqs`) or dicts vLLM passes as keyword
arguments (`SpeculativeConfig(**speculative_config)`). Where a schema is opaque (a validator that may
rewrite the input), any value is accepted: profilekit never refuses what vLLM might take.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any, Literal

from profilekit.records import record

Schema = dict[str, Any]
Mode = Literal["json", "python"]

_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}
_INT_TEXT = re.compile(r"^\s*[+-]?\d+(?:_\d+)*\s*$")


@record(frozen=True, slots=True)
class Error:
    """One pydantic error: the path below the validated value, and pydantic's message."""

    path: tuple[str | int, ...]
    message: str
    unknown_key: bool = False
    schema: Schema | None = None  # the schema that refused the value
    # not a validation error: the exception that escapes pydantic and stops vLLM at once (a bare KeyError)
    escapes: str = ""


def number(value: float | int) -> str:
    """A constraint as pydantic prints it: 1.0 -> 1, 0.5 -> 0.5."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def expected_list(values: list[Any]) -> str:
    """pydantic's "'a', 'b' or 'c'" for literal and enum errors."""
    shown = [repr(v) for v in values]
    if len(shown) <= 1:
        return "".join(shown)
    return ", ".join(shown[:-1]) + " or " + shown[-1]


class Validator:
    """Validates values against schemas of one release's config classes (`configs`: name -> class entry)."""

    def __init__(self, configs: dict[str, Any], *, mode: Mode) -> None:
        self.configs = configs
        self.mode = mode

    def check(self, schema: Schema, value: Any, path: tuple[str | int, ...] = ()) -> list[Error]:
        kind = schema.get("type")
        method = getattr(self, "_" + str(kind), None)
        if method is None:  # opaque, any, instance, subclass, none...
            return []
        errors: list[Error] = method(schema, value, path)
        return [
            e if e.schema is not None or e.unknown_key else Error(e.path, e.message, False, schema, e.escapes)
            for e in errors
        ]

    # -- config objects -------------------------------------------------------------------------------

    def config_fields(self, name: str) -> tuple[dict[str, Schema], bool]:
        """The fields a config class accepts as keys, and whether it refuses other keys."""
        entry = self.configs.get(name) or {}
        fields = {k: s for k, s in (entry.get("fields") or {}).items() if s.get("init") is not False}
        return fields, entry.get("extra") == "forbid"

    def _config(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        name = str(schema.get("class"))
        if not isinstance(value, dict):
            return [Error(path, f"Input should be a dictionary or an instance of {name}")]
        return self.check_keys(name, value, path)

    def check_keys(self, name: str, value: dict[str, Any], path: tuple[str | int, ...] = ()) -> list[Error]:
        fields, forbid = self.config_fields(name)
        errors: list[Error] = [
            Error((*path, key), "Field required", schema=schema)
            for key, schema in fields.items()
            if schema.get("required") and key not in value
        ]
        for key, item in value.items():
            schema = fields.get(key)
            if schema is None:
                if forbid:
                    errors.append(Error((*path, key), "Unexpected keyword argument", unknown_key=True))
                continue
            errors += self.check(schema, item, (*path, key))
        return errors

    # -- wrappers ---------------------------------------------------------------------------------------

    def _folded(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        """A before validator that respells a string (`value.lower().replace("-", "_")`) first."""
        if isinstance(value, str):
            value = value.lower()
            if schema.get("fold") == "lower_underscore":
                value = value.replace("-", "_")
        return self.check(schema["schema"], value, path)

    def _enum_name(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        """A before validator that looks a string up among an enum's member names, upper-cased.

        An unknown name raises the validator's own error: a ValueError pydantic reports ("Value error, ..."),
        or a KeyError that escapes it (`escapes`). Other values go on to the enum's schema.
        """
        if not isinstance(value, str):
            return self.check(schema["schema"], value, path)
        if schema.get("auto") and value.lower() == "auto":
            return []  # read as None: vLLM chooses at start-up
        if value.upper() in schema.get("names", []):
            return []
        holes = {"{value}": value, "{VALUE}": value.upper()}
        text = re.sub(r"\{value\}|\{VALUE\}", lambda m: holes[m.group(0)], str(schema.get("message", "")))
        if schema.get("error") == "ValueError":
            return [Error(path, f"Value error, {text}")]
        return [Error(path, text, escapes=str(schema.get("error")))]

    def _nullable(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        return [] if value is None else self.check(schema["schema"], value, path)

    def _union(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        first: list[Error] | None = None
        fitting: list[Error] | None = None
        for choice in schema.get("choices", []):
            errors = self.check(choice, value, path)
            if not errors:
                return []
            first = first if first is not None else errors
            if fitting is None and _same_kind(choice, value):
                fitting = errors
        return fitting or first or []

    # -- scalars ----------------------------------------------------------------------------------------

    def _int(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        converted: int
        if isinstance(value, bool):
            if schema.get("strict"):
                return [Error(path, "Input should be a valid integer")]
            converted = int(value)
        elif isinstance(value, int):
            converted = value
        elif isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                return [Error(path, "Input should be a valid integer, got a number with a fractional part")]
            converted = int(value)
        elif isinstance(value, str) and not schema.get("strict"):
            if not _INT_TEXT.match(value):
                return [Error(path, "Input should be a valid integer, unable to parse string as an integer")]
            converted = int(value.replace("_", ""))
        else:
            return [Error(path, "Input should be a valid integer")]
        return _bounds(schema, converted, path)

    def _float(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        converted: float
        if isinstance(value, (bool, int, float)):
            converted = float(value)
        elif isinstance(value, str) and not schema.get("strict"):
            try:
                converted = float(value.strip().replace("_", ""))
            except ValueError:
                return [Error(path, "Input should be a valid number, unable to parse string as a number")]
        else:
            return [Error(path, "Input should be a valid number")]
        if math.isnan(converted):
            return []
        return _bounds(schema, converted, path)

    def _str(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        if not isinstance(value, str):
            return [Error(path, "Input should be a valid string")]
        least, most = schema.get("min_length"), schema.get("max_length")
        if least is not None and len(value) < least:
            return [Error(path, f"String should have at least {least} character{'s' if least != 1 else ''}")]
        if most is not None and len(value) > most:
            return [Error(path, f"String should have at most {most} character{'s' if most != 1 else ''}")]
        return []

    def _bool(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        if isinstance(value, bool):
            return []
        if isinstance(value, int) and not schema.get("strict"):
            ok = value in (0, 1)
        elif isinstance(value, str) and not schema.get("strict"):
            ok = value.strip().lower() in _TRUE | _FALSE
        else:
            return [Error(path, "Input should be a valid boolean")]
        return [] if ok else [Error(path, "Input should be a valid boolean, unable to interpret input")]

    def _literal(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        expected = schema.get("expected", [])
        if any(
            value == e
            and isinstance(value, str) == isinstance(e, str)
            and isinstance(value, bool) == isinstance(e, bool)
            for e in expected
        ):
            return []  # a Literal[1] takes 1.0 too, but never "1" or True
        return [Error(path, f"Input should be {expected_list(expected)}")]

    def _enum(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        values = schema.get("values", [])
        if value in values and not isinstance(value, bool):
            return []
        if isinstance(value, bool) and any(type(v) is int and v == value for v in values):
            return []  # lax mode reads true and false as 1 and 0 for a member with that number
        if isinstance(value, str) and any(isinstance(v, int) and str(v) == value.strip() for v in values):
            return []
        if isinstance(value, float) and value.is_integer() and int(value) in values:
            return []
        return [Error(path, f"Input should be {expected_list(values)}")]

    # -- collections ------------------------------------------------------------------------------------

    def _sequence(self, schema: Schema, value: Any, path: tuple[str | int, ...], what: str) -> list[Error]:
        if not isinstance(value, list):
            word = "array" if self.mode == "json" else what
            return [Error(path, f"Input should be a valid {word}")]
        least = schema.get("min_length")
        if least is not None and len(value) < least:
            item = "item" if least == 1 else "items"
            return [
                Error(
                    path, f"{what.capitalize()} should have at least {least} {item} after validation, not {len(value)}"
                )
            ]
        items = schema.get("items")
        errors: list[Error] = []
        if isinstance(items, dict):
            for index, item_value in enumerate(value):
                errors += self.check(items, item_value, (*path, index))
        return errors

    def _list(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        return self._sequence(schema, value, path, "list")

    def _set(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        return self._sequence(schema, value, path, "set")

    def _frozenset(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        return self._sequence(schema, value, path, "frozenset")

    def _tuple(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        if not isinstance(value, list):
            return [Error(path, f"Input should be a valid {'array' if self.mode == 'json' else 'tuple'}")]
        items = schema.get("items") or []
        if schema.get("variadic_item_index") is not None:
            return []
        if len(value) > len(items):  # pydantic-core reports only the length then, not the items
            return [Error(path, f"Tuple should have at most {len(items)} items after validation, not {len(value)}")]
        errors: list[Error] = []
        for index, item_schema in enumerate(items):
            if index < len(value):
                errors += self.check(item_schema, value[index], (*path, index))
            else:  # a fixed-length tuple given too few items: each missing position is a missing field
                errors.append(Error((*path, index), "Field required"))
        return errors

    def _dict(self, schema: Schema, value: Any, path: tuple[str | int, ...]) -> list[Error]:
        if not isinstance(value, dict):
            return [
                Error(
                    path, "Input should be an object" if self.mode == "json" else "Input should be a valid dictionary"
                )
            ]
        values = schema.get("values")
        errors: list[Error] = []
        if isinstance(values, dict):
            for key, item in value.items():
                errors += self.check(values, item, (*path, key))
        if errors:
            return errors
        # pydantic counts a dict's items after validating them (KernelConfig.linear_backend_per_quant: min_length=1)
        least, most = schema.get("min_length"), schema.get("max_length")
        if least is not None and len(value) < least:
            return [Error(path, f"Dictionary should have at least {_items(least)} after validation, not {len(value)}")]
        if most is not None and len(value) > most:
            return [Error(path, f"Dictionary should have at most {_items(most)} after validation, not {len(value)}")]
        return []


def _items(count: int) -> str:
    return f"{count} item" if count == 1 else f"{count} items"


def _bounds(schema: Schema, value: float | int, path: tuple[str | int, ...]) -> list[Error]:
    checks = (
        ("gt", operator.gt, "greater than"),
        ("ge", operator.ge, "greater than or equal to"),
        ("lt", operator.lt, "less than"),
        ("le", operator.le, "less than or equal to"),
    )
    for key, holds, words in checks:
        bound = schema.get(key)
        if bound is not None and not holds(value, bound):
            return [Error(path, f"Input should be {words} {number(bound)}")]
    step = schema.get("multiple_of")
    if step and value % step:
        return [Error(path, f"Input should be a multiple of {number(step)}")]
    return []


def _same_kind(schema: Schema, value: Any) -> bool:
    """Whether a union member is the one a value was meant for (its error is the helpful one)."""
    kind = schema.get("type")
    if kind in ("nullable", "folded", "enum_name"):
        return _same_kind(schema["schema"], value)
    if isinstance(value, bool):
        return kind == "bool"
    if isinstance(value, (int, float)):
        return kind in ("int", "float", "enum") or (
            kind == "literal" and any(isinstance(e, (int, float)) for e in schema.get("expected", []))
        )
    if isinstance(value, str):
        return kind in ("str", "literal", "enum")
    if isinstance(value, list):
        return kind in ("list", "set", "frozenset", "tuple")
    if isinstance(value, dict):
        return kind in ("dict", "config")
    return False
