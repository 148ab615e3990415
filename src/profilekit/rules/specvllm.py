"""Speculative decoding against the rest of the engine: what `VllmConfig` refuses once SpeculativeConfig is built.

Source: `vllm/config/vllm.py` `VllmConfig._check_supports_watermarking` (0.32.0+; `_check_watermarking_unsupported`
in 0.30.0-0.31.0, the same checks), called from `__post_init__`
after the model hooks and the float KV-cache check, before the model is checked against the parallel layout.
The DFlash candidate-head check needs the draft checkpoint's architecture and is left to vLLM.
Also `EngineArgs.create_engine_config` (every release): with LoRA, right after LoRAConfig is built, the batch
budget must hold every sequence's speculative tokens plus one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import serve_int, shown
from profilekit.rules.scheduler import budget
from profilekit.rules.specargs import normalised_method, verified_count
from profilekit.rules.speculative import _spec, _unreadable
from profilekit.vllm.constraints import speculative_origin
from profilekit.vllm.versions import at_least

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


LORA_MESSAGE = "Consider increasing max_num_batched_tokens or decreasing num_speculative_tokens"


def _lora_budget(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    spec = _spec(f)
    if f.serve.get("enable_lora") is not True or spec is None or _unreadable(f):
        return []
    count, b = verified_count(spec, f.version), budget(f)
    if count is None or b is None or b.batched_tokens >= b.seqs * (count + 1):
        return []
    tokens = "" if b.batched_written else " (vLLM's default)"
    seqs = "" if b.seqs_written else " (vLLM's default)"
    return [
        Hit(
            "speculative-lora-batched-tokens",
            f"enable_lora with max_num_batched_tokens = {b.batched_tokens}{tokens} below max_num_seqs = "
            f"{b.seqs}{seqs} x (num_speculative_tokens = {count} + 1) = {b.seqs * (count + 1)}; vLLM {f.version} "
            f'refuses to start: "{LORA_MESSAGE}"',
            [
                *f.loc("serve", "enable_lora"),
                *f.loc("serve", "max_num_batched_tokens"),
                *f.locs("serve", *speculative_origin(f.serve, "num_speculative_tokens")),
            ],
            f"raise max_num_batched_tokens to at least {b.seqs * (count + 1)}, or lower max_num_seqs or "
            "num_speculative_tokens",
            role=f.role.name,
            order=order.built("LoRAConfig", f.version, 100),
        )
    ]


rule(
    "speculative-lora-batched-tokens",
    Severity.ERROR,
    "LoRA with speculative decoding and a batch budget below max_num_seqs x (num_speculative_tokens + 1)",
    source="vllm/engine/arg_utils.py EngineArgs.create_engine_config",
)(_lora_budget)


# VllmConfig.__post_init__: _validate_adaptive_verification right after _validate_batch_sharded_sampling
ADAPTIVE = (STAGE_POST_INIT, 8, 3)


def _cudagraphs_off(f: RoleFacts) -> str | None:
    """What turns CUDA graphs off (or, 0.30.0+, leaves no full ones) when the options alone say so."""
    if f.serve.get("enforce_eager") is True:
        return "enforce_eager = true"
    compilation = f.serve.get("compilation_config")
    mode = compilation.get("cudagraph_mode") if isinstance(compilation, dict) else None
    if not isinstance(mode, str):
        return None
    off = ("NONE", "PIECEWISE") if at_least(f.version, "0.30.0") else ("NONE",)
    return f"compilation_config.cudagraph_mode = {shown(mode)}" if mode.upper() in off else None


def _adaptive_engine(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    spec = _spec(f)
    if spec is None or _unreadable(f) or spec.get("enable_adaptive_verification") is not True:
        return []
    eager = _cudagraphs_off(f)
    if f.serve.get("enable_lora") is True:
        what, message, fix = (
            "speculative_config.enable_adaptive_verification = true with enable_lora",
            "Adaptive verification is not currently compatible with LoRA",
            "remove enable_adaptive_verification or enable_lora",
        )
        locs = f.loc("serve", "enable_lora")
    elif eager is not None:
        what = f"speculative_config.enable_adaptive_verification = true with {eager}"
        if at_least(f.version, "0.30.0"):
            message = (
                "Adaptive verification requires full CUDA graphs. Use cudagraph mode FULL, FULL_DECODE_ONLY, or "
                "FULL_AND_PIECEWISE, or disable adaptive verification."
            )
        else:
            message = "Adaptive verification is not currently compatible with enforce_eager/cudagraph_mode=none"
        fix = "remove enable_adaptive_verification, or run with CUDA graphs (no enforce_eager)"
        locs = [*f.loc("serve", "enforce_eager"), *f.loc("serve", "compilation_config", "cudagraph_mode")]
    elif (pp := serve_int(f, "pipeline_parallel_size", 1)) is not None and pp > 1:
        # the cost curves live on the last pipeline rank only (checked once the CUDA graphs are full)
        what, message, fix = (
            f"speculative_config.enable_adaptive_verification = true with pipeline_parallel_size = {pp}",
            "Adaptive verification is not currently compatible with pipeline parallelism",
            "remove enable_adaptive_verification, or set pipeline_parallel_size = 1",
        )
        locs = f.loc("serve", "pipeline_parallel_size")
    else:
        return []
    return [
        Hit(
            "speculative-adaptive-engine",
            f'{what}; vLLM {f.version} refuses to start: "{message}"',
            [*f.locs("serve", *speculative_origin(f.serve, "enable_adaptive_verification")), *locs],
            fix,
            role=f.role.name,
            order=ADAPTIVE,
        )
    ]


rule(
    "speculative-adaptive-engine",
    Severity.ERROR,
    "adaptive verification with LoRA, without (full) CUDA graphs when the options say so, or with pipeline parallelism",
    releases=">=0.29.0",
    source="vllm/config/vllm.py VllmConfig._validate_adaptive_verification",
)(_adaptive_engine)
