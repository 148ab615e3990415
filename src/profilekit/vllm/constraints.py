"""Value constraints of vLLM's config classes for one release: field bounds, literals, JSON keys, registries.

Read lazily from `catalogues/vllm-X.values.json`, generated with the flag catalogue from the release's
own code (tools/gen_catalogue.py, tools/oracle/constraints.py). Each problem says where vLLM finds it
(`Where`): while argparse reads a `json:<Config>` option, when `create_engine_config` builds a config
object (its rank in that order), in `VllmConfig.__post_init__`, or only when the API server starts.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from profilekit.records import record
from profilekit.vllm import CATALOGUES
from profilekit.vllm.catalogue import human_readable_int_or_auto, kind_of, parsed
from profilekit.vllm.schema import Error, Validator
from profilekit.vllm.versions import SUPPORTED, version_key

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Flag

Stage = Literal["argparse", "config", "post_init", "server"]

# VllmConfig.__post_init__: `reasoning_config.initialize_token_ids` runs after the other post-init checks
# profilekit models (vllm/config/vllm.py, every release 0.27.0-0.33.0)
POST_INIT_REASONING = 30
# VllmConfig.__post_init__: `Executor.get_class` (the async-scheduling block) runs after
# `verify_with_parallel_config` (rules/order.py: -40 .. -20) and before the Mamba checks (5 and up)
POST_INIT_EXECUTOR = -10
# ModelConfig.validate_model_config_after runs after ModelConfig.__post_init__ (rules/order.py `built`: step 0..)
MODEL_AFTER_VALIDATOR = 100
# an exception that escapes pydantic (a bare KeyError) stops vLLM before the option's validation errors
ESCAPES_FIRST = -1
EXECUTORS_BY_NAME = ("ray", "mp", "uni", "external_launcher")  # Executor.get_class, every release 0.27.0-0.33.0


@record(frozen=True, slots=True)
class Where:
    """Where in `vllm serve`'s start-up vLLM makes a check: the stage, and the rank inside it."""

    stage: Stage
    rank: int = 0
    step: int | None = None  # a third number ordering checks inside the rank (a validator after __post_init__)


@record(frozen=True, slots=True)
class ValueProblem:
    """A value (or a key inside a JSON-valued option) that the targeted release refuses."""

    message: str
    fix: str
    path: tuple[str | int, ...]  # below the option: keys and array indexes
    where: Where
    unknown_key: bool = False


@record(frozen=True)
class Values:
    """The values document of one release."""

    version: str
    raw: dict[str, Any]
    # answers that depend on this document alone (a registry, a scalar's field errors), kept: lint asks them
    # for the same values in hundreds of stacks
    memo: dict[tuple[Any, ...], Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def configs(self) -> dict[str, Any]:
        return dict(self.raw.get("configs") or {})

    def option(self, dest: str) -> dict[str, Any] | None:
        found = (self.raw.get("options") or {}).get(dest)
        return found if isinstance(found, dict) else None

    def json_class(self, dest: str) -> str | None:
        found = (self.raw.get("json_options") or {}).get(dest)
        return str(found) if found else None

    def splat(self, dest: str) -> dict[str, Any] | None:
        found = (self.raw.get("splat_options") or {}).get(dest)
        return found if isinstance(found, dict) else None

    def first_read(self, dest: str) -> int | None:
        found = (self.raw.get("first_read") or {}).get(dest)
        return int(found) if found is not None else None

    def construction_rank(self, config: str) -> int | None:
        """The rank at which `create_engine_config` first builds `config` (its validators run then)."""
        found = (self.raw.get("construction_ranks") or {}).get(config)
        return int(found) if found is not None else None

    def registry(self, name: str) -> list[str] | None:
        key = ("registry", name)
        if key not in self.memo:
            found = (self.raw.get("registries") or {}).get(name)
            self.memo[key] = [str(v) for v in found] if isinstance(found, list) else None
        known: list[str] | None = self.memo[key]
        return None if known is None else list(known)

    def has_key(self, config: str, key: str) -> bool:
        fields = (self.configs.get(config) or {}).get("fields") or {}
        return key in fields and fields[key].get("init") is not False


@cache
def load_values(version: str) -> Values | None:
    """The value constraints shipped for `version`, or None when this build ships none."""
    path = CATALOGUES / f"vllm-{version}.values.json"
    if not path.is_file():
        return None
    return Values(version, json.loads(path.read_text(encoding="utf-8")))


def conversion_rank(flag: Flag, version: str) -> int | None:
    """The config-object rank where vLLM converts an enum-typed option (`mamba_backend`), if known."""
    values = load_values(version)
    return values.first_read(flag.dest) if values is not None else None


# ---- speculative decoding: the table and its shorthand options -------------------------------------------

# EngineArgs.create_speculative_config (every release 0.27.0-0.33.0): `--spec-method`, `--spec-model` and
# `--spec-tokens` are merged into `speculative_config` before SpeculativeConfig is built
SPEC_SHORTHANDS = (
    ("spec_method", "method", "--spec-method"),
    ("spec_model", "model", "--spec-model"),
    ("spec_tokens", "num_speculative_tokens", "--spec-tokens"),
)


def speculative_view(serve: dict[str, Any]) -> dict[str, Any] | None:
    """The table vLLM builds SpeculativeConfig from: `speculative_config` with the shorthand options merged.

    None when neither is written (vLLM builds no SpeculativeConfig); a shorthand whose key the table also
    has is left out (vLLM refuses the pair first: `speculative_conflicts`).
    """
    table = serve.get("speculative_config")
    if table is not None and not isinstance(table, dict):
        return None
    merged: dict[str, Any] | None = dict(table) if isinstance(table, dict) else None
    for dest, key, _option in SPEC_SHORTHANDS:
        value = serve.get(dest)
        if value is None or value in ("", "None"):
            continue  # optional_type reads these as None: no value to merge
        if merged is None:
            merged = {}
        merged.setdefault(key, value)
    return merged


def speculative_origin(serve: dict[str, Any], key: str) -> tuple[str, ...]:
    """The `serve` path a key of `speculative_view` was written at: the table's key, or its shorthand option."""
    table = serve.get("speculative_config")
    if isinstance(table, dict) and key in table:
        return ("speculative_config", key)
    for dest, spec_key, _option in SPEC_SHORTHANDS:
        if spec_key == key and serve.get(dest) is not None:
            return (dest,)
    return ("speculative_config", key)


def speculative_conflicts(serve: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(dest, key, option) for each shorthand option whose key `speculative_config` also sets."""
    table = serve.get("speculative_config")
    if not isinstance(table, dict):
        return []
    return [
        (dest, key, option)
        for dest, key, option in SPEC_SHORTHANDS
        if serve.get(dest) is not None and key in table  # checked before vLLM rewrites '-' in the keys
    ]


# ---- one option's value ---------------------------------------------------------------------------------


def argparse_problems(flag: Flag, value: Any, version: str) -> list[ValueProblem]:
    """What vLLM refuses in a `json:<Config>` option's table while argparse reads it (`parse_dataclass`).

    Judged on what a layer writes: a key or value refused here stops `vllm serve` before anything else.
    """
    values = load_values(version)
    config = values.json_class(flag.dest) if values is not None else None
    if values is None or config is None or not isinstance(value, dict):
        return []
    errors = Validator(values.configs, mode="json").check_keys(config, value)
    return [_nested(values, config, error, Where("argparse")) for error in errors]


def config_problems(flag: Flag, value: Any, version: str, *, serve: dict[str, Any]) -> list[ValueProblem]:
    """What the config objects `create_engine_config` builds refuse in an option's effective value.

    `serve` is the role's effective configuration: a config object built only when another option is
    on (LoRAConfig with `enable_lora`), or a registry check that another option switches on or off
    (a tool parser with `enable_auto_tool_choice`, a reasoning parser without a plugin), looks there.
    """
    values = load_values(version)
    if values is None:
        return []
    splat = values.splat(flag.dest)
    if splat is not None:
        if not isinstance(value, dict) or not _holds(splat.get("when"), serve):
            return []
        keys = {str(k).replace("-", "_"): v for k, v in value.items()}  # create_speculative_config does this
        errors = Validator(values.configs, mode="python").check_keys(splat["config"], keys)
        return [_nested(values, splat["config"], error, Where("config", splat["rank"])) for error in errors]
    return (
        _field_problems(values, flag, value, serve)
        + _registry_problems(values, flag, value)
        + _context_problems(values, flag.dest, value, serve)
    )


def _holds(when: list[str] | None, serve: dict[str, Any]) -> bool:
    """Whether the conditions a config object is built under hold in `serve` ("?": unknown, so no)."""
    for condition in when or []:
        if condition.endswith("!=None"):
            ok = serve.get(condition.removesuffix("!=None")) is not None
        elif condition.startswith("!"):
            ok = not serve.get(condition[1:])
        elif condition == "?":
            ok = False
        else:
            ok = bool(serve.get(condition))
        if not ok:
            return False
    return True


def _field_problems(values: Values, flag: Flag, value: Any, serve: dict[str, Any]) -> list[ValueProblem]:
    # an option with choices is judged too: argparse took the value, and the config class judges what it
    # stored (0.27.0-0.30.0 `--collect-detailed-traces` lists 'model,worker', which ObservabilityConfig refuses)
    entry = values.option(flag.dest)
    if entry is None or kind_of(flag).base in ("json", "json_config", "dict_or_str"):
        return []
    if flag.dest == "data_parallel_backend" and serve.get("data_parallel_address") is None:
        assertion = _backend_assertion(values, value)
        if assertion is not None:
            return [assertion]
    if not _holds(entry.get("when"), serve):
        return []
    if not isinstance(value, (str, int, float, bool)):
        return _field_errors(values, flag, value, entry)
    key = ("field", flag.dest, type(value), value)  # a scalar's errors depend on nothing else
    if key not in values.memo:
        values.memo[key] = _field_errors(values, flag, value, entry)
    return list(values.memo[key])


# create_engine_config's data-parallel block, after its raises (rules/dataparallel.py: steps 0-9), right before
# ParallelConfig is built
DATA_PARALLEL_ADDRESS = 10


def _backend_assertion(values: Values, value: Any) -> ValueProblem | None:
    """`if self.data_parallel_address is None:` ray looks the host's address up, anything else must be mp (an
    assertion, every release 0.27.0-0.33.0), before ParallelConfig's field would refuse it (None: the value passes,
    or the release ranks no ParallelConfig and the field's own check stands)."""
    rank = values.construction_rank("ParallelConfig")
    if value in ("ray", "mp") or rank is None:
        return None
    message = f"('data_parallel_backend can only be ray or mp, got %s', {str(value)!r})"
    fix = 'write "mp" (processes on this node) or "ray"'
    return ValueProblem(_says(values.version, message), fix, (), Where("config", rank - 1, DATA_PARALLEL_ADDRESS))


def _field_errors(values: Values, flag: Flag, value: Any, entry: dict[str, Any]) -> list[ValueProblem]:
    """What the option's config field refuses in `value` (`entry`: the option's entry in the values document)."""
    stored = parsed(flag, value)  # one value written alone for a list option is stored as a list
    errors = Validator(values.configs, mode="python").check(entry["schema"], stored)
    out: list[ValueProblem] = []
    count = f"{len(errors)} validation error{'s' if len(errors) > 1 else ''}"
    for error in errors:
        shown = _at(stored if isinstance(stored, list) and not isinstance(value, list) else value, error.path)
        dotted = ".".join(map(str, (entry["field"], *error.path)))
        out.append(
            ValueProblem(
                f'vLLM {values.version} refuses {json.dumps(shown)}: "{count} for {entry["config"]} / '
                f'{dotted} / {error.message}"',
                _fix(error, default=flag.default),
                error.path,
                Where("config", int(entry["rank"])),
            )
        )
    return out


def _at(value: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def _fix(error: Error, *, default: Any = None) -> str:
    """How to write a value the refusing schema takes: its bounds, or its literal values."""
    core = error.schema or {}
    bounds = [f"{op} {core[key]}" for key, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")) if key in core]
    if bounds:
        shown = f" (vLLM's default: {json.dumps(default)})" if default is not None else ""
        return f"write a value {' and '.join(bounds)}{shown}"
    if core.get("type") == "enum_name":
        numbers = [v for v in (core.get("schema") or {}).get("values") or [] if type(v) is int]
        shown = f", or its number ({', '.join(map(str, numbers))})" if numbers else ""
        return "write one of: " + ", ".join(json.dumps(v) for v in core.get("names") or []) + f" (any case){shown}"
    if core.get("type") in ("literal", "enum"):
        return "write one of: " + ", ".join(json.dumps(v) for v in core.get("expected") or core.get("values") or [])
    if core.get("type") in ("int", "float", "str", "bool", "list", "set", "dict", "config"):
        words = {
            "int": "an integer",
            "float": "a number",
            "str": "a string",
            "bool": "a boolean",
            "list": "an array",
            "set": "an array",
            "dict": "a table",
            "config": "a table",
        }
        return f"write {words[core['type']]}"
    return ""


def _nested(values: Values, config: str, error: Error, where: Where) -> ValueProblem:
    location = ".".join(str(p) for p in error.path)
    if error.escapes:
        # not a validation error: the exception escapes pydantic and argparse, before any other error of the option
        return ValueProblem(
            f"vLLM {values.version} stops on it with a bare {error.escapes}: {error.message} "
            f"({config}.{location} has no such member)",
            _fix(error),
            error.path,
            Where(where.stage, where.rank, ESCAPES_FIRST),
        )
    vllm_says = f'"1 validation error for {config} / {location} / {error.message}"'
    if not error.unknown_key:
        fix = _fix(error)
        if error.message == "Field required":
            fix = f"add {error.path[-1]}" + (f" ({fix.removeprefix('write ')})" if fix else "")
        return ValueProblem(f"vLLM {values.version} refuses it: {vllm_says}", fix, error.path, where)
    owner, key = _owner(values, config, error.path)
    removed = REMOVED_KEYS.get((owner, key))
    if removed is not None:  # a before validator names the key in its own words, ahead of the unknown-key check
        said, fix = removed
        return ValueProblem(
            f'vLLM {values.version}\'s {owner} has no key {key!r}; vLLM says "1 validation error for {owner} / {said}"',
            fix,
            error.path,
            where,
            unknown_key=True,
        )
    history = _key_history(values.version, owner, key)
    known = list(Validator(values.configs, mode="json").config_fields(owner)[0])
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    fix = f"did you mean {close[0]!r}?" if close else f"{owner} takes: {', '.join(sorted(known))}"
    if history and not close:
        fix = f"remove {key}; " + fix
    return ValueProblem(
        f"vLLM {values.version}'s {owner} has no key {key!r}{history}; vLLM says {vllm_says}",
        fix,
        error.path,
        where,
        unknown_key=True,
    )


# keys a config class's before validator refuses with its own message (every release 0.27.0-0.33.0):
# vllm/config/pooler.py PoolerConfig.reject_removed_parameters
REMOVED_KEYS: dict[tuple[str, str], tuple[str, str]] = {
    ("PoolerConfig", "normalize"): (
        "Parameter `normalize` was removed; use `use_activation` instead.",
        "write use_activation instead of normalize",
    ),
}


def _owner(values: Values, config: str, path: tuple[str | int, ...]) -> tuple[str, str]:
    """The config class that owns the last key of `path` (walking nested config fields) and that key."""
    owner = config
    for part in path[:-1]:
        if isinstance(part, int):
            continue
        schema = ((values.configs.get(owner) or {}).get("fields") or {}).get(part) or {}
        while schema.get("type") == "nullable":
            schema = schema["schema"]
        if schema.get("type") == "config":
            owner = str(schema["class"])
    return owner, str(path[-1])


def _key_history(version: str, config: str, key: str) -> str:
    """' (removed in vLLM 0.33.0; 0.32.0 has it)' or ' (added in vLLM 0.34.0)', from the other releases' files."""
    releases = list(SUPPORTED)
    if version not in releases:
        return ""
    at = releases.index(version)
    for older in reversed(releases[:at]):
        other = load_values(older)
        if other is not None and other.has_key(config, key):
            dropped = releases[releases.index(older) + 1]
            return f" (removed in vLLM {dropped}; {older} has it)"
    for newer in releases[at + 1 :]:
        other = load_values(newer)
        if other is not None and other.has_key(config, key):
            return f" (added in vLLM {newer})"
    return f" (nor has any release {releases[0]}-{releases[-1]})"


# ---- registries of free strings ---------------------------------------------------------------------------


def _unregistered(values: Values, dest: str, value: Any) -> tuple[list[str], str] | None:
    """The registry of `dest` and a fix, when `value` is a string the registry does not hold."""
    registry = values.registry(dest)
    if not isinstance(value, str) or registry is None or value in registry:
        return None
    close = difflib.get_close_matches(value, registry, n=1, cutoff=0.6)
    return registry, f"did you mean {close[0]!r}?" if close else f"choose one of: {', '.join(registry)}"


def _registry_problems(values: Values, flag: Flag, value: Any) -> list[ValueProblem]:
    dest = flag.dest
    if dest == "quantization" and isinstance(value, str):
        value = value.lower()  # ModelConfig.validate_quantization_before, every release 0.27.0-0.33.0
    found = _unregistered(values, dest, value)
    if found is None:
        return []
    registry, fix = found
    version = values.version
    if dest == "kv_cache_dtype" and not flag.choices:
        # CacheConfig._validate_cache_dtype (0.33.0; earlier releases let argparse check the choices)
        message = f"Invalid kv_cache_dtype: {value!r}. Valid values are: {registry!r}"
        rank = values.construction_rank("CacheConfig")
    elif dest == "quantization":
        # ModelConfig._verify_quantization
        message = f"Unknown quantization method: {value}. Must be one of {registry!r}."
        rank = values.construction_rank("ModelConfig")
    else:
        return []
    return [] if rank is None else [ValueProblem(_says(version, message), fix, (), Where("config", rank))]


def _context_problems(values: Values, dest: str, value: Any, serve: dict[str, Any]) -> list[ValueProblem]:
    """Registry checks that other options of the role switch on or off."""
    version = values.version
    if dest == "reasoning_config" and isinstance(value, dict) and not _flag_parser(serve):
        # a --reasoning-parser flag replaces the table's reasoning_parser (_set_default_reasoning_config_args)
        inner = value.get("reasoning_parser", "")
        if inner == "" and _empty_parser_looked_up(version, value):
            found = _unregistered(values, "reasoning_parser", inner)
        else:
            found = _unregistered(values, "reasoning_parser", inner) if inner else None
        if found is None or _has_plugin(serve):
            return []
        registry, fix = found
        message = f"Reasoning parser '{inner}' not found. Available parsers: {', '.join(registry)}"
        return [
            ValueProblem(_says(version, message), fix, ("reasoning_parser",), Where("post_init", POST_INIT_REASONING))
        ]
    named = _named_value_problems(values, dest, value)
    if named:
        return named
    found = _unregistered(values, dest, value)
    if found is None or not isinstance(value, str):
        return []
    registry, fix = found
    if dest == "reasoning_parser" and _flag_parser(serve) and not _has_plugin(serve):
        # VllmConfig.__post_init__ -> ReasoningConfig.initialize_token_ids -> get_reasoning_parser
        message = f"Reasoning parser '{value}' not found. Available parsers: {', '.join(registry)}"
        return [ValueProblem(_says(version, message), fix, (), Where("post_init", POST_INIT_REASONING))]
    if (
        dest == "tool_call_parser"
        and serve.get("enable_auto_tool_choice") is True
        and not serve.get("tool_parser_plugin")
    ):
        # validate_api_server_args, when the API server starts (outside create_engine_config)
        message = f"invalid tool call parser: {value} (chose from {{ {','.join(registry)} }})"
        return [ValueProblem(_says(version, message), fix, (), Where("server"))]
    return []


def _literal_choices(values: Values, dest: str) -> list[str]:
    """The Literal members of a `str | Literal[...]` field (the names vLLM maps to a parser or class)."""
    entry = values.option(dest) or {}
    schema = entry.get("schema") or {}
    while schema.get("type") == "nullable":
        schema = schema["schema"]
    choices = schema.get("choices") if schema.get("type") == "union" else [schema]
    return [str(v) for c in choices or [] if c.get("type") == "literal" for v in c.get("expected") or []]


def _named_value_problems(values: Values, dest: str, value: Any) -> list[ValueProblem]:
    """Free strings vLLM looks up after parsing: the config format, the executor, a zero max_model_len."""
    version = values.version
    model_rank = values.construction_rank("ModelConfig")
    if dest == "config_format" and isinstance(value, str) and model_rank is not None:
        known = _literal_choices(values, dest)
        if known and value not in known:
            # vllm/transformers_utils/config.py get_config_parser, while ModelConfig is built ("auto" tries each)
            close = difflib.get_close_matches(value, known, n=1, cutoff=0.6)
            fix = f"did you mean {close[0]!r}?" if close else f"choose one of: {', '.join(known)}"
            return [
                ValueProblem(_says(version, f"Unknown config format `{value}`."), fix, (), Where("config", model_rank))
            ]
    if (
        dest == "distributed_executor_backend"
        and isinstance(value, str)
        and value
        and value not in EXECUTORS_BY_NAME
        and "." not in value
    ):
        # Executor.get_class reads any other name as 'module.Class' (resolve_obj_by_qualname: rsplit)
        message = "not enough values to unpack (expected 2, got 1)"
        fix = (
            f"choose one of: {', '.join(EXECUTORS_BY_NAME)}, or the dotted path of an Executor class "
            "('package.module.Class'); vLLM reads any other name as such a path"
        )
        return [ValueProblem(_says(version, message), fix, (), Where("post_init", POST_INIT_EXECUTOR))]
    if dest == "max_model_len" and _number(value) == 0 and model_rank is not None:
        # ModelConfig.validate_model_config_after: -1 means "derive it"; 0 passes the field's ge=-1 bound
        message = "max_model_len must be a positive integer, got int: 0. Example: max_model_len=2048"
        fix = "write a positive max_model_len, or -1 (or leave it out) for the model's own length"
        return [ValueProblem(_says(version, message), fix, (), Where("config", model_rank + 1, MODEL_AFTER_VALIDATOR))]
    return []


def _number(value: Any) -> int | None:
    """An integer option's value as vLLM parses it ("0k" is 0; "auto" is -1)."""
    if isinstance(value, str):
        try:
            return human_readable_int_or_auto(value)
        except ValueError:
            return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _empty_parser_looked_up(version: str, table: dict[str, Any]) -> bool:
    """0.27.x `ReasoningConfig.initialize_token_ids` looks up the parser '' (`is not None`) when a delimiter is
    missing; from 0.28.0 it skips an empty name (`if self.reasoning_parser:`)."""
    missing = not table.get("reasoning_start_str") or not table.get("reasoning_end_str")
    return missing and version_key(version) < version_key("0.28.0")


def _flag_parser(serve: dict[str, Any]) -> bool:
    """Whether --reasoning-parser names a parser (`parse_reasoning_parser` reads "none" as unset)."""
    value = serve.get("reasoning_parser")
    return isinstance(value, str) and bool(value) and value.lower() != "none"


def _has_plugin(serve: dict[str, Any]) -> bool:
    """A reasoning parser plugin registers names profilekit cannot know."""
    outputs = serve.get("structured_outputs_config")
    nested = outputs.get("reasoning_parser_plugin") if isinstance(outputs, dict) else None
    return bool(serve.get("reasoning_parser_plugin") or nested)


def _says(version: str, message: str) -> str:
    return f"vLLM {version} refuses it: {message!r}" if '"' in message else f'vLLM {version} refuses it: "{message}"'
