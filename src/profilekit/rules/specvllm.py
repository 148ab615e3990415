"""Speculative decoding against the rest of the engine: what `VllmConfig` refuses once SpeculativeConfig is built.

Source: `vllm/config/vllm.py` `VllmConfig._check_supports_watermarking` (0.32.0+; `_check_watermarking_unsupported`
in 0.30.0-0.31.0, the same checks), called from `__post_init__`
after the model hooks and the float KV-cache check, before the model is checked against the parallel layout.
The DFlash candidate-head check needs the draft checkpoint's architecture and is left to vLLM.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts, at_least
from profilekit.rules.modelcfg import shown
from profilekit.rules.specargs import normalised_method
from profilekit.rules.speculative import _spec, _unreadable
from profilekit.vllm.constraints import speculative_origin

# VllmConfig.__post_init__: after _reject_mismatched_float_kv_cache, before verify_with_parallel_config
WATERMARKING = (order.FLOAT_KV_CACHE + order.ATTENTION_HEADS) // 2


def _problem(f: RoleFacts, spec: dict[str, Any], mark: dict[str, Any]) -> tuple[str, str, str, tuple[str, ...]] | None:
    """(what, vLLM's message, the fix, the speculative keys at fault) of the first check watermarking fails."""
    method = normalised_method(spec, f.version)
    sample = spec.get("draft_sample_method", "greedy")
    if sample != "probabilistic":
        return (
            f"watermark_config with speculative decoding and draft_sample_method = {shown(sample)}",
            "Speculative decoding with watermarking requires draft_sample_method='probabilistic'.",
            'set speculative_config.draft_sample_method = "probabilistic"',
            ("draft_sample_method",),
        )
    rejection = spec.get("rejection_sample_method", "standard")
    if rejection != "standard":
        return (
            f"watermark_config with speculative decoding and rejection_sample_method = {shown(rejection)}",
            "Speculative decoding with watermarking requires rejection_sample_method='standard'.",
            'remove speculative_config.rejection_sample_method ("standard" is the default)',
            ("rejection_sample_method",),
        )
    parallel_ok = ("dflash", "dspark") if at_least(f.version, "0.33.0") else ("dspark",)
    if spec.get("parallel_drafting") is True and method not in parallel_ok:
        return (
            f"watermark_config with speculative_config.parallel_drafting = true and method = {shown(method)}",
            "Parallel speculative drafting is not supported with watermarking.",
            "remove speculative_config.parallel_drafting",
            ("parallel_drafting",),
        )
    allowed: tuple[str, ...]
    if at_least(f.version, "0.33.0"):
        allowed = ("dflash", "dspark", "eagle", "eagle3", "mtp")
        message = "Watermarking supports only dflash, dspark, eagle, eagle3 and mtp speculative decoding."
    else:
        allowed = ("dspark", "eagle", "eagle3", "mtp")
        message = "Watermarking supports only autoregressive model-based speculative decoding."
    if method not in allowed:
        return (
            f"watermark_config with speculative_config.method = {shown(method)}",
            message,
            f"use one of the methods {', '.join(allowed)}, or remove watermark_config",
            ("method",),
        )
    algorithm = mark.get("algorithm", "gumbel")
    if mark.get("allow_target_only_watermarking") is not True and algorithm != "dual_key_gumbel":
        return (
            f"watermark_config.algorithm = {shown(algorithm)} with speculative decoding",
            f"The '{algorithm}' watermarking algorithm does not support speculative decoding. Set "
            "allow_target_only_watermarking=true to leave draft tokens unwatermarked.",
            'use algorithm = "dual_key_gumbel", or set watermark_config.allow_target_only_watermarking = true',
            (),
        )
    return None


def _watermarking(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    mark, spec = f.serve.get("watermark_config"), _spec(f)
    if not isinstance(mark, dict) or spec is None or _unreadable(f):
        return []
    problem = _problem(f, spec, mark)
    if problem is None:
        return []
    what, message, fix, keys = problem
    spec_locs = [loc for key in keys for loc in f.locs("serve", *speculative_origin(f.serve, key))]
    return [
        Hit(
            "speculative-watermarking",
            f'{what}; vLLM {f.version} refuses to start: "{message}"',
            [*f.locs("serve", "watermark_config"), *(spec_locs or f.locs("serve", "speculative_config"))],
            fix,
            role=f.role.name,
            order=(STAGE_POST_INIT, WATERMARKING),
        )
    ]


rule(
    "speculative-watermarking",
    Severity.ERROR,
    "watermarking with speculative decoding in a form vLLM cannot watermark (sampling, method, algorithm)",
    releases=">=0.30.0",
    source="vllm/config/vllm.py VllmConfig._check_supports_watermarking",
)(_watermarking)
