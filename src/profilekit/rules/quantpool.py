"""Validators of `pooler_config` and `quantization_config` once their fields are valid, and the quantization
check of `EngineArgs.__post_init__`.

Sources: `vllm/config/pooler.py` `PoolerConfig.__post_init__` (identical in every release 0.27.0-0.33.0) and
`vllm/config/quantization.py` `QuantizationConfigArgs._validate_targets` / `_validate_targets_exclusivity`
(0.30.0 and later), all run while the argument parser reads the JSON option (`parse_dataclass`: "1 validation
error for ...", after the field constraints); `resolve_quantization_config`, called by `EngineArgs.__post_init__`
after `validate_parsed_serve_args` and before `create_engine_config` (0.27.0-0.29.0 refuse a
`quantization_config` beside a `--quantization` that is no online shorthand; 0.30.0 composes them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.configs import PARSE_VALIDATOR
from profilekit.rules.engine import STAGE_CONFIG_OBJECTS, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import shown
from profilekit.vllm.constraints import load_values
from profilekit.vllm.versions import at_least

# EngineArgs.__post_init__: after validate_parsed_serve_args (rules/frontend.py, -100) and before
# create_engine_config's first check, validate_environ (rules/env.py, -1)
ENGINE_ARGS_POST_INIT: Order = (STAGE_CONFIG_OBJECTS, -50)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def pooler_failure(cfg: dict[str, Any]) -> tuple[str, str] | None:
    """`PoolerConfig.__post_init__`'s first failure and the key it is about; None when it passes."""
    if _number(cfg.get("logit_sigma")) == 0:
        return "logit_sigma", "Value error, logit_sigma cannot be 0 (division by zero)"
    if cfg.get("pooling_type"):
        for other in ("seq_pooling_type", "tok_pooling_type"):
            if cfg.get(other) is not None:
                return other, f"Value error, Cannot set both `pooling_type` and `{other}`"
    return None


@rule(
    "pooler-config",
    Severity.ERROR,
    "pooler_config with logit_sigma 0, or pooling_type beside seq_pooling_type / tok_pooling_type",
    source="vllm/config/pooler.py PoolerConfig.__post_init__",
)
def pooler_config(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("pooler_config")
    if not isinstance(cfg, dict):
        return []
    found = pooler_failure(cfg)
    if found is None:
        return []
    key, message = found
    if key == "logit_sigma":
        what, fix = "pooler_config.logit_sigma = 0", "remove logit_sigma, or give the logits' spread (not 0)"
    else:
        what = f"pooler_config.pooling_type = {shown(cfg['pooling_type'])} beside {key} = {shown(cfg[key])}"
        fix = f"keep one of pooling_type and {key}"
    locs = [*f.loc("serve", "pooler_config", key)]
    if key != "logit_sigma":
        locs = [*f.loc("serve", "pooler_config", "pooling_type"), *locs]
    return [
        Hit(
            "pooler-config",
            f'{what}; vLLM {f.version} refuses to start: "1 validation error for PoolerConfig / {message}"',
            locs or f.loc("serve", "pooler_config"),
            fix,
            role=f.role.name,
            order=PARSE_VALIDATOR,
        )
    ]


def _registry(version: str, name: str) -> list[str] | None:
    values = load_values(version)
    return values.registry(name) if values is not None else None


def _spec_text(spec: Any) -> str:
    """`str(QuantSpec)` in vLLM's message: the weight key's name, or None."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict) and isinstance(spec.get("weight"), str):
        return str(spec["weight"])
    return "None"


def targets_failure(cfg: dict[str, Any], shorthands: list[str]) -> str | None:
    """`QuantizationConfigArgs`' targets checks, in pydantic's order: the field validator, then exclusivity."""
    targets = cfg.get("targets")
    if not isinstance(targets, dict):
        return None
    for pattern, shorthand in targets.items():
        if not isinstance(shorthand, str) or shorthand not in shorthands:
            return (
                f"Value error, targets[{pattern}] = {shorthand} is not a valid online shorthand name; "
                f"expected one of {sorted(shorthands)}"
            )
        if pattern.startswith("re:"):
            try:
                re.compile(pattern[3:])
            except re.error as exc:
                return f"Value error, targets key {pattern} is not a valid regex: {exc}"
    if cfg.get("linear") is None and cfg.get("moe") is None:
        return None
    return (
        "Value error, quantization_config.targets is mutually exclusive with quantization_config.linear/moe, got "
        f"targets={targets!r}, linear={_spec_text(cfg.get('linear'))}, moe={_spec_text(cfg.get('moe'))}."
    )


@rule(
    "quantization-config",
    Severity.ERROR,
    "quantization_config with targets beside linear/moe (or a target vLLM cannot read), or beside a --quantization "
    "method that takes none",
    source="vllm/config/quantization.py QuantizationConfigArgs validators, resolve_quantization_config",
)
def quantization_config(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("quantization_config")
    if not isinstance(cfg, dict):
        return []
    shorthands = _registry(f.version, "quantization_online_shorthands")
    names = _registry(f.version, "quantization_online_names")
    if "targets" in cfg and shorthands is not None and "targets" in _fields(f.version):
        message = targets_failure(cfg, shorthands)
        if message is None:
            return []
        key = "targets" if message.startswith("Value error, targets") else "linear" if "linear" in cfg else "moe"
        return [
            Hit(
                "invalid-value" if key == "targets" else "quantization-config",
                f"serve.quantization_config.{key}: vLLM {f.version} refuses it: "
                f'"1 validation error for QuantizationConfigArgs / {message}"',
                [*f.loc("serve", "quantization_config", "targets"), *f.loc("serve", "quantization_config", key)]
                or f.loc("serve", "quantization_config"),
                "map each layer pattern to an online shorthand: " + ", ".join(sorted(shorthands))
                if key == "targets"
                else "give either targets (per layer) or linear/moe, not both",
                role=f.role.name,
                order=PARSE_VALIDATOR,
            )
        ]
    method = f.serve.get("quantization")
    if "targets" in _fields(f.version) or names is None or not isinstance(method, str) or method in names:
        return []  # 0.30.0 and later compose a checkpoint method with quantization_config
    message = (
        f"quantization_config is only supported when quantization is one of {sorted(names)}, "
        f"got quantization={method!r}"
    )
    return [
        Hit(
            "quantization-config",
            f'quantization = {shown(method)} with a quantization_config; vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", "quantization"), *f.locs("serve", "quantization_config")],
            f"remove quantization_config, or set quantization to one of: {', '.join(sorted(names))}",
            role=f.role.name,
            order=ENGINE_ARGS_POST_INIT,
        )
    ]


def _fields(version: str) -> dict[str, Any]:
    values = load_values(version)
    config = (values.configs.get("QuantizationConfigArgs") if values is not None else None) or {}
    return dict(config.get("fields") or {})


# vllm/model_executor/layers/quantization/__init__.py DEPRECATED_QUANTIZATION_METHODS (every release 0.27.0-0.33.0)
DEPRECATED_QUANTIZATION = ("fbgemm_fp8", "fp_quant")
MSG_DEPRECATED = (
    "The quantization method %s is deprecated and will be removed in future versions of vLLM. To bypass, set "
    "`--allow-deprecated-quantization`."
)


@rule(
    "quantization-deprecated",
    Severity.ERROR,
    "a deprecated quantization method without allow_deprecated_quantization",
    source="vllm/config/model.py ModelConfig._verify_quantization",
)
def quantization_deprecated(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    method = f.serve.get("quantization")
    if not isinstance(method, str) or method.lower() not in DEPRECATED_QUANTIZATION:
        return []
    if f.serve.get("allow_deprecated_quantization") is True:
        return []
    config = f.model.config
    if config is None or "quantization_config" in config:
        return []  # a checkpoint's own method may override or contradict the option: vLLM decides
    method = method.lower()
    return [
        Hit(
            "quantization-deprecated",
            f"quantization = {shown(method)} is deprecated; vLLM {f.version} refuses to start: "
            f'"{(MSG_DEPRECATED, method)!r}"',
            f.loc("serve", "quantization"),
            "set allow_deprecated_quantization = true to use it anyway, or choose another quantization method",
            role=f.role.name,
            order=order.built("ModelConfig", f.version),
        )
    ]


# vllm/config/quantization.py QUANT_KEY_NAMES, by the release that changed it
_QUANT_KEYS_0_27 = (
    "fp8_per_block_dynamic",
    "fp8_per_block_static",
    "fp8_per_channel_static",
    "fp8_per_tensor_dynamic",
    "fp8_per_tensor_static",
    "fp8_per_token",
    "int8_per_channel_static",
    "mxfp4",
    "mxfp8",
)
_QUANT_KEYS_0_32 = (*_QUANT_KEYS_0_27, "int4_per_group_32", "nvfp4_per_token")
_QUANT_KEYS_0_33 = (*_QUANT_KEYS_0_32, "int8_per_group_32")
# a TypeError of a validator passes pydantic by; the argument parser reports it without its text
ARGPARSE_TYPE_ERROR = "argument --quantization-config: invalid _optional_type value"
# _ONLINE_SHORTHANDS that define no linear spec (every release 0.27.0-0.33.0)
_NO_LINEAR_SPEC = frozenset({"int8_per_channel_weight_only", "nvfp4_per_token"})


def quant_key_names(version: str) -> list[str]:
    keys = _QUANT_KEYS_0_33 if at_least(version, "0.33.0") else _QUANT_KEYS_0_32
    return sorted(keys if at_least(version, "0.32.0") else _QUANT_KEYS_0_27)


def _quant_key_failure(value: Any, version: str) -> tuple[str, bool] | None:
    """(`_coerce_quant_key`'s message, whether it is a bare TypeError) for one name; None when vLLM reads it."""
    if value is None:
        return None
    if not isinstance(value, str):
        return f"expected str or QuantKey, got {type(value).__name__}", True
    names = quant_key_names(version)
    if value in names:
        return None
    return f"unknown quantization name {value!r}; expected one of {names}", False


def spec_failure(field: str, spec: Any, version: str, shorthands: list[str]) -> tuple[str, str, bool] | None:
    """(the key, vLLM's message, bare TypeError) of QuantizationConfigArgs' `linear`/`moe` before validator
    `_coerce_spec` and QuantSpec's keys; None when vLLM reads the spec (or the field schema reports it)."""
    if isinstance(spec, str):
        if spec in shorthands:
            if field == "linear" and spec in _NO_LINEAR_SPEC:
                return field, f"online shorthand {spec!r} does not define a {field} spec", False
            return None
        found = _quant_key_failure(spec, version)
        return None if found is None else (field, *found)
    if isinstance(spec, dict):
        for key in ("weight", "activation"):
            found = _quant_key_failure(spec.get(key), version)
            if found is not None:
                return f"{field}.{key}", *found
    return None


@rule(
    "quantization-spec",
    Severity.ERROR,
    "quantization_config.linear/moe naming no quantization key or a shorthand without that spec",
    source="vllm/config/quantization.py QuantizationConfigArgs._coerce_spec, _coerce_quant_key",
)
def quantization_spec(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("quantization_config")
    shorthands = _registry(f.version, "quantization_online_shorthands")
    if not isinstance(cfg, dict) or shorthands is None:
        return []
    for field in ("linear", "moe"):
        found = spec_failure(field, cfg.get(field), f.version, shorthands)
        if found is None:
            continue
        key, message, bare = found
        said = (
            f'"{ARGPARSE_TYPE_ERROR}" ({message})'
            if bare
            else f'"1 validation error for QuantizationConfigArgs / {key} / Value error, {message}"'
        )
        return [
            Hit(
                "quantization-spec",
                f"serve.quantization_config.{key}: vLLM {f.version} refuses it: {said}",
                f.loc("serve", "quantization_config", *key.split(".")) or f.loc("serve", "quantization_config"),
                f"name an online shorthand ({', '.join(sorted(shorthands))}) or a quantization key "
                f"({', '.join(quant_key_names(f.version))})",
                role=f.role.name,
                order=PARSE_VALIDATOR,
            )
        ]
    targets = cfg.get("targets")
    if targets is None or isinstance(targets, dict) or "targets" not in _fields(f.version):
        return []
    # _validate_targets raises a TypeError, which pydantic lets through and argparse reports
    return [
        Hit(
            "quantization-spec",
            f"serve.quantization_config.targets: vLLM {f.version} refuses it: "
            f'"{ARGPARSE_TYPE_ERROR}" (targets must be a dict, got {type(targets).__name__})',
            f.loc("serve", "quantization_config", "targets"),
            "write targets as a table of layer patterns to online shorthands",
            role=f.role.name,
            order=PARSE_VALIDATOR,
        )
    ]
