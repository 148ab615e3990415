"""`profilekit flags`: search a release's flag catalogue offline, by substring or glob.

This path is meant to answer instantly (unlike `vllm serve --help=...`, ~10 s), so it imports only the
catalogue: no pydantic, no jinja, no layers.
"""

from __future__ import annotations

import fnmatch
import json
from typing import TYPE_CHECKING, Any

from profilekit.vllm.catalogue import enum_values, kind_of

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Catalogue, Flag

_GLOB = set("*?[")
_TOML_TYPES = {
    "bool": "boolean",
    "int": "integer",
    "float": "number",
    "str": "string",
    "json": "table (JSON)",
    "json_config": "table (JSON)",
    "dict_or_str": "table (JSON) or string",
    "human_int": 'integer or string like "8k", "1G"',
    "human_int_auto": 'integer, "auto", or string like "128k"',
    "reasoning_parser": 'string ("none" for no parser)',
    "lowered_choice": "string",
    "device_ids": 'string "2,3" or array',
    "optional_value": "true or string",
}


# Short forms vLLM's FlexibleArgumentParser rewrites before argparse sees them (vllm/utils/argparse_utils.py,
# every release 0.27.0-0.33.0: `-O3`, `-O=3` and `-O 3` become `--optimization-level 3`), so argparse's own
# option strings, and the catalogue, never show them.
SHORT_FORMS = {"-O": "optimization_level"}


def _short_form(pattern: str) -> str | None:
    """The dest that a pattern written as a rewritten short form (`-O`, `-O3`) names, case as vLLM matches it."""
    for short, dest in SHORT_FORMS.items():
        if pattern.startswith(short) and not pattern.startswith("--"):
            return dest
    return None


def _norm(text: str) -> str:
    return text.lower().replace("_", "-")


def search(catalogue: Catalogue, pattern: str | None) -> list[Flag]:
    """Flags whose dest or option strings match `pattern` (a glob if it has * ? [, else a substring that
    may also match the help text); dashes and underscores are one character, case is ignored."""
    flags = sorted(catalogue.flags.values(), key=lambda f: f.option)
    if not pattern:
        return flags
    wanted = _norm(pattern)
    if _GLOB & set(pattern):
        found = []
        for flag in flags:
            names = [_norm(flag.dest), *(_norm(o).lstrip("-") for o in flag.accepted), *map(_norm, flag.accepted)]
            if any(fnmatch.fnmatchcase(name, wanted) for name in names):
                found.append(flag)
        return found
    bare = wanted.lstrip("-")
    short = _short_form(pattern)
    exact = [
        f
        for f in flags
        if f.dest == short or bare == _norm(f.dest) or any(bare == _norm(o).lstrip("-") for o in f.accepted)
    ]
    by_name = [
        f for f in flags if f not in exact and (wanted in _norm(f.dest) or any(wanted in _norm(o) for o in f.accepted))
    ]
    by_help = [f for f in flags if f not in exact and f not in by_name and wanted in _norm(f.help_text)]
    # an exact name first, then names that contain the pattern, then help texts that mention it
    return exact + by_name + by_help


def flag_type(flag: Flag) -> str:
    """What a layer writes for this flag, in words."""
    kind = kind_of(flag)
    base = _TOML_TYPES.get(kind.base, "string")
    if flag.takes_many or flag.is_append:
        element = base if base in ("integer", "number", "string") else "value"
        what = "array of " + {"integer": "integers", "number": "numbers", "string": "strings"}.get(element, "values")
        return what + (" (the option is repeated per value)" if flag.is_append else "")
    return base


def _default(flag: Flag) -> str | None:
    value = flag.default
    if value is None or value == "==SUPPRESS==":
        return None
    if isinstance(value, str) and value.endswith("()"):
        return None  # a config object left at its defaults
    return json.dumps(value, ensure_ascii=False)


def _values(flag: Flag) -> str | None:
    choices = [c for c in flag.choices or () if c is not None]
    if choices:
        return "choices: " + ", ".join(str(c) for c in choices)
    spec = enum_values(flag)
    if spec is not None:
        names, folded = spec
        return "values: " + ", ".join(names) + (" (any case; checked after parsing)" if folded else "")
    return None


def as_text(flags: list[Flag]) -> str:
    lines: list[str] = []
    for flag in flags:
        head = ", ".join([*flag.option_strings, *(f"{s}<value>" for s, d in SHORT_FORMS.items() if d == flag.dest)])
        tags = [f"serve.{flag.dest}"]
        if flag.deprecated:
            tags.append("deprecated")
        lines.append(f"{head}  ({'; '.join(tags)})")
        facts = [f"type: {flag_type(flag)}"]
        values = _values(flag)
        if values:
            facts.append(values)
        default = _default(flag)
        if default is not None:
            facts.append(f"default: {default}")
        lines.append("    " + "    ".join(facts))
        lines.extend(f"    {line}".rstrip() for line in flag.help_text.splitlines())
    return "\n".join(lines)


def as_json(catalogue: Catalogue, flags: list[Flag], pattern: str | None) -> str:
    rows: list[dict[str, Any]] = []
    for flag in flags:
        choices = [c for c in flag.choices or () if c is not None]
        spec = enum_values(flag)
        rows.append(
            {
                "dest": flag.dest,
                "option_strings": list(flag.option_strings),
                "accepted_option_strings": list(flag.accepted),
                "type": flag.type,
                "toml_type": flag_type(flag),
                "nargs": flag.nargs,
                "choices": choices or None,
                "values_after_parse": spec[0] if spec else None,
                "default": flag.default,
                "deprecated": flag.deprecated,
                "help": flag.help_text,
            }
        )
    data = {"vllm_version": catalogue.version, "pattern": pattern, "flags": rows}
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)
