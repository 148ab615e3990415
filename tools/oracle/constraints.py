"""Value constraints of one vLLM release's config classes, read from its real code (imported by worker.py).

For the flag catalogue's sibling file ``vllm-<X>.values.json`` (tools/gen_catalogue.py). Three sources:

- ``fields``: the pydantic core schema of every config class an option reaches. An option that
  ``EngineArgs.create_engine_config`` passes unchanged into a config class (``SchedulerConfig(max_num_seqs=
  self.max_num_seqs, ...)``) gets that field's schema (``gt``/``ge``/``lt``/``le``, ``Literal``, enums) and
  the rank of that constructor call among the config objects vLLM builds, so a checker can tell which
  failure vLLM reports first.
- ``json_options``: a ``json:<Config>`` option is validated by pydantic while argparse reads it
  (``parse_dataclass``); its class's fields (nested config classes too) give the keys it accepts and
  their types.
- ``registries``: free strings that vLLM checks against a registry after parsing (cache dtypes,
  quantization methods, reasoning parsers, ...), each with the stage and message of the check.

Schemas are a compact JSON form of pydantic-core's (``_schema``). Anything this module cannot reason about
(a ``before``/``plain``/``wrap`` validator that may rewrite the input) becomes ``{"type": "opaque"}``: a
checker must accept any value there. A ``before`` validator whose whole body only respells a string
(``value.lower()``, ``value.lower().replace("-", "_")``: KernelConfig's backends, ModelConfig's
quantization) becomes ``{"type": "folded", "fold": ..., "schema": ...}``: the inner schema judges the
respelled string.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
import textwrap
import typing
from collections.abc import Callable, Iterator
from typing import Any

Schema = dict[str, Any]

# wrap validators that only let None through without validating it, and otherwise run the inner schema
_TRANSPARENT_WRAPS = ("_skip_none_validation",)
_NUMBER_KEYS = ("gt", "ge", "lt", "le", "multiple_of")
_LENGTH_KEYS = ("min_length", "max_length")


def _plain(value: Any) -> Any:
    """A JSON form of a literal value or constraint."""
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    return repr(value)


def _function_name(node: Schema) -> str:
    function = node.get("function") or {}
    fn = function.get("function") if isinstance(function, dict) else None
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or "?")


# before validators of a nested config field that also read a string as a name (`linear = "fp8_per_tensor"`)
_STRING_SPEC_VALIDATORS = frozenset({"_coerce_spec"})

# before validators that only respell a string (the whole body, whitespace aside), by the fold they apply
_FOLDS = {
    "ifisinstance(value,str):returnvalue.lower().replace('-','_')returnvalue": "lower_underscore",
    'ifisinstance(value,str):returnvalue.lower().replace("-","_")returnvalue': "lower_underscore",
    "ifisinstance(value,str):returnvalue.lower()returnvalue": "lower",
}


def _string_fold(node: Schema) -> str | None:
    """The fold a before validator applies when it does nothing but respell a string, else None."""
    function = node.get("function") or {}
    fn = function.get("function") if isinstance(function, dict) else None
    fn = getattr(fn, "__func__", fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # a docstring
    text = "".join(ast.unparse(stmt) for stmt in body).replace(" ", "").replace("\n", "")
    return _FOLDS.get(text)


# a string no enum has a member for: what a name-lookup validator raises for it shows its message
_PROBE = "zz-profilekit-probe"


def _member_name(found: Any) -> str | None:
    return found.name if isinstance(found, enum.Enum) else None


def _enum_by_name(node: Schema, inner: Schema) -> Schema | None:
    """A before validator that reads a string as an enum member's name, upper-cased, and passes other values on.

    `CompilationConfig.validate_mode_before` (`CompilationMode[value.upper()]`, a ValueError naming the valid
    modes) and `validate_cudagraph_mode_before` (`CUDAGraphMode[value.upper()]`: a bare KeyError, which pydantic
    does not turn into a validation error), `AttentionConfig.validate_backend_before` and its kind (an enum whose
    metaclass words the miss as a ValueError: "Unknown attention backend: 'X'. Valid options are: ..."; "auto"
    gives None). A validator that refuses some members in its own words (MultiModalConfig's 'XFORMERS') fails
    the member test and stays opaque. Read by calling the validator: every member name in lower case must
    give that member, a non-string must come back unchanged, and an unknown name must raise; its message, with
    the name as a hole, is kept.
    """
    function = node.get("function") or {}
    fn = function.get("function") if isinstance(function, dict) else None
    core = inner.get("schema", {}) if inner.get("type") == "nullable" else inner
    names = core.get("names") if core.get("type") == "enum" else None
    if not callable(fn) or function.get("type") != "no-info" or not names:
        return None
    try:
        if any(_member_name(fn(str(name).lower())) != name for name in names) or fn(0) != 0:
            return None
    except Exception:  # any failure: not a plain name lookup
        return None
    try:
        fn(_PROBE)
    except (KeyError, ValueError) as exc:
        error, message = type(exc).__name__, str(exc)
    except Exception:  # another error: not a name lookup vLLM reports
        return None
    else:
        return None
    if _PROBE not in message.lower():
        return None
    template = message.replace(_PROBE.upper(), "{VALUE}").replace(_PROBE, "{value}")
    found: dict[str, Any] = {"type": "enum_name", "names": list(names), "error": error, "message": template}
    if inner.get("type") == "nullable" and _reads_auto_as_none(fn):
        found["auto"] = True  # `AttentionConfig.validate_backend_before`: "auto" leaves the choice to vLLM
    return {**found, "schema": inner}


def _reads_auto_as_none(fn: Callable[..., Any]) -> bool:
    try:
        return fn("auto") is None
    except Exception:  # "auto" is refused like any unknown name
        return False


class SchemaReader:
    """Turns pydantic-core schemas into the compact form; collects the config classes it meets."""

    def __init__(self) -> None:
        self.classes: dict[str, Schema] = {}
        self._definitions: dict[str, Schema] = {}
        self._pending: list[tuple[str, Schema]] = []

    # -- config classes ---------------------------------------------------------------------------------

    def config_class(self, cls: type) -> str | None:
        """Record `cls` (a pydantic dataclass or model) and every config class below it; its name or None."""
        schema = getattr(cls, "__pydantic_core_schema__", None)
        if not isinstance(schema, dict):
            return None
        self._collect_definitions(schema)
        node = self._unwrap_to_class(schema)
        if node is None:
            return None
        name = cls.__name__
        self._add_class(name, node)
        self._drain()
        return name

    def _add_class(self, name: str, node: Schema) -> None:
        if name in self.classes:
            return
        self.classes[name] = {}  # placeholder against recursion
        self._pending.append((name, node))

    def _drain(self) -> None:
        while self._pending:
            name, node = self._pending.pop()
            self.classes[name] = self._class_entry(node)

    def _class_entry(self, node: Schema) -> Schema:
        fields: dict[str, Schema] = {}
        extra = "ignore"
        if node["type"] == "dataclass":
            args = node["schema"]
            while args.get("type") != "dataclass-args" and "schema" in args:
                args = args["schema"]
            extra = str(args.get("extra_behavior") or (node.get("config") or {}).get("extra_fields_behavior") or extra)
            for item in args.get("fields", []):
                entry = self.read(item["schema"])
                if item["schema"].get("type") != "default" and item.get("init") is not False:
                    entry = {**entry, "required": True}
                if item.get("init") is False or (item.get("init_only") is False and item.get("init") is False):
                    entry = {**entry, "init": False}
                fields[item["name"]] = entry
        else:  # "model"
            inner = node["schema"]
            while inner.get("type") != "model-fields" and "schema" in inner:
                inner = inner["schema"]
            extra = str(inner.get("extra_behavior") or (node.get("config") or {}).get("extra_fields_behavior") or extra)
            for name, item in (inner.get("fields") or {}).items():
                fields[item.get("validation_alias") if isinstance(item.get("validation_alias"), str) else name] = (
                    self.read(item["schema"])
                )
        return {"extra": extra, "fields": fields}

    def _collect_definitions(self, schema: Any) -> None:
        if isinstance(schema, dict):
            if schema.get("type") == "definitions":
                for definition in schema.get("definitions", []):
                    if isinstance(definition, dict) and "ref" in definition:
                        self._definitions[definition["ref"]] = definition
            if "ref" in schema and schema.get("type") != "definition-ref":
                self._definitions.setdefault(schema["ref"], schema)
            for value in schema.values():
                self._collect_definitions(value)
        elif isinstance(schema, list):
            for value in schema:
                self._collect_definitions(value)

    def _unwrap_to_class(self, node: Schema) -> Schema | None:
        """The dataclass/model node under model validators and definitions."""
        seen = 0
        while isinstance(node, dict) and seen < 20:
            seen += 1
            kind = node.get("type")
            if kind in ("dataclass", "model"):
                return node
            if kind == "definition-ref":
                node = self._definitions.get(node.get("schema_ref", ""), {})
                continue
            if kind in ("definitions", "function-after", "function-before", "function-wrap", "default", "nullable"):
                node = node.get("schema", {})
                continue
            return None
        return None

    # -- one schema ---------------------------------------------------------------------------------------

    def read(self, node: Schema) -> Schema:
        kind = node.get("type")
        handler = getattr(self, "_read_" + str(kind).replace("-", "_"), None)
        if handler is None:
            return {"type": "opaque", "why": f"pydantic schema {kind}"}
        result: Schema = handler(node)
        return result

    def _read_default(self, node: Schema) -> Schema:
        return self.read(node["schema"])

    def _read_definition_ref(self, node: Schema) -> Schema:
        target = self._definitions.get(node.get("schema_ref", ""))
        if target is None:
            return {"type": "opaque", "why": "unresolved reference"}
        return self.read(target)

    def _read_definitions(self, node: Schema) -> Schema:
        self._collect_definitions(node)
        return self.read(node["schema"])

    def _read_dataclass(self, node: Schema) -> Schema:
        cls = node.get("cls")
        name = getattr(cls, "__name__", None) or str(node.get("ref", "?"))
        self._add_class(name, node)
        return {"type": "config", "class": name}

    _read_model = _read_dataclass

    def _read_function_after(self, node: Schema) -> Schema:
        inner = self.read(node["schema"])
        return {**inner, "validators": [*inner.get("validators", []), _function_name(node)]}

    def _read_function_wrap(self, node: Schema) -> Schema:
        name = _function_name(node)
        if name.split(".")[-1] in _TRANSPARENT_WRAPS:
            return self._read_function_after(node)
        return {"type": "opaque", "why": f"wrap validator {name}"}

    def _read_function_before(self, node: Schema) -> Schema:
        inner = self.read(node["schema"])
        core = inner.get("schema", {}) if inner.get("type") == "nullable" else inner
        if core.get("type") == "config" and _function_name(node).split(".")[-1] in _STRING_SPEC_VALIDATORS:
            # QuantizationConfigArgs._coerce_spec: a string names an online shorthand or a quantization key
            # (rules/quantpool.py checks the name); a table is the class itself
            either = {"type": "union", "choices": [core, {"type": "str"}]}
            return {**inner, "schema": either} if inner.get("type") == "nullable" else either
        if core.get("type") == "config":
            # `pass_config`: a before validator that builds the nested config class from a dict
            # (`PassConfig(**value)`) validates exactly what the class validates
            return inner
        by_name = _enum_by_name(node, inner)
        if by_name is not None:
            return by_name
        fold = _string_fold(node)
        if fold is not None:
            # KernelConfig._normalize_moe_backend: folds a string's spelling, then the inner schema decides
            return {"type": "folded", "fold": fold, "schema": inner}
        return {"type": "opaque", "why": f"before validator {_function_name(node)}"}

    def _read_function_plain(self, node: Schema) -> Schema:
        return {"type": "opaque", "why": f"plain validator {_function_name(node)}"}

    def _read_nullable(self, node: Schema) -> Schema:
        return {"type": "nullable", "schema": self.read(node["schema"])}

    def _scalar(self, node: Schema, keys: tuple[str, ...]) -> Schema:
        out: Schema = {"type": node["type"]}
        for key in keys:
            if node.get(key) is not None:
                out[key] = _plain(node[key])
        if node.get("strict"):
            out["strict"] = True
        return out

    def _read_int(self, node: Schema) -> Schema:
        return self._scalar(node, _NUMBER_KEYS)

    def _read_float(self, node: Schema) -> Schema:
        out = self._scalar(node, _NUMBER_KEYS)
        if node.get("allow_inf_nan") is False:
            out["allow_inf_nan"] = False
        return out

    def _read_str(self, node: Schema) -> Schema:
        return self._scalar(node, (*_LENGTH_KEYS, "pattern"))

    def _read_bool(self, node: Schema) -> Schema:
        return self._scalar(node, ())

    def _read_none(self, node: Schema) -> Schema:
        return {"type": "none"}

    def _read_any(self, node: Schema) -> Schema:
        return {"type": "any"}

    def _read_literal(self, node: Schema) -> Schema:
        return {"type": "literal", "expected": [_plain(v) for v in node.get("expected", [])]}

    def _read_enum(self, node: Schema) -> Schema:
        members = node.get("members") or []
        cls = node.get("cls")
        return {
            "type": "enum",
            "class": getattr(cls, "__name__", "?"),
            "values": [_plain(m.value) for m in members],
            "names": [m.name for m in members],
            "sub_type": node.get("sub_type"),
        }

    def _read_union(self, node: Schema) -> Schema:
        choices = []
        for choice in node.get("choices", []):
            # a choice is a schema, or a (schema, label) pair
            choices.append(self.read(choice[0] if isinstance(choice, (list, tuple)) else choice))
        return {"type": "union", "choices": choices}

    def _read_tagged_union(self, node: Schema) -> Schema:
        return {"type": "union", "choices": [self.read(c) for c in (node.get("choices") or {}).values()]}

    def _collection(self, node: Schema) -> Schema:
        out: Schema = {"type": node["type"]}
        if "items_schema" in node:
            out["items"] = self.read(node["items_schema"])
        for key in _LENGTH_KEYS:
            if node.get(key) is not None:
                out[key] = node[key]
        return out

    _read_list = _collection
    _read_set = _collection
    _read_frozenset = _collection

    def _read_tuple(self, node: Schema) -> Schema:
        items = [self.read(s) for s in node.get("items_schema", [])]
        return {"type": "tuple", "items": items, "variadic_item_index": node.get("variadic_item_index")}

    def _read_dict(self, node: Schema) -> Schema:
        out: Schema = {"type": "dict"}
        if "keys_schema" in node:
            out["keys"] = self.read(node["keys_schema"])
        if "values_schema" in node:
            out["values"] = self.read(node["values_schema"])
        for key in _LENGTH_KEYS:  # KernelConfig.linear_backend_per_quant: Field(min_length=1)
            if node.get(key) is not None:
                out[key] = node[key]
        return out

    def _read_is_instance(self, node: Schema) -> Schema:
        cls = node.get("cls")
        return {"type": "instance", "class": getattr(cls, "__name__", "?")}

    def _read_is_subclass(self, node: Schema) -> Schema:
        cls = node.get("cls")
        return {"type": "subclass", "class": getattr(cls, "__name__", "?")}


# ---------------------------------------------------------------------------------------------------------
# Which option reaches which config field, and in which order vLLM builds the config objects


def _function_ast(fn: Callable[..., Any]) -> ast.FunctionDef | None:
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    tree = ast.parse(source)
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, ast.FunctionDef) else None


def _self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


@dataclasses.dataclass
class Construction:
    """One config object `create_engine_config` builds, with what it takes unchanged from EngineArgs."""

    name: str
    passed: dict[str, str]  # {field: EngineArgs attribute}
    splat: list[str]  # EngineArgs attributes passed as `**self.attr`
    when: list[str]  # conditions the construction runs under: "X" (self.X truthy), "!X", "X!=None", or "?"


def config_constructions(
    engine_args: type, namespace: dict[str, Any], *, is_config: Callable[[Any], bool]
) -> tuple[list[Construction], dict[str, int]]:
    """The config classes `create_engine_config` constructs, in order, and where each attribute is first read.

    Methods of EngineArgs called on `self` are followed where they are called (create_model_config, ...).
    Only keyword arguments that pass `self.<attr>` unchanged count: a transformed value is not what the
    user wrote. The second result maps each `self.<attr>` to the number of constructions completed before
    it is first read.
    """
    out: list[Construction] = []
    first_read: dict[str, int] = {}
    visiting: set[str] = set()

    def walk(method: str) -> None:
        if method in visiting:
            return
        fn = getattr(engine_args, method, None)
        tree = _function_ast(fn) if callable(fn) else None
        if tree is None:
            return
        visiting.add(method)
        aliases: dict[str, str] = {}  # `cfg = self.diffusion_config`, later passed as `**cfg`
        for node, when in _in_order(tree, ()):
            attr = _self_attr(node)
            if attr is not None:
                first_read.setdefault(attr, len(out))
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                source = _passed_through(node.value)
                if source is not None:
                    aliases[node.targets[0].id] = source
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            callee = _self_attr(func)
            if callee is not None and callable(getattr(engine_args, callee, None)):
                walk(callee)
                continue
            if isinstance(func, ast.Name) and is_config(namespace.get(func.id)):
                passed: dict[str, str] = {}
                splat: list[str] = []
                for keyword in node.keywords:
                    attr = _self_attr(keyword.value)
                    if attr is None and isinstance(keyword.value, ast.Name):
                        attr = aliases.get(keyword.value.id)
                    if attr and keyword.arg:
                        passed[keyword.arg] = attr
                    elif attr:
                        splat.append(attr)
                out.append(Construction(func.id, passed, splat, list(when)))
        visiting.discard(method)

    walk("create_engine_config")
    return out, first_read


def _passed_through(value: ast.AST) -> str | None:
    """The EngineArgs attribute a local name holds unchanged: `x = self.a`, or `x = 0 if unset else self.a`.

    0.29.0 `create_engine_config`: `retention_interval = (0 if retention_interval_unset else
    self.prefix_cache_retention_interval)`, then `CacheConfig(prefix_cache_retention_interval=retention_interval)`:
    what the user writes reaches the field unchanged; only the constant default replaces it.
    """
    attr = _self_attr(value)
    if attr is not None:
        return attr
    if isinstance(value, ast.IfExp):
        branches = (value.body, value.orelse)
        attrs = [_self_attr(b) for b in branches]
        constants = [isinstance(b, ast.Constant) for b in branches]
        if attrs[0] is not None and constants[1]:
            return attrs[0]
        if attrs[1] is not None and constants[0]:
            return attrs[1]
    return None


def _in_order(node: ast.AST, when: tuple[str, ...]) -> Iterator[tuple[ast.AST, tuple[str, ...]]]:
    """Nodes in evaluation order (children before the node that uses them), with the conditions they run under.

    Only the branches of `if`/`x if c else y` are conditional here; an early `return` or `raise` before a
    construction is a cross-field check, not a condition on the value's constraints.
    """
    if isinstance(node, (ast.If, ast.IfExp)):
        yield from _in_order(node.test, when)
        test = _condition(node.test)
        body = node.body if isinstance(node.body, list) else [node.body]
        orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
        for child in body:
            yield from _in_order(child, (*when, test))
        for child in orelse:
            yield from _in_order(child, (*when, _negate(test)))
        yield node, when
        return
    for child in ast.iter_child_nodes(node):
        yield from _in_order(child, when)
    yield node, when


def _condition(test: ast.AST) -> str:
    attr = _self_attr(test)
    if attr is not None:
        return attr
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _self_attr(test.operand)
        return f"!{inner}" if inner else "?"
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        inner = _self_attr(test.left)
        return f"{inner}!=None" if inner else "?"
    return "?"


def _negate(condition: str) -> str:
    if condition == "?" or condition.endswith("!=None"):
        return "?"
    return condition[1:] if condition.startswith("!") else f"!{condition}"


# ---------------------------------------------------------------------------------------------------------
# Registries of free strings


def _registry(getter: Callable[[], Any]) -> list[str] | None:
    try:
        values = getter()
    except Exception:
        return None
    if values is None:
        return None
    return sorted({str(v) for v in values}) if isinstance(values, (set, frozenset)) else [str(v) for v in values]


def registries() -> dict[str, Any]:
    """The registries vLLM checks free strings against after parsing, for this release."""
    found: dict[str, Any] = {}

    def quantization() -> Any:
        module = importlib.import_module("vllm.model_executor.layers.quantization")
        return module.QUANTIZATION_METHODS

    def reasoning() -> Any:
        from vllm.reasoning import ReasoningParserManager

        return ReasoningParserManager.list_registered()

    def tools() -> Any:
        try:
            from vllm.tool_parsers import ToolParserManager
        except ImportError:
            from vllm.entrypoints.openai.tool_parsers import ToolParserManager  # type: ignore[no-redef]
        return ToolParserManager.list_registered()

    def cache_dtypes() -> Any:
        cache_module = importlib.import_module("vllm.config.cache")
        return typing.get_args(cache_module.CacheDType)

    def online_shorthands() -> Any:
        # QuantizationConfigArgs._validate_targets checks `targets` values against these (0.30.0 and later)
        return list(importlib.import_module("vllm.config.quantization")._ONLINE_SHORTHANDS)

    def online_names() -> Any:
        # resolve_quantization_config: the --quantization names quantization_config goes with (0.27.0-0.29.0)
        return importlib.import_module("vllm.config.quantization").ONLINE_QUANT_SHORTHAND_NAMES

    for name, getter in (
        ("quantization", quantization),
        ("quantization_online_shorthands", online_shorthands),
        ("quantization_online_names", online_names),
        ("reasoning_parser", reasoning),
        ("tool_call_parser", tools),
        ("kv_cache_dtype", cache_dtypes),
    ):
        values = _registry(getter)
        if values is not None:
            found[name] = values
    return found


def is_config_class(value: Any) -> bool:
    return isinstance(value, type) and isinstance(getattr(value, "__pydantic_core_schema__", None), dict)


def value_constraints(
    engine_args: type, arg_utils: Any, dests: list[str], json_options: dict[str, type]
) -> dict[str, Any]:
    """The whole values document of one release (see the module docstring).

    Ranks order the checks of the config-object stage: construction k validates at rank 2k+1; a value
    first read (converted) between constructions k-1 and k has rank 2k.
    """
    reader = SchemaReader()
    namespace = vars(arg_utils)
    wanted = set(dests)
    options: dict[str, Any] = {}
    splat: dict[str, Any] = {}
    constructions, first_read = config_constructions(engine_args, namespace, is_config=is_config_class)
    ranks: dict[str, int] = {}
    for index, built in enumerate(constructions):
        name = reader.config_class(namespace[built.name])
        if name is None:
            continue
        rank = 2 * index + 1
        ranks.setdefault(name, rank)
        for field, attr in built.passed.items():
            schema = reader.classes[name]["fields"].get(field)
            if attr in wanted and attr not in options and schema is not None:
                options[attr] = {"config": name, "field": field, "rank": rank, "schema": schema}
                if built.when:
                    options[attr]["when"] = built.when
        for attr in built.splat:
            if attr in wanted and attr not in splat:
                splat[attr] = {"config": name, "rank": rank}
                if built.when:
                    splat[attr]["when"] = built.when
    json_classes = {dest: reader.config_class(cls) for dest, cls in sorted(json_options.items())}
    return {
        "format": 1,
        "options": dict(sorted(options.items())),
        "splat_options": dict(sorted(splat.items())),
        "json_options": {dest: name for dest, name in json_classes.items() if name},
        "first_read": {attr: 2 * count for attr, count in sorted(first_read.items()) if attr in wanted},
        "construction_ranks": ranks,
        "configs": dict(sorted(reader.classes.items())),
        "registries": registries(),
    }


def json_option_classes(parser: Any, config_class_of: Callable[[Any], type | None]) -> dict[str, type]:
    """{dest: config class} of the `json:<Config>` options of a `vllm serve` parser (optional ones too)."""
    found: dict[str, type] = {}
    for action in parser._actions:
        cls = config_class_of(action.type) if callable(action.type) else None
        if cls is not None and dataclasses.is_dataclass(cls):
            found[action.dest] = cls
    return found
