"""Command-line words as TOML values, for `profilekit import`: what vLLM's parser makes of `--opt WORDS...`.

The inverse of `values.as_args`, sharing its model of each flag's type (`catalogue.kind_of`).
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any

from profilekit.tomlio.guards import MAX_DEPTH, nesting_depth
from profilekit.vllm.catalogue import Kind, human_readable_int, human_readable_int_or_auto, kind_of
from profilekit.vllm.values import LOOKS_LIKE_OBJECT, json_is_list, problem

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Flag


class WordError(ValueError):
    """A command-line value that vLLM would reject, or that TOML cannot hold."""


def _json_to_toml(value: Any, what: str) -> Any:
    if value is None:
        raise WordError(f"{what} holds null, which TOML cannot represent")
    if isinstance(value, dict):
        return {str(k): _json_to_toml(v, f"{what}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_json_to_toml(v, f"{what}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        raise WordError(f"{what} holds {value}, which JSON options cannot carry")
    return value


def _expand_json_human_numbers(text: str) -> str:
    """vLLM's `_expand_json_human_readable_numbers`: bare 80m / 8g tokens outside JSON strings become ints."""
    parts = re.split(r'("(?:[^"\\]|\\.)*")', text)
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"\b\d+(?:\.\d+)?[kKmMgGtT]\b", lambda m: str(human_readable_int(m.group())), parts[i])
    return "".join(parts)


_TOO_DEEP: Any = object()  # the marker of a JSON word nested past what json's decoder can read


def json_table(text: str, *, config_class: bool, what: str, as_list: bool = False) -> Any:
    """A JSON-valued option's word as a TOML table (or array, for a JSON-list option; raises WordError)."""
    try:
        value = json.loads(_expand_json_human_numbers(text) if config_class else text)
    except json.JSONDecodeError as exc:
        raise WordError(f"{what} is not valid JSON ({exc.msg} at character {exc.pos})") from None
    except RecursionError:  # json's decoder recurses: thousands of nested objects exhaust the stack
        value = _TOO_DEEP
    if value is _TOO_DEEP or nesting_depth(value) > MAX_DEPTH:
        raise WordError(f"{what} nests JSON more than {MAX_DEPTH} levels deep, more than a layer may hold")
    if as_list and not isinstance(value, list):
        raise WordError(f"{what} is JSON but not a list, which vLLM expects for this option")
    if not as_list and not isinstance(value, dict):
        raise WordError(f"{what} is JSON but not an object; profilekit writes JSON options as TOML tables")
    return _json_to_toml(value, what)


def _word_value(flag: Flag, kind: Kind, word: str, what: str) -> Any:
    base = kind.base
    if kind.optional and word in ("", "None"):
        raise WordError(f"{what} is {word!r}, which vLLM reads as no value; TOML has no null")
    try:
        if base == "int":
            return int(word)
        if base == "float":
            number = float(word)
            if math.isnan(number):
                raise WordError(f"{what} is nan")
            try:
                return int(word)
            except ValueError:
                return number
        if base in ("human_int", "human_int_auto"):
            (human_readable_int if base == "human_int" else human_readable_int_or_auto)(word)
            try:
                return int(word)
            except ValueError:
                return word
    except WordError:
        raise
    except ValueError:
        expected = {"int": "an integer", "float": "a number"}.get(base, "a number (digits, optionally 8k / 1G)")
        raise WordError(f"{what} expects {expected}, got {word!r}") from None
    if base in ("json", "json_config"):
        as_list = base == "json" and json_is_list(flag)
        return json_table(word, config_class=base == "json_config", what=what, as_list=as_list)
    if base == "dict_or_str" and LOOKS_LIKE_OBJECT.match(word):
        return json_table(word, config_class=False, what=what)
    return word


def from_words(flag: Flag, words: list[str], version: str, *, what: str) -> Any:
    """The TOML value for the words that followed `flag` on a command line (raises WordError)."""
    kind = kind_of(flag)
    if flag.takes_many:
        value: Any = [_word_value(flag, kind, w, what) for w in words]
    else:
        value = _word_value(flag, kind, words[0], what)
    found = problem(flag, value if not flag.is_append else [value], version)
    if found is not None and not found.warning:
        raise WordError(f"{what}: {found.message}")
    return value
