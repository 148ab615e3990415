"""Options vLLM refuses for the model a role serves: an nvfp4 KV cache on an MLA model, offline data parallelism
on a dense model.

Sources: `vllm/config/vllm.py` `VllmConfig.validate_nvfp4_kv_cache_with_mla` (the first of the model validators,
every release 0.27.0-0.33.0; 0.30.0 widens it to every `nvfp4*` cache dtype except the `*_ds_mla` layouts);
`vllm/config/parallel.py` `ParallelConfig.__post_init__` (no data-parallel size in the options: vLLM reads
`VLLM_DP_SIZE` for the offline SPMD case and refuses it above 1 for a model without experts).
"""

from __future__ import annotations

from collections.abc import Iterable

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_VALIDATORS, Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import Undecided, needs, serve_int, shape, shown
from profilekit.rules.parallel import refuse
from profilekit.rules.runnerfacts import uses_mla
from profilekit.vllm.versions import at_least

MSG_NVFP4_MLA = {
    "0.27.0": (
        "nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) backends. Please use a different "
        "--kv-cache-dtype (e.g., 'fp8' or 'auto') for MLA models such as DeepSeek."
    ),
    "0.30.0": (
        "nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) backends. Please use a different "
        "--kv-cache-dtype (e.g., 'fp8', 'auto', or 'nvfp4_ds_mla' with a sparse MLA backend) for MLA models such "
        "as DeepSeek."
    ),
}
MSG_OFFLINE_DP = "Offline data parallel mode is not supported/useful for dense models."
# the first model validator, before validate_mamba_block_size (order.MAMBA_BLOCK_SIZE)
NVFP4_MLA = (STAGE_VALIDATORS, -20)
# ParallelConfig.__post_init__: the offline branch, in place of the data_parallel_rank range check (+5)
OFFLINE_DP_STEP = order.PARALLEL_POST_INIT + 6


def _nvfp4_cache(f: RoleFacts) -> str | None:
    """The written kv_cache_dtype when it is one the check covers in the targeted release."""
    dtype = f.serve.get("kv_cache_dtype")
    if not isinstance(dtype, str):
        return None
    if at_least(f.version, "0.30.0"):
        return dtype if dtype.startswith("nvfp4") and not dtype.endswith("_ds_mla") else None
    return dtype if dtype == "nvfp4" else None


def _mla(f: RoleFacts) -> bool | None:
    """`ModelConfig.use_mla` (the Transformers backend reads only `kv_lora_rank`; a bidirectional model never)."""
    s = shape(f)
    if s is None:
        return None
    disabled = f.env_value("VLLM_MLA_DISABLE")
    if disabled is not None and disabled.strip().isdigit() and int(disabled):
        return False  # vllm/envs.py: bool(int(...))
    if f.serve.get("model_impl") == "transformers":
        return s.text.get("kv_lora_rank") is not None
    if s.text.get("is_causal", True) is False:
        return False
    return uses_mla(f.model, f.env)


@rule(
    "nvfp4-kv-cache-mla",
    Severity.ERROR,
    "an nvfp4 kv_cache_dtype for a model with multi-head latent attention (needs the config.json)",
    source="vllm/config/vllm.py VllmConfig.validate_nvfp4_kv_cache_with_mla",
)
def nvfp4_kv_cache_mla(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    dtype = _nvfp4_cache(f)
    if dtype is None or not _mla(f):
        return []
    message = MSG_NVFP4_MLA["0.30.0" if at_least(f.version, "0.30.0") else "0.27.0"]
    return [
        Hit(
            "nvfp4-kv-cache-mla",
            refuse(f, f"kv_cache_dtype = {shown(dtype)} for a model with multi-head latent attention", message),
            [*f.loc("serve", "kv_cache_dtype"), *f.model.locations],
            'set kv_cache_dtype = "fp8" or "auto"'
            + (' (or "nvfp4_ds_mla" with a sparse MLA backend)' if at_least(f.version, "0.30.0") else ""),
            role=f.role.name,
            order=NVFP4_MLA,
        )
    ]


@needs
def _nvfp4_needs(f: RoleFacts) -> list[Undecided]:
    dtype = _nvfp4_cache(f)
    if dtype is None or shape(f) is not None:
        return []
    return [
        Undecided(
            f"kv_cache_dtype = {shown(dtype)} against the model's attention (MLA or not)",
            tuple(f.loc("serve", "kv_cache_dtype")),
        )
    ]


def _offline_dp_size(f: RoleFacts) -> int | None:
    """VLLM_DP_SIZE when vLLM reads it: no data-parallel size above 1 and no data_parallel_size_local = 0."""
    dp = serve_int(f, "data_parallel_size", 1)
    if dp is None or dp > 1 or serve_int(f, "data_parallel_size_local") == 0:
        return None
    raw = f.env_value("VLLM_DP_SIZE")
    try:
        size = int(raw) if raw is not None else 1
    except ValueError:
        return None  # vLLM fails reading the variable itself
    return size if size > 1 else None


@rule(
    "offline-data-parallel-dense",
    Severity.ERROR,
    "VLLM_DP_SIZE above 1 (offline data parallelism) for a model without experts (needs the config.json)",
    source="vllm/config/parallel.py ParallelConfig.__post_init__",
)
def offline_data_parallel_dense(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    size = _offline_dp_size(f)
    s = shape(f)
    if size is None or s is None or s.moe:
        return []
    return [
        Hit(
            "offline-data-parallel-dense",
            refuse(f, f'env VLLM_DP_SIZE = "{size}" for a model without experts', MSG_OFFLINE_DP),
            [*f.loc("env", "VLLM_DP_SIZE"), *f.model.locations],
            "remove VLLM_DP_SIZE; to run data-parallel replicas of a dense model, set data_parallel_size",
            role=f.role.name,
            order=order.built("ParallelConfig", f.version, OFFLINE_DP_STEP),
        )
    ]


@needs
def _offline_dp_needs(f: RoleFacts) -> list[Undecided]:
    size = _offline_dp_size(f)
    if size is None or shape(f) is not None:
        return []
    return [Undecided(f'VLLM_DP_SIZE = "{size}" against the model\'s experts', tuple(f.loc("env", "VLLM_DP_SIZE")))]
