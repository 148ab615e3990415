"""Flag catalogues: every `vllm serve` option of one release from vLLM's own parser, and each flag's type.

The catalogue names each flag's argparse `type` (reference/vllm-facts.md section 6); `kind_of` reads it as
the one model of each flag's type that `values` (a TOML value judged and rendered), `constraints` (what the
parser stored, against the config classes), `words`, `cmdline` and `flagsearch` share, and `parsed` predicts
what vLLM's parser stores for a value. It lives here, below all of them: `values` offers only fixes that
`constraints` passes, so `constraints` cannot build on `values`. The conversions mirror
`vllm/engine/arg_utils.py` and `vllm/utils/argparse_utils.py` (0.27.0-0.33.0).
"""

from __future__ import annotations

import difflib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from profilekit.records import record
from profilekit.vllm import CATALOGUES

_BOOL_ACTIONS = {
    "EnableDisableAction",
    "BooleanOptionalAction",
    "_StoreTrueAction",
    "_StoreFalseAction",
    "StoreBoolean",
}
# `human_readable_int` (vllm/utils/argparse_utils.py): decimal k/m/g/t, binary K/M/G/T without decimals.
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
# options whose argparse type is a lambda in vLLM 0.32+: `lambda s: s.lower().replace("-", "_")`
_LOWERED_CHOICE_TYPES = {"<lambda>"}


@record(frozen=True, slots=True)
class Flag:
    """One argparse action of `vllm serve`."""

    dest: str
    option_strings: tuple[str, ...]
    accepted: tuple[str, ...]
    type: str | None
    choices: tuple[Any, ...] | None
    default: Any
    nargs: Any
    action: str
    deprecated: bool
    help: str
    group: str
    enum_members: tuple[str, ...] | None
    enum_class: str | None = None
    positional: bool = False
    help_text: str = ""  # the whole help text (`help` is its first line, for one-line messages)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Flag:
        enum = raw.get("enum_after_parse") or {}
        return cls(
            dest=raw["dest"],
            option_strings=tuple(raw.get("option_strings") or ()),
            accepted=tuple(raw.get("accepted_option_strings") or raw.get("option_strings") or ()),
            type=raw.get("type"),
            choices=tuple(raw["choices"]) if raw.get("choices") is not None else None,
            default=raw.get("default"),
            nargs=raw.get("nargs"),
            action=raw.get("action") or "_StoreAction",
            deprecated=bool(raw.get("deprecated")),
            help=raw.get("help_first_line") or "",
            group=raw.get("group") or "",
            enum_members=tuple(enum["member_names"]) if enum.get("member_names") else None,
            enum_class=enum.get("enum"),
            positional=bool(raw.get("positional")) or not raw.get("option_strings"),
            # argparse prints `%%` as `%`
            help_text=(raw.get("help") or raw.get("help_first_line") or "").replace("%%", "%"),
        )

    @property
    def is_bool(self) -> bool:
        return self.action in _BOOL_ACTIONS or self.type == "bool"

    @property
    def is_append(self) -> bool:
        return self.action == "_AppendAction"

    @property
    def takes_many(self) -> bool:
        # nargs=N (N >= 1) also stores a list; nargs=0 is a boolean switch
        return self.nargs in ("+", "*") or (isinstance(self.nargs, int) and self.nargs >= 1 and not self.is_bool)

    @property
    def is_json(self) -> bool:
        return bool(self.type) and "json" in str(self.type)

    @property
    def option(self) -> str:
        """The long option string rendered for a value: the one spelled like the dest if it exists."""
        natural = "--" + self.dest.replace("_", "-")
        if natural in self.option_strings:
            return natural
        longs = [o for o in self.option_strings if o.startswith("--")]
        return longs[0] if longs else self.option_strings[0]

    def sets_true(self, option: str) -> bool:
        """Whether `option` sets this boolean dest to true (vLLM's EnableDisableAction / BooleanOptionalAction).

        argparse's BooleanOptionalAction adds a hidden `--no-X` for each long option `--X` it was given, and
        vLLM's EnableDisableAction (0.31+) also pairs `--enable-X` with `--disable-X`; both set the dest to
        false (`vllm/utils/argparse_utils.py`). The base options are the ones whose `--no-` form exists.
        """
        if self.action == "_StoreFalseAction":
            return False
        if not self.is_bool or self.action == "_StoreTrueAction":
            return True
        if option.startswith("--no-") and "--" + option[5:] in self.accepted:
            return False
        for prefix, inverse in (("--disable-", "--enable-"), ("--enable-", "--disable-")):
            if option.startswith(prefix):
                twin = inverse + option[len(prefix) :]
                if twin in self.accepted and "--no-" + twin[2:] in self.accepted:
                    return False
        return True

    @property
    def true_option(self) -> str | None:
        """The option string that sets the dest to true: the one spelled like the dest if it exists."""
        if self.action == "_StoreFalseAction":
            return None
        natural = "--" + self.dest.replace("_", "-")
        if natural in self.accepted and self.sets_true(natural):
            return natural
        for pool in (self.option_strings, self.accepted):
            for option in pool:
                if option.startswith("--") and self.sets_true(option):
                    return option
        positives = [o for o in self.option_strings if self.sets_true(o)]
        return positives[0] if positives else None

    @property
    def false_option(self) -> str | None:
        """The visible option string that sets the dest to false; None for a store-true flag.

        A visible inverse (`--disable-X` for `enable_X`) is preferred to a `--no-X` form, which
        vLLM 0.31+ hides from `--help` for paired flags.
        """
        if self.action == "_StoreTrueAction" or not self.is_bool:
            return None
        negatives = [o for o in self.option_strings if o.startswith("--") and not self.sets_true(o)]
        negatives.sort(key=lambda o: o.startswith("--no-"))
        if negatives:
            return negatives[0]
        hidden = [o for o in self.accepted if o.startswith("--") and not self.sets_true(o)]
        return hidden[0] if hidden else None


class Catalogue:
    """The flags of one vLLM release, looked up by dest or by any accepted option string."""

    def __init__(self, version: str, flags: list[Flag]) -> None:
        self.version = version
        self.flags = {f.dest: f for f in flags if f.option_strings}
        self.positional = [f for f in flags if not f.option_strings]
        self.by_option: dict[str, Flag] = {}
        for f in flags:
            for option in f.accepted:
                self.by_option.setdefault(option, f)

    def flag(self, dest: str) -> Flag | None:
        return self.flags.get(dest)

    def resolve(self, key: str) -> Flag | None:
        """A `serve` key: the dest (dashes or underscores), a long option without `--`, or a short alias.

        A spelling that sets a boolean to false (`no_trust_remote_code`, `disable_prefix_caching` for
        `enable_prefix_caching`) does not resolve: as a key it would read as the opposite of what it says.
        """
        found = self.flags.get(key.replace("-", "_"))
        if found is not None:
            return found
        for option in self._spellings(key):
            found = self.by_option.get(option)
            if found is not None and found.sets_true(option):
                return found
        return None

    def negated(self, key: str) -> tuple[Flag, str] | None:
        """The boolean flag and option string that a key spelled like a false-setting option names."""
        for option in self._spellings(key):
            found = self.by_option.get(option)
            if found is not None and found.is_bool and not found.sets_true(option):
                return found, option
        return None

    @staticmethod
    def _spellings(key: str) -> tuple[str, ...]:
        return ("--" + key, "--" + key.replace("_", "-"), "-" + key)

    def suggest(self, key: str) -> str | None:
        """The dest closest to `key` among every dest and option string (difflib), or None."""
        names: dict[str, str] = {}
        for flag in self.flags.values():
            names.setdefault(flag.dest, flag.dest)
            for option in flag.accepted:
                if option.startswith("--") and flag.sets_true(option):
                    names.setdefault(option[2:].replace("-", "_"), flag.dest)
        close = difflib.get_close_matches(key.replace("-", "_"), list(names), n=1, cutoff=0.6)
        return names[close[0]] if close else None


def catalogue_path(version: str) -> Path:
    return CATALOGUES / f"vllm-{version}.json"


@cache
def load_catalogue(version: str) -> Catalogue | None:
    """The shipped catalogue of `version`, or None when this build ships none for it."""
    path = catalogue_path(version)
    if not path.is_file():
        return None
    raw = json.loads(path.read_text(encoding="utf-8"))
    return Catalogue(version, [Flag.from_json(entry) for entry in raw])


# ---- each flag's argparse type ------------------------------------------------------------------------


@record(frozen=True, slots=True)
class Kind:
    """The argparse type of one flag, as profilekit reasons about it."""

    base: str  # bool | int | float | str | json | json_config | dict_or_str | human_int | human_int_auto |
    #            reasoning_parser | lowered_choice | device_ids | optional_value
    optional: bool  # vLLM's `optional_type`: '' and 'None' are read as None


def kind_of(flag: Flag) -> Kind:
    raw = flag.type or "str"
    optional = raw.startswith("optional:")
    name = raw.removeprefix("optional:")
    if flag.is_bool:
        return Kind("bool", False)
    if flag.dest == "device_ids":
        return Kind("device_ids", optional)
    if flag.nargs == "?" and not flag.positional and not flag.takes_many:
        # `bool | str | None` fields (hf_token): a bare flag means True, a value is a string
        return Kind("optional_value", optional)
    if name in ("int", "float", "str"):
        return Kind(name, optional)
    if name == "json":
        return Kind("json", optional)
    if name.startswith("json:"):
        return Kind("json_config", optional)
    if name == "union_dict_and_str":
        return Kind("dict_or_str", optional)
    if name == "human_readable_int":
        return Kind("human_int", optional)
    if name == "human_readable_int_or_auto":
        return Kind("human_int_auto", optional)
    if name == "parse_reasoning_parser":
        return Kind("reasoning_parser", optional)
    if name in _LOWERED_CHOICE_TYPES and flag.choices:
        return Kind("lowered_choice", optional)
    return Kind("str", optional)


def human_readable_int(text: str) -> int:
    """vLLM's `human_readable_int`: '1k' -> 1000, '1K' -> 1024, '25.6k' -> 25600, else int(text)."""
    text = text.strip()
    match = _HUMAN_INT.fullmatch(text)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        return int(number) * _BINARY[suffix]  # ValueError for decimals, as in vLLM
    return int(text)


def human_readable_int_or_auto(text: str) -> int:
    text = text.strip()
    if text == "-1" or text.lower() == "auto":
        return -1
    return human_readable_int(text)


# ---- enums converted after parsing ----------------------------------------------------------------


def enum_values(flag: Flag) -> tuple[list[str], bool] | None:
    """The accepted spellings of an enum converted after parsing, and whether case is ignored.

    vLLM converts most of these with `Enum[value.upper()]` (mamba_backend, attention backends), so member
    names in any case are valid; attention backends also take "auto" (`AttentionConfig.validate_backend_
    before`). `optimization_level` is an IntEnum validated by value ("0".."3").
    """
    if not flag.enum_members:
        return None
    if flag.enum_class == "OptimizationLevel":
        return [name.removeprefix("O") for name in flag.enum_members], False
    names = [name.lower() for name in flag.enum_members]
    if flag.enum_class == "AttentionBackendEnum" and flag.dest != "mm_encoder_attn_backend":
        names.append("auto")  # MultiModalConfig converts without that step: 'auto' is no member there
    return names, True


# ---- what vLLM's parser stores ---------------------------------------------------------------------------


def _parsed_scalar(flag: Flag, kind: Kind, value: Any) -> Any:
    base = kind.base
    if kind.optional and value in ("", "None") and base != "dict_or_str":
        return None  # vLLM's optional_type
    if base == "float":
        return float(value)
    if base in ("human_int", "human_int_auto"):
        if isinstance(value, str):
            return (human_readable_int if base == "human_int" else human_readable_int_or_auto)(value)
        return value
    if base == "reasoning_parser" and isinstance(value, str):
        return "" if value.lower() == "none" else value
    if base == "lowered_choice" and isinstance(value, str):
        return value.lower().replace("-", "_")
    if base == "device_ids":
        text = ",".join(str(v) for v in value) if isinstance(value, list) else value
        return [int(p) if p.isdigit() else p for p in (part.strip() for part in text.split(","))]
    if base == "str" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # argparse stores the digits as a string
    return value


def parsed(flag: Flag, value: Any) -> Any:
    """The value vLLM's parser stores in the namespace for a valid TOML `value` (JSON options as dicts)."""
    kind = kind_of(flag)
    if kind.base == "bool":
        return bool(value)
    if flag.takes_many or flag.is_append:
        items = value if isinstance(value, list) else [value]
        return [_parsed_scalar(flag, kind, item) for item in items]
    return _parsed_scalar(flag, kind, value)
