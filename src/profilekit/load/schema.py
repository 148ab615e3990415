"""The JSON Schema (draft 2020-12) of the layer file for one vLLM release, for editors (Taplo) and CI.

`[layer]`, `[model]`, `[env]` and `[roles.*]` come from the pydantic models of the layer file (`models.py`);
`serve` is built from the release's flag catalogue, one entry per option under every spelling profilekit
accepts for it (`Catalogue.resolve`), so a misspelt key is refused. Each value is typed as `vllm/values.py`
reads it, with the closed sets and numeric bounds that profilekit itself enforces, and a JSON-valued option
lists the keys its config class takes. The schema may accept a value profilekit refuses (cross-option rules,
most values inside JSON tables), never the other way round (tests/test_layerschema.py probes every option):
a `${...}` reference string is accepted wherever a value goes, since profilekit resolves it before it checks.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from profilekit.load.models import LayerFile
from profilekit.vllm.catalogue import enum_values, kind_of
from profilekit.vllm.constraints import config_problems, load_values
from profilekit.vllm.values import digits_option, json_is_list, problem

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Catalogue, Flag
    from profilekit.vllm.constraints import Values

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# a string holding `${`: a reference (references.py), resolved to a value of any type before any check
REFERENCE: dict[str, Any] = {"type": "string", "pattern": r"\$\{"}
_META = frozenset(".^$|?*+()[]{}\\")
_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}


def layer_schema(catalogue: Catalogue) -> dict[str, Any]:
    """The schema of one layer file targeting `catalogue`'s release."""
    version = catalogue.version
    values = load_values(version)
    schema = LayerFile.model_json_schema()
    options = {dest: option_schema(flag, version, values) for dest, flag in sorted(catalogue.flags.items())}
    serve = {
        "type": "object",
        "description": f"Options of `vllm serve` {version}, by vLLM's names (dashes or underscores: one option)",
        "additionalProperties": False,
        "properties": {key: {"$ref": f"#/$defs/options/{dest}"} for key, dest in sorted(spellings(catalogue).items())},
    }
    defs = schema.setdefault("$defs", {})
    defs["options"] = options
    defs["Serve"] = serve
    schema["properties"]["serve"] = {"$ref": "#/$defs/Serve"}
    defs["Role"]["properties"]["serve"] = {"$ref": "#/$defs/Serve"}
    for table in (schema, defs["Role"]):  # an env name outside the pattern is refused (models.ENV_NAME)
        table["properties"]["env"]["additionalProperties"] = False
    return {
        **schema,
        "$schema": DIALECT,
        "title": f"profilekit layer (vLLM {version})",
        "description": f"A profilekit layer file (profiles/**/*.toml) for vLLM {version}; "
        f"`profilekit schema --vllm-version {version}` writes this schema",
    }


def dumps(schema: dict[str, Any]) -> str:
    """The schema as text that is stable from run to run (sorted keys)."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def spellings(catalogue: Catalogue) -> dict[str, str]:
    """Every `serve` key profilekit reads as an option (dest, dashed form, long and short aliases) -> its dest."""
    out: dict[str, str] = {}
    for flag in catalogue.flags.values():
        candidates = {flag.dest, flag.dest.replace("_", "-")}
        for option in flag.accepted:
            name = option[2:] if option.startswith("--") else option[1:]
            candidates |= {name, name.replace("-", "_")}
        for key in candidates:
            if key and catalogue.resolve(key) is flag:
                out[key] = flag.dest
    return out


def option_schema(flag: Flag, version: str, values: Values | None) -> dict[str, Any]:
    """One option's value: its type, closed set and bounds as profilekit checks them, help text and default."""
    kind = kind_of(flag)
    if kind.base == "bool":
        typed: dict[str, Any] = {"type": "boolean"}
    elif flag.positional or flag.dest == "model":
        typed = {"type": "string", "not": {"pattern": "^-."}}  # a word starting with '-' reads as an option
    elif flag.takes_many or flag.is_append:
        item = _or_reference(_scalar(flag, version, values))
        if isinstance(flag.nargs, int):
            typed = {"type": "array", "items": item, "minItems": flag.nargs, "maxItems": flag.nargs}
        else:  # one value written alone means a list of one
            array: dict[str, Any] = {"type": "array", "items": item}
            if flag.nargs == "+":
                array["minItems"] = 1
            typed = {"anyOf": [item, array]}
    else:
        typed = _scalar(flag, version, values)
    out = _or_reference(typed)
    help_text = flag.help_text.strip() or flag.help
    out["description"] = (help_text + "\n\n" if help_text else "") + f"vLLM option {flag.option}"
    if flag.default is not None:
        out["default"] = flag.default
    if flag.deprecated:
        out["deprecated"] = True
    return out


def _or_reference(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, or a reference string; the typed branch reports its own error (better than an anyOf's)."""
    if schema.get("type") == "string" and "enum" not in schema and "pattern" not in schema and "not" not in schema:
        return dict(schema)
    return {"if": REFERENCE, "then": True, "else": schema}


def _scalar(flag: Flag, version: str, values: Values | None) -> dict[str, Any]:
    """One value (an array item for a multi-value option) as `values._scalar_problem` takes it."""
    base = kind_of(flag).base
    bounds = _bounds(flag, values)
    if base == "int":
        return {"type": "integer", **bounds, **_number_choices(flag)}
    if base == "float":
        return {"type": "number", **bounds, **_number_choices(flag)}
    if base == "json" and json_is_list(flag):
        return {"type": "array"}
    if base == "json_config":
        return _config_table(flag, values)
    if base == "json":
        return {"type": "object"}
    if base == "dict_or_str":
        return {"type": ["object", "string"]}
    if base in ("human_int", "human_int_auto"):
        return {"anyOf": [{"type": "integer", **bounds}, {"type": "string"}]}
    if base == "optional_value":
        return {"anyOf": [{"const": True}, {"type": "string"}]}
    if base == "device_ids":
        return {"type": ["string", "array"]}
    text = {"type": "string", **_closed_set(flag, version, values)}
    if digits_option(flag) and "enum" in text:
        numbers = [int(word) for word in text["enum"] if word.isdigit()]
        return {"anyOf": [text, {"type": "integer", "enum": numbers}]}
    return text


def _config_table(flag: Flag, values: Values | None) -> dict[str, Any]:
    """A `json:<Config>` option's table: the keys of its config class, which refuses others while vLLM parses."""
    config = values.json_class(flag.dest) if values is not None else None
    entry = (values.configs.get(config) or {}) if values is not None and config is not None else {}
    if entry.get("extra") != "forbid":
        return {"type": "object"}
    fields = {key: field for key, field in (entry.get("fields") or {}).items() if field.get("init") is not False}
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {key: _config_field(field) for key, field in sorted(fields.items())},
    }


def _config_field(field: dict[str, Any]) -> dict[str, Any]:
    """One key of a config table: its string literals (exact in pydantic's JSON mode), else any value.

    pydantic's lax JSON mode takes much more than a TOML type says ("1" for an int, "yes" for a bool), so
    other values are left to profilekit.
    """
    if field.get("type") == "nullable":
        field = field.get("schema") or {}
    expected = field.get("expected") or []
    if field.get("type") == "literal" and not field.get("validators") and all(isinstance(v, str) for v in expected):
        return _or_reference({"enum": expected})
    return {}


def _number_choices(flag: Flag) -> dict[str, Any]:
    choices = [c for c in flag.choices or () if isinstance(c, (int, float)) and not isinstance(c, bool)]
    return {"enum": choices} if choices else {}


def _bounds(flag: Flag, values: Values | None) -> dict[str, Any]:
    """The numeric bounds of the option's config field, where profilekit checks them whatever else is set."""
    entry = values.option(flag.dest) if values is not None else None
    if entry is None or entry.get("when"):
        return {}
    schema = entry.get("schema") or {}
    if schema.get("type") == "nullable":
        schema = schema.get("schema") or {}
    if schema.get("type") not in ("int", "float") or schema.get("validators"):
        return {}  # a validator may rewrite the value before the bound applies
    return {name: schema[key] for key, name in _BOUNDS.items() if key in schema}


def _closed_set(flag: Flag, version: str, values: Values | None) -> dict[str, Any]:
    """`enum` (or a pattern, where vLLM ignores case) for an option with a closed set of string values."""
    words: list[str] = []
    folded = kind_of(flag).base == "lowered_choice"
    spec = enum_values(flag)
    if spec is not None:
        words, folded = spec
    elif flag.choices:
        words = [str(c) for c in flag.choices if isinstance(c, str)]
        if len(words) != len(flag.choices):
            return {}  # None or numbers among the choices: leave the value open
    else:
        words = _literal(flag, values)
    if not words:
        return {}
    accepted = [word for word in words if _accepted(flag, word, version)]
    if not accepted:
        return {}
    # "" and "None" read as no value: a warning, not a refusal, for some optional options
    extra = [word for word in ("", "None") if _accepted(flag, word, version)]
    if folded:
        dashes = kind_of(flag).base == "lowered_choice"
        alternatives = [_any_case(word, dashes=dashes) for word in accepted] + [_literal_text(w) for w in extra]
        return {"pattern": "^(" + "|".join(alternatives) + ")$"}
    return {"enum": sorted(set(accepted + extra), key=(accepted + extra).index)}


def _accepted(flag: Flag, value: str, version: str) -> bool:
    """Whether profilekit takes `value` for `flag` alone (with a warning at most): argparse, then the config class."""
    found = problem(flag, value, version)
    if found is not None and not found.warning:
        return False
    return not config_problems(flag, value, version, serve={flag.dest: value})


def _literal(flag: Flag, values: Values | None) -> list[str]:
    """The string literal of the option's config field (checked after parsing), when nothing else gates it."""
    entry = values.option(flag.dest) if values is not None else None
    if entry is None or entry.get("when") or flag.takes_many:
        return []
    schema = entry.get("schema") or {}
    if schema.get("type") != "literal" or schema.get("validators"):
        return []
    expected = schema.get("expected") or []
    return [str(v) for v in expected] if all(isinstance(v, str) for v in expected) else []


def _literal_text(word: str) -> str:
    """`word` as a pattern that ECMA 262 and Rust's regex (Taplo) read alike: only metacharacters escaped."""
    return "".join("\\" + char if char in _META else char for char in word)


def _any_case(word: str, *, dashes: bool) -> str:
    """A portable (ECMA 262 and Rust regex) pattern for `word` in any case (and `-` for `_` when `dashes`)."""
    out = []
    for char in word:
        if char.isalpha() and char.lower() != char.upper():
            out.append(f"[{char.lower()}{char.upper()}]")
        elif char == "_" and dashes:
            out.append("[-_]")
        else:
            out.append(_literal_text(char))
    return "".join(out)
