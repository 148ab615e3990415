"""The compilation config: `CompilationConfig.__post_init__`'s value checks and the compile range endpoints.

Sources: `vllm/config/compilation.py` `CompilationConfig.__post_init__` (it runs while the argument parser reads
`--compilation-config`, once the fields are valid: "1 validation error for CompilationConfig", every release
0.27.0-0.33.0; `decoder_replay_cudagraph_capture_sizes` from 0.32.0) and `vllm/config/vllm.py`
`VllmConfig._set_compile_ranges` (late in `VllmConfig.__post_init__`: after the platform hook and the model
runner checks, before the microbatching assertion). The field values themselves (`mode`, `cudagraph_mode`, types)
are the generated constraints of rules/options.py.

On a CUDA or ROCm GPU `PassConfig.enable_qk_norm_rope_fusion` stays on and makes `__post_init__` add
'+rotary_embedding' to custom_ops (so '-rotary_embedding' conflicts with it); on a ROCm GPU (`[hardware] gpu`)
`fuse_rope_kvcache` and `fuse_qk_norm_rope_kvcache` do too, and elsewhere are switched off first. With no GPU
declared profilekit judges a CUDA host. vLLM's CPU platform, the oracle's, switches the fusion off first, so the
oracle cannot show that one case.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules.engine import STAGE_ARGPARSE, STAGE_POST_INIT, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import shown
from profilekit.vllm.constraints import argparse_problems
from profilekit.vllm.versions import at_least

POST_INIT: Order = (STAGE_ARGPARSE, 0, 1)  # after the option's field errors (rules/options.py: (0, 0))
# VllmConfig.__post_init__: after the model runner checks (8) and batch-sharded sampling (8, 2), before the
# microbatching assertion (9)
COMPILE_RANGES: Order = (STAGE_POST_INIT, 8, 50)
BASE_MODES = ("all", "none")
BACKENDS_FOR_VLLM_COMPILE = ("", "eager", "inductor")
VLLM_COMPILE = 3  # CompilationMode.VLLM_COMPILE
FIXES = {
    "custom_ops": "write each custom op as 'all' or 'none' (at most one of them), '+name' or '-name', never both "
    "'+name' and '-name' (pass_config.enable_qk_norm_rope_fusion adds '+rotary_embedding')",
    "backend": 'with mode VLLM_COMPILE, write backend = "inductor" or "eager" (or leave it out)',
    "inductor_passes": "name each pass by its qualified name, 'package.module.function'",
    "decoder_replay_cudagraph_capture_sizes": "write positive batch sizes",
    "encoder_cudagraph_token_budgets": "write positive token budgets",
    "encoder_cudagraph_max_vision_items_per_batch": "write 0 (vLLM infers it) or a positive number",
    "encoder_cudagraph_max_frames_per_batch": "leave it out (vLLM infers it), or write 0 or more",
}


def _ints(value: Any) -> list[int] | None:
    """A list of integers as pydantic reads them from JSON (1.0 is 1), or None when it holds anything else."""
    if not isinstance(value, list):
        return None
    out: list[int] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float) or item != int(item):
            return None
        out.append(int(item))
    return out


def _mode(value: Any) -> int | None:
    """`CompilationConfig.mode` as `validate_mode_before` and the enum read it."""
    names = ("NONE", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE")
    if isinstance(value, str):
        return names.index(value.upper()) if value.upper() in names else None
    if isinstance(value, int | float) and value == int(value):
        return int(value)
    return None


# the rotary fusions that make `__post_init__` add '+rotary_embedding': PassConfig keeps the first on CUDA and ROCm,
# the other two only on ROCm (every release 0.27.0-0.33.0)
ROTARY_FUSIONS = ("enable_qk_norm_rope_fusion",)
ROCM_ROTARY_FUSIONS = ("fuse_rope_kvcache", "fuse_qk_norm_rope_kvcache")


def _custom_ops_failure(cfg: dict[str, Any], rocm: bool = False) -> tuple[str, str] | None:
    """The custom_ops checks: (message, key) of the first that fails (`rocm`: on a ROCm GPU)."""
    ops = cfg.get("custom_ops", [])
    if not isinstance(ops, list) or not all(isinstance(op, str) for op in ops):
        return None
    ops = list(ops)
    passes = cfg.get("pass_config")
    fusions = (*ROTARY_FUSIONS, *(ROCM_ROTARY_FUSIONS if rocm else ()))
    if isinstance(passes, dict) and any(passes.get(k) for k in fusions) and "+rotary_embedding" not in ops:
        ops.append("+rotary_embedding")
    for op in ops:
        if op not in BASE_MODES and (len(op) < 2 or op[0] not in "+-"):
            return (
                f"Invalid syntax '{op}' for custom op, must be 'all', 'none', '+op' or '-op' "
                "(where 'op' is the registered op name)",
                "custom_ops",
            )
    if len([op for op in ops if op in BASE_MODES]) > 1:
        return "custom_ops can contain only one base mode: 'all' or 'none'", "custom_ops"
    enabled = {op[1:] for op in ops if op.startswith("+")}
    disabled = {op[1:] for op in ops if op.startswith("-")}
    both = sorted(enabled & disabled)
    if both:
        return (
            f"custom_ops cannot both enable and disable the same operation(s): {', '.join(both)}. "
            "Remove either the '+' or '-' directive",
            "custom_ops",
        )
    return None


def _encoder_failure(cfg: dict[str, Any], version: str) -> tuple[str, str] | None:
    """The checks after custom_ops: the backend of VLLM_COMPILE, capture sizes and encoder CUDA graphs."""
    backend = cfg.get("backend", "")
    if _mode(cfg.get("mode")) == VLLM_COMPILE and backend not in BACKENDS_FOR_VLLM_COMPILE:
        return f"Invalid backend for piecewise compilation: {backend}", "backend"
    replay = _ints(cfg.get("decoder_replay_cudagraph_capture_sizes", []))
    if at_least(version, "0.32.0") and replay and any(s <= 0 for s in replay):
        return "All decoder_replay_cudagraph_capture_sizes must be positive", "decoder_replay_cudagraph_capture_sizes"
    if cfg.get("cudagraph_mm_encoder"):
        items = cfg.get("encoder_cudagraph_max_vision_items_per_batch", 0)
        if isinstance(items, int | float) and items < 0:
            return (
                "encoder_cudagraph_max_vision_items_per_batch must be non-negative (0 = auto-infer)",
                "encoder_cudagraph_max_vision_items_per_batch",
            )
        frames = cfg.get("encoder_cudagraph_max_frames_per_batch")
        if isinstance(frames, int | float) and frames < 0:
            return (
                "encoder_cudagraph_max_frames_per_batch must be non-negative (None = auto-infer)",
                "encoder_cudagraph_max_frames_per_batch",
            )
    budgets = _ints(cfg.get("encoder_cudagraph_token_budgets", []))
    if budgets and any(b <= 0 for b in budgets):
        return f"All encoder_cudagraph_token_budgets must be positive, got {budgets}", "encoder_cudagraph_token_budgets"
    return None


def compilation_failure(cfg: dict[str, Any], version: str, rocm: bool = False) -> tuple[str, str] | None:
    """`CompilationConfig.__post_init__`'s first failure as (message, key); None when it passes or is unknown
    (`rocm`: on a ROCm GPU, where the ROCm-only rotary fusions stay on)."""
    passes = cfg.get("inductor_passes", {})
    if not isinstance(passes, dict):
        return None
    for qualified in passes.values():
        if isinstance(qualified, str) and "." not in qualified:
            # `__import__("")`: a pass named without its module
            return "Empty module name", "inductor_passes"
    if passes:
        return None  # the passes are imported first: what is installed decides
    return _custom_ops_failure(cfg, rocm) or _encoder_failure(cfg, version)


@rule(
    "compilation-config",
    Severity.ERROR,
    "compilation_config values CompilationConfig refuses once its fields are valid (custom_ops, backend, ...)",
    source="vllm/config/compilation.py CompilationConfig.__post_init__",
)
def compilation_config(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("compilation_config")
    flag = ctx.catalogue.flag("compilation_config") if ctx.catalogue is not None else None
    if not isinstance(cfg, dict) or (flag is not None and argparse_problems(flag, cfg, f.version)):
        return []  # __post_init__ runs only once the keys and fields are valid (rules/options.py reports those)
    found = compilation_failure(cfg, f.version, rocm=f.gpu is not None and f.gpu.platform == "rocm")
    if found is None:
        return []
    message, key = found
    return [
        Hit(
            "compilation-config",
            f"compilation_config.{key} = {shown(cfg.get(key))}; vLLM {f.version} refuses to start: "
            f'"1 validation error for CompilationConfig / Value error, {message}"',
            f.loc("serve", "compilation_config", key) or f.locs("serve", "compilation_config"),
            FIXES.get(key, "write what vLLM names"),
            role=f.role.name,
            order=POST_INIT,
        )
    ]


@rule(
    "compile-range-endpoint",
    Severity.ERROR,
    "compilation_config.compile_ranges_endpoints holds an endpoint that is not positive",
    source="vllm/config/vllm.py VllmConfig._set_compile_ranges",
)
def compile_range_endpoint(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("compilation_config")
    endpoints = _ints(cfg.get("compile_ranges_endpoints")) if isinstance(cfg, dict) else None
    bad = next((x for x in endpoints or [] if x <= 0), None)
    if bad is None:
        return []
    return [
        Hit(
            "compile-range-endpoint",
            f"compilation_config.compile_ranges_endpoints holds {bad}; vLLM {f.version} refuses to start: "
            f'"1 validation error for VllmConfig / Assertion failed, Invalid compile range endpoint: {bad}"',
            f.loc("serve", "compilation_config", "compile_ranges_endpoints"),
            "write positive token counts (vLLM adds max_num_batched_tokens itself), or leave the key out",
            role=f.role.name,
            order=COMPILE_RANGES,
        )
    ]
