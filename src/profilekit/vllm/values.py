"""What a value means for one `vllm serve` option: the TOML types it takes, and what vLLM's parser makes of it.

Three directions share one model of each flag's type (`catalogue.kind_of`), so they cannot drift apart:
`problem` judges a TOML value written in a layer, `as_args` renders it as command-line words, and
`catalogue.parsed` predicts the value vLLM's parser stores for it (the oracle suite compares that prediction
with the real parser); `from_words` goes the other way for `profilekit import`. A fix is offered only when
it passes the config classes' checks too (`constraints`, which builds on `catalogue`, not on this module).

The conversions below mirror `vllm/engine/arg_utils.py` and `vllm/utils/argparse_utils.py` (0.27.0-0.33.0).
"""

from __future__ import annotations

import datetime
import difflib
import json
import math
import re
from typing import TYPE_CHECKING, Any

from profilekit.records import record
from profilekit.tomlio.read import toml_type
from profilekit.vllm.catalogue import Kind, enum_values, human_readable_int, human_readable_int_or_auto, kind_of
from profilekit.vllm.constraints import config_problems

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Flag

# `union_dict_and_str`: a value that looks like a JSON object is read as one.
LOOKS_LIKE_OBJECT = re.compile(r"(?s)^\s*{.*}\s*$")
# argparse reads a word like -5 as a value, not an option, when no option looks like a negative number
# (a negative float also holds '.', which vLLM's dotted-key pre-processing takes for an option)
_LIST_NEGATIVE = re.compile(r"^-\d+$")

TOML_TYPE_NAMES = {
    bool: "a boolean",
    int: "an integer",
    float: "a float",
    str: "a string",
    list: "an array",
    dict: "a table",
}


@record(frozen=True, slots=True)
class Problem:
    """Why a value does not fit an option: a message (after the key) and a fix."""

    message: str
    fix: str = ""
    # index path below the key (array elements), for the location
    path: tuple[int, ...] = ()
    # vLLM accepts the value but it does not mean what it says ('' read as None): a warning, not a refusal
    warning: bool = False


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ---- enums converted after parsing ----------------------------------------------------------------


def _enum_says(flag: Flag, value: str) -> str | None:
    """vLLM's own words for a value its enum conversion refuses (every release 0.27.0-0.33.0)."""
    members = flag.enum_members or ()
    if flag.enum_class == "AttentionBackendEnum":
        # vllm/v1/attention/backends/registry.py _AttentionBackendEnumMeta.__getitem__
        return f"Unknown attention backend: '{value.upper()}'. Valid options are: {', '.join(members)}"
    if flag.enum_class == "OptimizationLevel":
        # pydantic's enum error for VllmConfig.optimization_level (an IntEnum)
        numbers = [name.removeprefix("O") for name in members]
        return "Input should be " + (f"{', '.join(numbers[:-1])} or {numbers[-1]}" if len(numbers) > 1 else numbers[0])
    return None


def _enum_problem(flag: Flag, value: str, version: str) -> Problem | None:
    spec = enum_values(flag)
    if spec is None:
        return None
    names, folded = spec
    probe = value.lower() if folded else value
    if probe in names:
        return None

    shown = ", ".join(names)
    case = " (any case)" if folded else ""
    close = difflib.get_close_matches(probe, names, n=1, cutoff=0.6)
    says = _enum_says(flag, value)
    message = f"{value!r} is not among the values vLLM {version} accepts for {flag.dest}: {shown}{case}"
    if says and flag.enum_class == "AttentionBackendEnum":
        message = f'vLLM {version} refuses {value!r}: "{says}"' + (" (or 'auto')" if "auto" in names else "")
    elif says:
        message += f'; vLLM says "{says}"'
    return Problem(
        message,
        f"did you mean {close[0]!r}?" if close else f"choose one of: {shown}",
    )


def _choices(flag: Flag) -> list[Any]:
    return [c for c in flag.choices or () if c is not None]


def _choice_problem(flag: Flag, value: Any, version: str) -> Problem | None:
    choices = _choices(flag)
    if not choices:
        return None
    probe = value.lower().replace("-", "_") if kind_of(flag).base == "lowered_choice" else value
    if probe in choices:
        return None

    shown = ", ".join(str(c) for c in choices)
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
    return Problem(
        f'vLLM {version} refuses {value!r} for {flag.dest}: "{invalid_choice(flag, probe)}"',
        f"did you mean {close[0]!r}?" if close else f"choose one of: {shown}",
    )


def invalid_choice(flag: Flag, converted: Any) -> str:
    """argparse's own message for a converted value outside `flag.choices` (Python 3.11, as vLLM runs it).

    The choices are listed as the parser holds them: 0.27.0-0.30.0 list the string 'None' for
    `--collect-detailed-traces`, 0.31.0 and later the value None.
    """
    listed = ", ".join(repr(c) for c in flag.choices or ())
    return f"argument {'/'.join(flag.option_strings)}: invalid choice: {converted!r} (choose from {listed})"


# ---- checking a TOML value ---------------------------------------------------------------------------


def _example(flag: Flag, base: str, version: str) -> str:
    default = flag.default
    samples = {"int": 1, "float": 0.5, "str": '"..."', "bool": "true"}
    if base == "bool":
        return f"{flag.dest} = true"
    if base in ("int", "human_int", "human_int_auto") and isinstance(default, int) and not isinstance(default, bool):
        return f"{flag.dest} = {default}"
    if base == "float" and isinstance(default, (int, float)) and not isinstance(default, bool):
        return f"{flag.dest} = {default}"
    if base == "human_int":
        return f'{flag.dest} = "8g"'
    if base == "human_int_auto":
        return f'{flag.dest} = "8k"'
    if base == "json" and json_is_list(flag):
        return f'{flag.dest} = ["..."]'
    if base in ("json", "json_config"):
        return f"[serve.{flag.dest}] with one key per line"
    if base in samples and base != "str":
        return f"{flag.dest} = {samples[base]}"
    # a string: the default or one of a closed set when it passes; a placeholder only where any string does
    candidates = [default] if isinstance(default, str) and default else []
    for candidate in [*candidates, *_accepted_words(flag), "..."]:
        if passes(flag, candidate, version):
            return f"{flag.dest} = {_toml_text(candidate)}"
    return f"a string vLLM {version} accepts for {flag.dest} (`profilekit flags {flag.dest}` describes it)"


def _accepted_words(flag: Flag) -> list[str]:
    """The values of a closed set (argparse choices, or an enum converted after parsing), as written."""
    spec = enum_values(flag)
    if spec is not None:
        return spec[0]
    return [str(c) for c in _choices(flag)]


def digits_option(flag: Flag) -> bool:
    """An option vLLM reads from a string of digits (`optimization_level`: "0".."3"): a TOML integer means it."""
    accepted = _accepted_words(flag)
    return kind_of(flag).base == "str" and bool(accepted) and all(word.isdigit() for word in accepted)


def _toml_text(value: Any) -> str:
    """A value as it is written in a layer file, for a fix line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_text(v) for v in value) + "]"
    return str(value)


def _fix(flag: Flag, version: str, prefix: str, value: Any, fallback: str) -> str:
    """`prefix flag = value` when that value passes; otherwise the fallback (a fix never fails again)."""
    if passes(flag, value, version):
        return f"{prefix}{flag.dest} = {_toml_text(value)}"
    return fallback


def passes(flag: Flag, value: Any, version: str) -> bool:
    """Whether `value` passes both argparse's reading and the config class's checks of vLLM `version`."""
    return problem(flag, value, version) is None and not config_problems(flag, value, version, serve={flag.dest: value})


def _unrepresentable(value: Any) -> str | None:
    """A TOML value that has no command-line form at all: dates and times, NaN, values inside tables."""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return "a TOML date or time has no meaning for vLLM"
    if isinstance(value, float) and math.isnan(value):
        return "nan cannot be compared or passed reliably"
    if isinstance(value, dict):
        for inner in value.values():
            why = _unrepresentable(inner)
            if why:
                return why
        if any(isinstance(v, float) and math.isinf(v) for v in value.values()):
            return "JSON has no infinity"
    if isinstance(value, list):
        for inner in value:
            why = _unrepresentable(inner)
            if why:
                return why
    return None


# the TOML types each kind of flag takes (never a boolean), and how a refusal names them; a kind not listed takes
# a string, and `optional_value` (true or a string) and a JSON list option are judged apart
_TAKES: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "an integer"),
    "float": ((int, float), "a number"),
    "json": ((dict,), "a table"),
    "json_config": ((dict,), "a table"),
    "dict_or_str": ((dict, str), "a table or a string"),
    "human_int": ((int, str), 'an integer or a string such as "8g"'),
    "human_int_auto": ((int, str), 'an integer, "auto" or "8k"'),
    "device_ids": ((str, list), 'a string such as "2,3" or an array'),
}
_TAKES_A_STRING: tuple[tuple[type, ...], str] = ((str,), "a string")


def _scalar_problem(
    flag: Flag, kind: Kind, value: Any, version: str, *, alone: bool, in_list: bool = True
) -> Problem | None:
    """Why one value (an option's own, or an item of its array) is refused: its place in a list, a TOML value
    with no command-line form, its TOML type for the kind of flag, then what vLLM reads from it."""
    found = _unrepresentable_problem(flag, kind.base, value, version) or _list_word_problem(value, alone=alone)
    if found is not None:
        return found
    if kind.base == "str" and isinstance(value, int) and not isinstance(value, bool) and digits_option(flag):
        value = str(value)  # argparse receives the digits and reads them as the string they spell
    expected = _expected_type(flag, kind.base, value)
    if expected is not None:
        return Problem(f"expected {expected}, got {toml_type(value)}", _type_fix(flag, kind.base, value, version))
    if isinstance(value, str):
        return _string_problem(flag, kind, value, version, in_list=in_list)
    if flag.choices and not isinstance(value, (dict, list)):
        return _choice_problem(flag, value, version)
    return None


def _list_word_problem(value: Any, *, alone: bool) -> Problem | None:
    """A value that argparse would read as an option because it shares its option with other values."""
    word = _word(value)
    if alone or not word.startswith("-") or _LIST_NEGATIVE.match(word):
        return None
    # only a lone value can be glued (`--opt=-x`); in a list argparse reads '-x' as an option, and
    # vLLM's dotted-key handling rewrites any '-' word holding a '.'
    return Problem(
        f"{word!r} starts with '-': in a list of values vLLM's parser reads it as an option",
        "make it the only value of the array, or remove the leading '-'",
    )


def _unrepresentable_problem(flag: Flag, base: str, value: Any, version: str) -> Problem | None:
    """A TOML value with no command-line form (`_unrepresentable`), whatever the option."""
    why = _unrepresentable(value)
    if not why:
        return None
    return Problem(f"{toml_type(value)} cannot be passed to vLLM: {why}", f"write {_example(flag, base, version)}")


def _expected_type(flag: Flag, base: str, value: Any) -> str | None:
    """What the kind of flag takes, in the words of a refusal, when `value` is not of it; None when it is."""
    if base == "optional_value":
        return None if value is True or isinstance(value, str) else "true or a string"
    types: tuple[type, ...]
    if base == "json" and json_is_list(flag):
        types, expected = (list,), "an array (vLLM reads this option as a JSON list)"
    else:
        types, expected = _TAKES.get(base, _TAKES_A_STRING)
    return None if isinstance(value, types) and not isinstance(value, bool) else expected


def _type_fix(flag: Flag, base: str, value: Any, version: str) -> str:
    """The fix for a value of the wrong TOML type: the same value written as the right one, when that passes."""
    fix = f"write {_example(flag, base, version)}"
    if isinstance(value, str) and base in ("int", "float"):
        try:
            number = int(value) if base == "int" else float(value)
        except ValueError:
            return fix
        return _fix(flag, version, "write it without quotes: ", number, fix)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and base == "str":
        return _fix(flag, version, "write it in quotes: ", str(value), fix)
    if base == "optional_value" and value is False:
        return f"remove {flag.dest} for vLLM's default; `false` has no command-line form"
    return fix


def _string_problem(flag: Flag, kind: Kind, value: str, version: str, *, in_list: bool) -> Problem | None:
    """What vLLM makes of a string of the right type: a number it cannot read, None, JSON, or a refused choice."""
    base = kind.base
    if base in ("human_int", "human_int_auto"):
        found = _human_int_problem(flag, base, value)
        if found is not None:
            return found
    if kind.optional and value in ("", "None") and base != "dict_or_str":
        return _none_word_problem(flag, value, in_list=in_list)
    if base == "dict_or_str" and LOOKS_LIKE_OBJECT.match(value):
        return Problem("a string that looks like a JSON object is read by vLLM as JSON", "write it as a TOML table")
    return _choice_problem(flag, value, version) or _enum_problem(flag, value, version)


def _human_int_problem(flag: Flag, base: str, value: str) -> Problem | None:
    """A string `human_readable_int` (or `human_readable_int_or_auto`) refuses."""
    try:
        (human_readable_int if base == "human_int" else human_readable_int_or_auto)(value)
    except ValueError:
        return Problem(
            f"{value!r} is not a number vLLM reads: write digits, optionally with one suffix "
            "k/m/g/t (x1000) or K/M/G/T (x1024, whole numbers only)",
            f'write e.g. {flag.dest} = "8k" or {flag.dest} = 8192',
        )
    return None


def _none_word_problem(flag: Flag, value: str, *, in_list: bool) -> Problem | None:
    """'' or 'None' for an `optional_type` option: vLLM reads None, which is not the string it says."""
    # a lone value: vLLM starts with None, as if the option were left out; in a list, None is
    # an item the config class refuses; with choices, argparse checks None against them (0.31.0 on
    # lists None itself for --spec-method, earlier releases the string 'None': "invalid choice: None")
    refused = flag.choices is not None and len(flag.choices) > 0 and None not in flag.choices
    if in_list and not refused and flag.choices:
        # argparse takes the None item (0.31.0+ `--collect-detailed-traces`); the config class judges
        # it (vllm/constraints.py: ObservabilityConfig's Literal refuses it)
        return None
    return Problem(
        f"vLLM reads {value!r} as no value (None) for this option, not as a string"
        + (f', and None is not among its choices: "{invalid_choice(flag, None)}"' if refused else ""),
        f"remove {flag.dest} (or unset it) for vLLM's default",
        warning=not in_list and flag.default is None and not refused,
    )


# (flag identity, release, scalar type, scalar) -> (the flag, its answer): lint asks the same question of the same
# scalar in hundreds of stacks; the flag is kept, so its identity cannot be reused while the answer is
_ANSWERS: dict[tuple[int, str, type, Any], tuple[Flag, Problem | None]] = {}
_ANSWERS_KEPT = 100_000


def problem(flag: Flag, value: Any, version: str) -> Problem | None:
    """Why `value` (as written in TOML) is not a valid value of `flag` for vLLM `version`, or None."""
    if type(value) not in (str, int, float, bool):
        return _problem(flag, value, version)
    key = (id(flag), version, type(value), value)
    known = _ANSWERS.get(key)
    if known is not None and known[0] is flag:
        return known[1]
    if len(_ANSWERS) >= _ANSWERS_KEPT:
        _ANSWERS.clear()
    found = _ANSWERS[key] = (flag, _problem(flag, value, version))
    return found[1]


def _problem(flag: Flag, value: Any, version: str) -> Problem | None:
    kind = kind_of(flag)
    if kind.base == "bool":
        if isinstance(value, bool):
            return None
        fix = f"write {flag.dest} = true or {flag.dest} = false"
        if isinstance(value, str) and value.lower() in ("true", "false"):
            fix = f"write it without quotes: {flag.dest} = {value.lower()}"
        return Problem(f"expected a boolean, got {toml_type(value)}", fix)
    if flag.positional or flag.dest == "model":
        if not isinstance(value, str):
            return Problem(f"expected a string, got {toml_type(value)}", f'write {flag.dest} = "org/model"')
        if value.startswith("-") and value != "-":
            return Problem(f"{value!r} starts with '-': vLLM cannot read it as the model", "give the model's path")
        return None
    if flag.takes_many or flag.is_append:
        if not isinstance(value, list):
            if flag.nargs in ("+", "*") or flag.is_append:
                # one value written alone means a list of one (`served_model_name = "qwen"`)
                return _scalar_problem(flag, kind, value, version, alone=True)
            return Problem(
                f"expected an array (the option takes exactly {flag.nargs} values), got {toml_type(value)}",
                f"write {flag.dest} = [{', '.join(['...'] * int(flag.nargs or 1))}]",
            )
        if not value and (flag.nargs == "+" or isinstance(flag.nargs, int)):
            return Problem("expected at least one value", f"remove {flag.dest} (or unset it) for vLLM's default")
        if isinstance(flag.nargs, int) and len(value) != flag.nargs:
            return Problem(f"expected exactly {flag.nargs} values, got {len(value)}", "")
        for index, item in enumerate(value):
            found = _scalar_problem(flag, kind, item, version, alone=len(value) == 1 or flag.is_append)
            if found:
                return Problem(found.message, found.fix, (index,))
        return None
    return _scalar_problem(flag, kind, value, version, alone=True, in_list=False)


# ---- rendering ------------------------------------------------------------------------------------------


def _word(value: Any) -> str:
    """One value as a command-line word."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return compact_json(value)
    return str(value)


def glued(option: str, word: str) -> list[str]:
    """argparse takes a separate word that starts with '-' for an option: glue such a value with '='."""
    return [f"{option}={word}"] if word.startswith("-") else [option, word]


def as_args(flag: Flag, value: Any) -> list[str]:
    """The command-line words that give `flag` the value `value` (DESIGN section 7)."""
    kind = kind_of(flag)
    if kind.base == "bool":
        option = flag.true_option if value else flag.false_option
        return [option] if option else []
    if kind.base == "optional_value" and value is True:
        return [flag.option]
    if kind.base == "device_ids" and isinstance(value, list):
        return glued(flag.option, ",".join(str(v) for v in value))
    if flag.is_append:
        out: list[str] = []
        for item in value if isinstance(value, list) else [value]:
            out += glued(flag.option, _word(item))
        return out
    if flag.takes_many:
        items = value if isinstance(value, list) else [value]
        if not items:
            return []
        if len(items) == 1:
            return glued(flag.option, _word(items[0]))
        # argparse gives a glued `--opt=v` exactly one value, so a list follows the bare option
        return [flag.option, *[_word(v) for v in items]]
    return glued(flag.option, _word(value))


def json_is_list(flag: Flag) -> bool:
    """A plain `json.loads` option whose value is a JSON list (allowed_origins), judged by its default."""
    return isinstance(flag.default, list)
