"""KV and Mamba cache options against prefix caching and the model's dtype.

Sources: `vllm/config/vllm.py` `VllmConfig.validate_mamba_block_size` (a model validator, every release
0.27.0-0.33.0, run before the ReplaySSM validator) and `VllmConfig._reject_mismatched_float_kv_cache`
(0.33.0, early in `__post_init__`), with the model dtype of `vllm/config/model.py` `_get_and_verify_dtype`;
and `vllm/config/offload.py` `OffloadConfig.validate_offload_config` (prefetch offloading, every release); the
hybrid KV cache manager asked for explicitly for a model with chunked local attention (`attention_chunk_size` in
its config.json), which `VllmConfig.__post_init__` turns off (every release, as on a GPU host, where the platform
supports the manager).
"""

from __future__ import annotations

from collections.abc import Iterable

from profilekit.errors import Severity
from profilekit.hardware import supported_dtypes
from profilekit.rules import order
from profilekit.rules.engine import STAGE_POST_INIT, STAGE_VALIDATORS, Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import (
    Undecided,
    derived_max_model_len,
    lacking,
    needs,
    serve_int,
    shape,
    shown,
)
from profilekit.rules.specargs import normalised_method
from profilekit.rules.speculative import _spec
from profilekit.vllm.modelshape import DTYPES
from profilekit.vllm.versions import at_least

MSG_MAMBA_BLOCK = "--mamba-block-size can only be set with --enable-prefix-caching"


def _mamba_block_size(f: RoleFacts) -> int | None:
    return serve_int(f, "mamba_block_size")


def _prefix_caching_text(f: RoleFacts) -> str:
    if f.prefix_caching_explicit is False:
        return "enable_prefix_caching = false"
    return f"prefix caching off (vLLM {f.version}'s default for a {f.model.architecture} model)"


@rule(
    "mamba-block-size-prefix-caching",
    Severity.ERROR,
    "mamba_block_size set while prefix caching is off",
    source="vllm/config/vllm.py VllmConfig.validate_mamba_block_size",
)
def mamba_block_size_prefix_caching(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    size = _mamba_block_size(f)
    if size is None or f.prefix_caching is not False:
        return []
    mml = derived_max_model_len(f)
    if mml is None or size == mml:  # vLLM counts a block size equal to max_model_len as unset
        return []
    return [
        Hit(
            "mamba-block-size-prefix-caching",
            f"mamba_block_size = {size} with {_prefix_caching_text(f)}; vLLM {f.version} refuses to start: "
            f'"{MSG_MAMBA_BLOCK}"',
            [*f.loc("serve", "mamba_block_size"), *f.loc("serve", "enable_prefix_caching")],
            "remove mamba_block_size (it sizes the blocks prefix caching keeps), or set enable_prefix_caching = true",
            role=f.role.name,
            order=(STAGE_VALIDATORS, order.MAMBA_BLOCK_SIZE),
        )
    ]


@needs
def _mamba_block_needs(f: RoleFacts) -> list[Undecided]:
    size = _mamba_block_size(f)
    if size is None or f.prefix_caching is not False or derived_max_model_len(f) is not None:
        return []
    why = lacking(shape(f), "max_position_embeddings or other length key")
    return [
        Undecided(
            f"mamba_block_size = {size} without prefix caching against max_model_len{why}",
            tuple(f.loc("serve", "mamba_block_size")),
        )
    ]


@rule(
    "mamba-prefix-caching-chunked-prefill",
    Severity.ERROR,
    "Mamba prefix caching (cache mode align) of a hybrid model with chunked prefill off",
    source="vllm/model_executor/models/config.py MambaModelConfig.verify_and_update_config",
)
def mamba_prefix_caching_chunked_prefill(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    """Before 0.32.0 only cache mode `align` needs chunked prefill (`all` does not); from 0.32.0 any prefix caching."""
    if f.model.hybrid is not True or f.prefix_caching is not True or f.serve.get("enable_chunked_prefill") is not False:
        return []
    v = f.version
    if not at_least(v, "0.32.0") and f.mamba_cache_mode != "align":
        return []
    caching = "enable_prefix_caching = true" if f.prefix_caching_explicit else f"prefix caching on (vLLM {v}'s default)"
    if at_least(v, "0.33.0"):
        message = "Chunked prefill is required for Mamba prefix caching."
    else:
        message = "Chunked prefill is required for mamba cache mode 'align'."
        caching += " (Mamba cache mode align)"
    return [
        Hit(
            "mamba-prefix-caching-chunked-prefill",
            f"enable_chunked_prefill = false with {caching} for a {f.model.architecture} (hybrid) model; vLLM {v} "
            f'refuses to start: "{message}"',
            [
                *f.loc("serve", "enable_chunked_prefill"),
                *f.loc("serve", "enable_prefix_caching"),
                *f.loc("serve", "mamba_cache_mode"),
            ],
            "remove enable_chunked_prefill = false, or set enable_prefix_caching = false",
            role=f.role.name,
            order=(STAGE_POST_INIT, order.MAMBA_MODEL_HOOK),
        )
    ]


def model_dtype(f: RoleFacts) -> str | None:
    """`ModelConfig.dtype` on the role's GPU: `dtype` when written, else the checkpoint's (float32 -> the platform's
    first dtype, bfloat16; a bfloat16 checkpoint -> float16 on a CUDA GPU below capability 8.0)."""
    written = f.serve.get("dtype", "auto")
    if not isinstance(written, str):
        return None
    written = written.lower()
    if written != "auto":
        return DTYPES.get(written)
    s = shape(f)
    if s is None:
        return None
    config_dtype = s.dtype or "float32"  # no dtype in config.json: transformers' float32
    supported = supported_dtypes(f.gpu)  # _resolve_auto_dtype: the platform's, on the declared GPU
    if config_dtype == "float32":
        return supported[0]  # downcast to the platform's first supported dtype
    if config_dtype not in ("float16", "bfloat16"):
        return None
    return config_dtype if config_dtype in supported else supported[0]  # bfloat16 below 8.0: float16


@rule(
    "kv-cache-dtype-model-dtype",
    Severity.ERROR,
    "a float16/bfloat16 kv_cache_dtype that differs from the model's dtype",
    releases=">=0.33.0",
    source="vllm/config/vllm.py VllmConfig._reject_mismatched_float_kv_cache",
)
def kv_cache_dtype_model_dtype(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cache = f.serve.get("kv_cache_dtype")
    if cache not in ("float16", "bfloat16"):
        return []
    model = model_dtype(f)
    if model is None or model == cache:
        return []
    allowed = f"`auto` or `{model}`" if model in ("float16", "bfloat16") else "`auto`"
    message = (
        f'kv_cache_dtype="{cache}" is incompatible with dtype="{model}". Please set `--kv-cache-dtype` to {allowed}.'
    )
    origin = f"dtype = {shown(f.serve['dtype'])}" if "dtype" in f.serve else "its config.json"
    s = shape(f)
    if "dtype" not in f.serve and f.gpu is not None and s is not None and s.dtype not in (None, model):
        origin = f"its config.json's {s.dtype}, which vLLM runs as {model} on {f.gpu.name}"
    return [
        Hit(
            "kv-cache-dtype-model-dtype",
            f"kv_cache_dtype = {shown(cache)} with a model in {model} ({origin}); vLLM {f.version} refuses to start: "
            f'"{message}"',
            [*f.loc("serve", "kv_cache_dtype"), *(f.loc("serve", "dtype") or f.model.locations)],
            'set kv_cache_dtype = "auto"' + (f' or "{model}"' if model in ("float16", "bfloat16") else ""),
            role=f.role.name,
            order=(STAGE_POST_INIT, order.FLOAT_KV_CACHE),
        )
    ]


@needs
def _kv_dtype_needs(f: RoleFacts) -> list[Undecided]:
    cache = f.serve.get("kv_cache_dtype")
    if not at_least(f.version, "0.33.0") or cache not in ("float16", "bfloat16") or model_dtype(f) is not None:
        return []
    if not isinstance(f.serve.get("dtype", "auto"), str) or str(f.serve.get("dtype", "auto")).lower() != "auto":
        return []
    return [
        Undecided(f"kv_cache_dtype = {shown(cache)} against the model's dtype", tuple(f.loc("serve", "kv_cache_dtype")))
    ]


OFFLOAD_DEFAULTS = {"offload_group_size": 0, "offload_num_in_group": 1, "offload_prefetch_step": 1}


@rule(
    "offload-prefetch-group",
    Severity.ERROR,
    "prefetch CPU offloading whose group holds fewer layers than it offloads, or that never prefetches",
    source="vllm/config/offload.py OffloadConfig.validate_offload_config",
)
def offload_prefetch_group(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    sizes = {key: serve_int(f, key, default) for key, default in OFFLOAD_DEFAULTS.items()}
    group, in_group, step = (sizes[k] for k in OFFLOAD_DEFAULTS)
    if group is None or in_group is None or step is None or group < 0 or in_group < 1 or step < 0:
        return []  # PrefetchOffloadConfig's field constraints fail first (invalid-value)
    backend = f.serve.get("offload_backend", "auto")
    if backend != "prefetch" and group <= 0:
        return []
    on = 'offload_backend = "prefetch"' if backend == "prefetch" else f"offload_group_size = {group}"
    if in_group > group:
        what = f"{on} with offload_num_in_group {'= ' if 'offload_num_in_group' in f.serve else 'unset, '}{in_group}"
        if backend == "prefetch":
            what += f" and offload_group_size {'= ' if 'offload_group_size' in f.serve else 'unset, '}{group}"
        message = f"offload_num_in_group ({in_group}) must be <= offload_group_size ({group})"
        fix = (
            "set offload_group_size to the number of layers per group (at least offload_num_in_group), or remove "
            "offload_backend"
        )
        keys = ("offload_backend", "offload_group_size", "offload_num_in_group")
    elif step < 1:
        what = f"{on} with offload_prefetch_step = {step}"
        message = (
            f"offload_prefetch_step ({step}) must be >= 1 when prefetch offloading is enabled (offload_group_size > 0)"
        )
        fix = "set offload_prefetch_step to at least 1"
        keys = ("offload_prefetch_step", "offload_group_size", "offload_backend")
    else:
        return []
    return [
        Hit(
            "offload-prefetch-group",
            f'{what}; vLLM {f.version} refuses to start: "{message}"',
            [loc for key in keys for loc in f.loc("serve", key)],
            fix,
            role=f.role.name,
            order=order.built("OffloadConfig", f.version),
        )
    ]


# VllmConfig.__post_init__: the hybrid KV cache manager is resolved after the KV transfer post-init (10)
HYBRID_KV_CACHE_MANAGER = (STAGE_POST_INIT, 10, 40)
# SpeculativeConfig.use_eagle (every release)
_EAGLE_LIKE = ("eagle", "eagle3", "mtp", "dflash", "dspark")


def _chunked_attention_reason(f: RoleFacts) -> tuple[str, list[str]] | None:
    """Why vLLM turns the hybrid KV cache manager off for a model with chunked local attention: (what, the keys
    at fault); None when it does not, or when profilekit cannot tell."""
    s = shape(f)
    chunk = s.text.get("attention_chunk_size") if s is not None else None
    if chunk is None:
        return None  # absent from the config.json (a transformers default would decide for Llama 4)
    spec = _spec(f)
    method = normalised_method(spec, f.version) if spec else None
    if method in _EAGLE_LIKE:
        return f"speculative method {shown(method)} with chunked local attention", ["speculative_config"]
    raw = f.env_value("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE")
    try:
        allowed = bool(int(raw)) if raw is not None else True
    except ValueError:
        return None
    if allowed:
        return None
    return 'env VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE = "0"', ["env"]


@rule(
    "hybrid-kv-cache-manager-unsupported",
    Severity.ERROR,
    "disable_hybrid_kv_cache_manager = false for a chunked-local-attention model vLLM runs without it",
    source="vllm/config/vllm.py VllmConfig.__post_init__",
)
def hybrid_kv_cache_manager_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.serve.get("disable_hybrid_kv_cache_manager") is not False:
        return []
    found = _chunked_attention_reason(f)
    if found is None:
        return []
    what, keys = found
    flag = (
        "--enable-hybrid-kv-cache-manager" if at_least(f.version, "0.33.0") else "--no-disable-hybrid-kv-cache-manager"
    )
    message = (
        "Hybrid KV cache manager was explicitly enabled but is not supported in this configuration. Consider "
        f"omitting the {flag} flag to let vLLM decide automatically."
    )
    where = [
        *(f.locs("serve", "speculative_config") if "speculative_config" in keys else []),
        *(f.loc("env", "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE") if "env" in keys else []),
    ]
    return [
        Hit(
            "hybrid-kv-cache-manager-unsupported",
            f"disable_hybrid_kv_cache_manager = false with {what} (attention_chunk_size in the model's config.json); "
            f'vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", "disable_hybrid_kv_cache_manager"), *where, *f.model.locations],
            "remove disable_hybrid_kv_cache_manager: vLLM turns the hybrid KV cache manager off for this model",
            role=f.role.name,
            order=HYBRID_KV_CACHE_MANAGER,
        )
    ]
