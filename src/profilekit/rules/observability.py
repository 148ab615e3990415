"""Observability and structured-output settings vLLM's config classes refuse once their fields are valid.

Sources (identical in every release 0.27.0-0.33.0): `vllm/config/observability.py`
`ObservabilityConfig._validate_show_hidden_metrics_for_version` (a field validator: `packaging.version.parse`)
and `_validate_tracing_config` (a model validator), built by `EngineArgs.create_engine_config`;
`vllm/config/structured_outputs.py` `StructuredOutputsConfig._validate_structured_output_config`, which runs
while the argument parser reads `--structured-outputs-config` (`parse_dataclass`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_ARGPARSE, STAGE_CONFIG_OBJECTS, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import shown
from profilekit.vllm.constraints import load_values
from profilekit.vllm.versions import at_least

MSG_TRACES = "collect_detailed_traces requires `--otlp-traces-endpoint` to be set."
MSG_WHITESPACE = "disable_any_whitespace is only supported for xgrammar and guidance backends."
MSG_ADDITIONAL = "disable_additional_properties is only supported for the guidance backend."


def _field_order(version: str) -> Order:
    """A field validator of ObservabilityConfig: at its construction rank, after the field constraints."""
    values = load_values(version)
    rank = values.construction_rank("ObservabilityConfig") if values is not None else None
    return (STAGE_CONFIG_OBJECTS, rank if rank is not None else 25, 1)


@rule(
    "show-hidden-metrics-version",
    Severity.ERROR,
    "show_hidden_metrics_for_version that is not a version number",
    source="vllm/config/observability.py ObservabilityConfig._validate_show_hidden_metrics_for_version",
)
def show_hidden_metrics_version(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    value = f.serve.get("show_hidden_metrics_for_version")
    if not isinstance(value, str):
        return []
    try:
        Version(value)
    except InvalidVersion:
        pass
    else:
        return []
    return [
        Hit(
            "show-hidden-metrics-version",
            f"show_hidden_metrics_for_version = {shown(value)} is not a version; vLLM {f.version} refuses to start: "
            f'"Invalid version: {value!r}"',
            f.loc("serve", "show_hidden_metrics_for_version"),
            'write the vLLM release whose hidden metrics to show, e.g. "0.32"',
            role=f.role.name,
            order=_field_order(f.version),
        )
    ]


@rule(
    "detailed-traces-endpoint",
    Severity.ERROR,
    "collect_detailed_traces without otlp_traces_endpoint",
    source="vllm/config/observability.py ObservabilityConfig._validate_tracing_config",
)
def detailed_traces_endpoint(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    modules = f.serve.get("collect_detailed_traces")
    if not _valid_modules(modules) or f.serve.get("otlp_traces_endpoint"):
        return []
    return [
        Hit(
            "detailed-traces-endpoint",
            f"collect_detailed_traces = {shown(modules)} without otlp_traces_endpoint; vLLM {f.version} refuses to "
            f'start: "{MSG_TRACES}"',
            [*f.loc("serve", "collect_detailed_traces"), *f.loc("serve", "otlp_traces_endpoint")],
            "set otlp_traces_endpoint to the OpenTelemetry collector's URL, or remove collect_detailed_traces",
            role=f.role.name,
            order=order.built("ObservabilityConfig", f.version) if _known(f.version) else None,
        )
    ]


def _valid_modules(modules: object) -> bool:
    """A non-empty list of 'model', 'worker', 'all'; a comma-separated string fails the field's Literal first."""
    items: list[object] = [modules] if isinstance(modules, str) else modules if isinstance(modules, list) else []
    return bool(items) and all(m in ("model", "worker", "all") for m in items)


def _known(version: str) -> bool:
    values = load_values(version)
    return values is not None and values.construction_rank("ObservabilityConfig") is not None


@rule(
    "structured-outputs-backend",
    Severity.ERROR,
    "structured_outputs_config options its backend does not support",
    source="vllm/config/structured_outputs.py StructuredOutputsConfig._validate_structured_output_config",
)
def structured_outputs_backend(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    config = f.serve.get("structured_outputs_config")
    if not isinstance(config, dict):
        return []
    backend = config.get("backend", "auto")
    if config.get("disable_any_whitespace") and backend not in ("xgrammar", "guidance"):
        key, message, fix = (
            "disable_any_whitespace",
            MSG_WHITESPACE,
            'set structured_outputs_config.backend = "xgrammar" or "guidance", or remove disable_any_whitespace',
        )
    elif config.get("disable_additional_properties") and backend != "guidance":
        key, message, fix = (
            "disable_additional_properties",
            MSG_ADDITIONAL,
            'set structured_outputs_config.backend = "guidance", or remove disable_additional_properties',
        )
    else:
        return []
    return [
        Hit(
            "structured-outputs-backend",
            f"structured_outputs_config.{key} = true with backend {shown(backend)}; vLLM {f.version} refuses to "
            f'start: "1 validation error for StructuredOutputsConfig / {message}"',
            [
                *f.loc("serve", "structured_outputs_config", key),
                *f.loc("serve", "structured_outputs_config", "backend"),
            ]
            or f.loc("serve", "structured_outputs_config"),
            fix,
            role=f.role.name,
            order=(STAGE_ARGPARSE, 0, 1),  # after the field constraints of rules/options.py (STAGE_ARGPARSE, 0)
        )
    ]


# vllm/v1/metrics/buckets.py BucketFamilyKey (0.32.0 and 0.33.0, the releases with custom_histogram_buckets)
BUCKET_FAMILIES = (
    "request_latency",
    "time_to_first_token",
    "inter_token_latency",
    "iteration_tokens",
    "request_params_n",
    "request_num_preemptions",
    "request_tokens",
    "kv_cache_residency",
)


def _is_number(bound: object) -> bool:
    return isinstance(bound, int | float) and not isinstance(bound, bool)


def histogram_buckets_failure(value: object) -> tuple[str, str] | None:
    """(family, vLLM's message) of ObservabilityConfig's custom_histogram_buckets validators; None: accepted or a
    type error the field's schema reports first (a bound that is no number, a family that is no list)."""
    if not isinstance(value, dict):
        return None
    for family, buckets in value.items():  # _reject_bool_histogram_bounds, before the field's type
        for bound in buckets if isinstance(buckets, list) else []:
            if isinstance(bound, bool):
                return family, f"custom_histogram_buckets[{family!r}]: bound {bound!r} must be a number, not a boolean"
    if not all(isinstance(b, list) and all(_is_number(x) for x in b) for b in value.values()):
        return None
    for family, buckets in value.items():  # _validate_custom_histogram_buckets, bounds coerced to float
        bounds = [float(b) for b in buckets]
        if family not in BUCKET_FAMILIES:
            known = sorted(BUCKET_FAMILIES)
            return family, f"custom_histogram_buckets: unknown bucket family {family!r}; known families: {known}"
        if not bounds:
            return family, f"custom_histogram_buckets[{family!r}]: bucket list must not be empty"
        for bound in bounds:
            if not math.isfinite(bound) or bound <= 0:
                return (
                    family,
                    f"custom_histogram_buckets[{family!r}]: bound {bound!r} must be finite and greater than 0",
                )
        if any(a >= b for a, b in itertools.pairwise(bounds)):
            return family, f"custom_histogram_buckets[{family!r}]: bounds {bounds} must be strictly increasing"
    return None


@rule(
    "histogram-buckets",
    Severity.ERROR,
    "custom_histogram_buckets with an unknown family or bounds that are not positive and increasing",
    source="vllm/config/observability.py ObservabilityConfig._validate_custom_histogram_buckets",
)
def histogram_buckets(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if not at_least(f.version, "0.32.0"):
        return []  # unknown-option reports the field before 0.32.0
    found = histogram_buckets_failure(f.serve.get("custom_histogram_buckets"))
    if found is None:
        return []
    family, message = found
    fix = (
        f"name one of the families: {', '.join(BUCKET_FAMILIES)}"
        if "unknown bucket family" in message
        else "write bucket bounds as positive, finite numbers in strictly increasing order"
    )
    return [
        Hit(
            "histogram-buckets",
            f'custom_histogram_buckets.{family}: vLLM {f.version} refuses to start: "{message}"',
            f.loc("serve", "custom_histogram_buckets", str(family)) or f.loc("serve", "custom_histogram_buckets"),
            fix,
            role=f.role.name,
            order=_field_order(f.version),
        )
    ]
