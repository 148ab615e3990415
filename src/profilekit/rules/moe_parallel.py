"""Parallel launch checks around experts, Engram tables, API servers and object-storage models.

Sources: `vllm/config/vllm.py` `VllmConfig.__post_init__`: the moonep all2all backend refuses EPLB and a
non-linear expert placement, and first a quantized or non-BF16 model (0.31.0 and later, after the model runner and
profiler checks; the model's quantization and dtype come from `quantization`/`dtype` or the model's config.json); `vllm/config/kernel.py`
`bind_passthrough_all2all_backend`, called by `KernelConfig.set_platform_defaults` right after
`validate_flashinfer_moe_ep_model` (0.32.0 and later); `vllm/config/engram.py` `EngramConfig.verify_parallel_config`
and (0.30.0) `verify_load_config`, run by `VllmConfig._resolve_and_verify_engram_config` right after
`verify_model_config` (rules/outputs.py `engram-model`); `vllm/config/parallel.py`
`ParallelConfig._validate_parallel_config` (fault tolerance with more than one API server process, whose count
`vllm/entrypoints/cli/serve.py` derives from `--api-server-count`); `VllmConfig.try_verify_and_update_config`
(a model in object storage with a load format that cannot stream it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.archsupport import MOE_BACKEND_MODEL, moe_backend_of
from profilekit.rules.cache import model_dtype
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import Undecided, needs, serve_bool, serve_int, shape, shown
from profilekit.rules.outputs import ENGRAM
from profilekit.rules.parallel import refuse
from profilekit.vllm.versions import at_least

# after the adaptive-verification check (8, 3) and the compile ranges (8, 50), before the microbatching assertion (9)
MOONEP: Order = (STAGE_POST_INIT, 8, 60)
# set_platform_defaults: right after validate_flashinfer_moe_ep_model (archsupport.py)
PASSTHROUGH: Order = (STAGE_POST_INIT, *MOE_BACKEND_MODEL, 1)
ENGRAM_PARALLEL: Order = (STAGE_POST_INIT, ENGRAM, 1)  # right after verify_model_config (engram-model)
ENGRAM_LOAD: Order = (STAGE_POST_INIT, ENGRAM, 2)
OBJECT_STORAGE: Order = (STAGE_POST_INIT, order.MAMBA_MODEL_HOOK, 50)  # the end of try_verify_and_update_config
MOONEP_MODEL_FIX = {
    "quantization": "serve an unquantized BF16 model, or choose another all2all_backend",
    "dtype": 'set dtype = "bfloat16", or choose another all2all_backend',
}
FAULT_TOLERANCE_STEP = order.PARALLEL_VALIDATORS - 1  # _validate_parallel_config, before data_parallel_size_local

# vllm/config/kernel.py FLASHINFER_MOE_EP_BACKENDS (0.32.0-0.33.0)
SELF_DISPATCHING_MOE_BACKENDS = frozenset({"flashinfer_moe_ep_cutedsl", "flashinfer_moe_ep_mega_deep_gemm"})
# what ParallelConfig leaves as allgather_reducescatter: the default, and the removed pplx and naive it falls back from
PASSTHROUGH_ACCEPTS = frozenset({"allgather_reducescatter", "pplx", "naive"})
# vllm/transformers_utils/runai_utils.py SUPPORTED_SCHEMES
OBJECT_STORAGE_SCHEMES = ("s3://", "gs://", "az://")
STREAMING_LOAD_FORMATS = ("auto", "modelexpress", "runai_streamer", "runai_streamer_sharded")
ENGRAM_SHARED_LOAD_FORMATS = ("auto", "safetensors", "pt")


def _quantization(f: RoleFacts) -> str | None:
    """`ModelConfig.quantization`: the `quantization` a layer writes, else the config.json's `quant_method`."""
    written = f.serve.get("quantization")
    if isinstance(written, str):
        return written
    s = shape(f)
    quant = s.raw.get("quantization_config") if s is not None else None
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    return method.lower() if isinstance(method, str) else None


def _moonep_model(f: RoleFacts) -> tuple[str, str, list[str]] | None:
    """vLLM's first moonep checks: an unquantized BF16 model (the options or the model's config.json)."""
    quantization = _quantization(f)
    if quantization is not None:
        return (
            f'all2all_backend = "moonep" with a model quantized as {shown(quantization)}',
            "The moonep all2all backend currently supports unquantized BF16 models only; got "
            f"quantization={quantization!r}. Use a different --all2all-backend for quantized models.",
            ["quantization"],
        )
    dtype = model_dtype(f)
    if dtype is not None and dtype != "bfloat16":
        return (
            f'all2all_backend = "moonep" with a {dtype} model',
            f"The moonep all2all backend currently supports BF16 models only; got dtype=torch.{dtype}. Use a "
            "different --all2all-backend or --dtype bfloat16.",
            ["dtype"],
        )
    return None


@needs
def _moonep_needs(f: RoleFacts) -> list[Undecided]:
    if not at_least(f.version, "0.31.0") or f.serve.get("all2all_backend") != "moonep" or shape(f) is not None:
        return []
    if "quantization" in f.serve or _moonep_model(f) is not None:
        return []
    return [
        Undecided(
            'all2all_backend = "moonep" against the model\'s dtype and quantization',
            tuple(f.loc("serve", "all2all_backend")),
        )
    ]


def _moonep_failure(f: RoleFacts) -> tuple[str, str, list[str]] | None:
    """(what, vLLM's message, the keys) of the moonep checks, in vLLM's order."""
    if f.serve.get("all2all_backend") != "moonep":
        return None
    if (model := _moonep_model(f)) is not None:
        return model
    if serve_bool(f, "enable_eplb") is True:
        return (
            'all2all_backend = "moonep" with enable_eplb = true',
            "The moonep all2all backend does not support EPLB yet: EPLB rearranges expert parameters in a layout "
            "MoonEP's replicated [E+B] weights do not follow. Disable --enable-eplb or use a different "
            "--all2all-backend.",
            ["enable_eplb"],
        )
    placement = f.serve.get("expert_placement_strategy", "linear")
    if placement != "linear":
        return (
            f'all2all_backend = "moonep" with expert_placement_strategy = {shown(placement)}',
            "The moonep all2all backend requires linear expert placement: its load-time all-gather assumes each "
            "rank holds a contiguous chunk of the global expert range. Got --expert-placement-strategy "
            f"{placement!r}.",
            ["expert_placement_strategy"],
        )
    return None


@rule(
    "moonep-all2all",
    Severity.ERROR,
    "the moonep all2all backend with a quantized or non-BF16 model, EPLB or a non-linear expert placement",
    releases=">=0.31.0",
    source="vllm/config/vllm.py VllmConfig.__post_init__",
)
def moonep_all2all(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = _moonep_failure(f)
    if found is None:
        return []
    what, message, keys = found
    return [
        Hit(
            "moonep-all2all",
            refuse(f, what, message),
            [
                *f.loc("serve", "all2all_backend"),
                *(loc for key in keys for loc in f.loc("serve", key)),
                *(f.model.locations if keys[0] in MOONEP_MODEL_FIX and keys[0] not in f.serve else ()),
            ],
            MOONEP_MODEL_FIX.get(keys[0], f"remove {keys[0]}, or choose another all2all_backend"),
            role=f.role.name,
            order=MOONEP,
        )
    ]


@rule(
    "moe-backend-all2all",
    Severity.ERROR,
    "a FlashInfer MoE-EP backend (it dispatches and combines itself) with an explicit all2all_backend",
    releases=">=0.32.0",
    source="vllm/config/kernel.py bind_passthrough_all2all_backend",
)
def moe_backend_all2all(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = moe_backend_of(f)
    a2a = f.serve.get("all2all_backend")
    if found is None or found[0] not in SELF_DISPATCHING_MOE_BACKENDS or not isinstance(a2a, str):
        return []
    if a2a in PASSTHROUGH_ACCEPTS:
        return []
    backend, key = found
    message = (
        f"moe_backend={backend!r} dispatches and combines itself and cannot be paired with all2all_backend={a2a!r}; "
        "leave --all2all-backend unset."
    )
    return [
        Hit(
            "moe-backend-all2all",
            refuse(f, f'moe_backend = "{backend}" with all2all_backend = "{a2a}"', message),
            [*f.loc("serve", key), *f.loc("serve", "all2all_backend")],
            "remove all2all_backend: this MoE backend runs its own dispatch and combine",
            role=f.role.name,
            order=PASSTHROUGH,
        )
    ]


def _engram_parallel_failure(cfg: dict[str, Any], f: RoleFacts) -> tuple[str, str, list[str]] | None:
    """`EngramConfig.verify_parallel_config`'s first failure: (what, vLLM's message, the engram keys)."""
    dp = serve_int(f, "data_parallel_size", 1)
    elastic = serve_bool(f, "enable_elastic_ep") is True
    if dp is None:
        return None  # invalid-value
    if cfg.get("dp_shared_memory") is True:  # an explicit true; 0.31.0+ resolve an unset one to what is allowed
        if dp <= 1:
            return (
                f"engram_config.dp_shared_memory = true with data_parallel_size = {dp}",
                "dp_shared_memory requires data_parallel_size > 1.",
                ["dp_shared_memory"],
            )
        if elastic:
            return (
                "engram_config.dp_shared_memory = true with enable_elastic_ep = true",
                "dp_shared_memory is not supported with elastic EP.",
                ["dp_shared_memory"],
            )
    if cfg.get("embedding_across_dp") is True and dp > 1 and elastic:
        return (
            f"engram_config.embedding_across_dp = true with data_parallel_size = {dp} and enable_elastic_ep = true",
            "Engram embedding_across_dp is not supported with elastic EP yet.",
            ["embedding_across_dp"],
        )
    return None


@rule(
    "engram-parallel",
    Severity.ERROR,
    "engram_config sharing tables without data parallelism, or with elastic EP; (0.30.0) with a load format "
    "that skips weight callbacks",
    releases=">=0.30.0",
    source="vllm/config/engram.py EngramConfig.verify_parallel_config, verify_load_config (0.30.0)",
)
def engram_parallel(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("engram_config")
    if not isinstance(cfg, dict):
        return []
    found = _engram_parallel_failure(cfg, f)
    at = ENGRAM_PARALLEL
    extra = ["data_parallel_size", "enable_elastic_ep"]
    load_format = f.serve.get("load_format", "auto")
    if (
        found is None
        and not at_least(f.version, "0.31.0")
        and cfg.get("dp_shared_memory") is True
        and load_format not in ENGRAM_SHARED_LOAD_FORMATS
    ):  # EngramConfig.verify_load_config (0.30.0 only)
        found = (
            f"engram_config.dp_shared_memory = true with load_format = {shown(load_format)}",
            f"dp_shared_memory requires load_format 'auto', 'safetensors' or 'pt'; got {load_format!r}.",
            ["dp_shared_memory"],
        )
        at, extra = ENGRAM_LOAD, ["load_format"]
    if found is None:
        return []
    what, message, keys = found
    return [
        Hit(
            "engram-parallel",
            refuse(f, what, message),
            [
                *(loc for key in keys for loc in f.loc("serve", "engram_config", key)),
                *(loc for key in extra for loc in f.loc("serve", key)),
            ],
            f"remove engram_config.{keys[0]}, or change what vLLM names",
            role=f.role.name,
            order=at,
        )
    ]


def _truthy_int(value: Any) -> bool:
    try:
        return bool(int(str(value).strip()))
    except ValueError:
        return False


def api_server_processes(f: RoleFacts) -> int | None:
    """How many API server processes `vllm serve` starts for this role (vllm/entrypoints/cli/serve.py).

    None: none that counts (headless, the multi-port supervisor) or not known. The Rust frontend and elastic EP
    cap the count to 1.
    """
    if serve_bool(f, "headless") is True or serve_bool(f, "data_parallel_multi_port_external_lb") is True:
        return None
    if _truthy_int(f.env.get("VLLM_USE_RUST_FRONTEND", "0")) or serve_bool(f, "enable_elastic_ep") is True:
        return 1
    if "api_server_count" in f.serve:
        return serve_int(f, "api_server_count")
    if serve_bool(f, "data_parallel_external_lb") is True or f.serve.get("data_parallel_rank") is not None:
        return 1
    if serve_bool(f, "data_parallel_hybrid_lb") is True or f.serve.get("data_parallel_start_rank") is not None:
        return serve_int(f, "data_parallel_size_local") or 1
    return serve_int(f, "data_parallel_size", 1)


@rule(
    "fault-tolerance-api-servers",
    Severity.ERROR,
    "enable_fault_tolerance with more than one API server process",
    source="vllm/config/parallel.py ParallelConfig._validate_parallel_config",
)
def fault_tolerance_api_servers(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if serve_bool(f, "enable_fault_tolerance") is not True:
        return []
    count = api_server_processes(f)
    if count is None or count <= 1:
        return []
    message = (
        f"Fault tolerance requires a single API server process (--api-server-count=1), but got {count}. The FT "
        "system assumes one AsyncMPClient manages all engines."
    )
    written = "api_server_count" in f.serve
    return [
        Hit(
            "fault-tolerance-api-servers",
            refuse(
                f,
                f"enable_fault_tolerance = true with {'api_server_count' if written else 'the default api_server_count'}"
                f" = {count}",
                message,
            ),
            [
                *f.loc("serve", "enable_fault_tolerance"),
                *f.loc("serve", "api_server_count"),
                *([] if written else f.loc("serve", "data_parallel_size")),
            ],
            "set api_server_count = 1, or remove enable_fault_tolerance",
            role=f.role.name,
            order=order.built("ParallelConfig", f.version, FAULT_TOLERANCE_STEP),
        )
    ]


@rule(
    "object-storage-load-format",
    Severity.ERROR,
    "a model in object storage (s3://, gs://, az://) with a load_format that cannot stream it",
    source="vllm/config/vllm.py VllmConfig.try_verify_and_update_config",
)
def object_storage_load_format(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    model = f.serve.get("model")
    load_format = f.serve.get("load_format", "auto")
    if not isinstance(model, str) or not model.lower().startswith(OBJECT_STORAGE_SCHEMES):
        return []
    if not isinstance(load_format, str) or load_format in STREAMING_LOAD_FORMATS:
        return []
    # vLLM names the local folder it mirrored the model's config files into, not the URL
    message = (
        "To load a model from object storage (S3/GCS/Azure), 'load_format' must be 'modelexpress', 'runai_streamer' "
        f"or 'runai_streamer_sharded', but got '{load_format}'. Model: <the local copy of {model}>"
    )
    return [
        Hit(
            "object-storage-load-format",
            refuse(f, f"model = {shown(model)} with load_format = {shown(load_format)}", message),
            [*f.loc("serve", "load_format"), *f.loc("serve", "model")],
            'remove load_format (vLLM then streams the model with "runai_streamer"), or set it to '
            '"runai_streamer", "runai_streamer_sharded" or "modelexpress"',
            role=f.role.name,
            order=OBJECT_STORAGE,
        )
    ]
