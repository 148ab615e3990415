"""HiSparse (sparse-MLA decode hot-buffering, 0.30.0+) with the options vLLM refuses beside it.

Sources: `vllm/config/vllm.py` (0.30.0-0.33.0). HiSparse is on when `attention_config.hisparse_config` is written,
or when `kv_transfer_config` names a HiSparseConnector (directly or as a MultiConnector child): `__post_init__`
then sets `hisparse_config` itself (rules/runnerfacts.py `hisparse`).

- `VllmConfig.use_v2_model_runner`: HiSparse runs only on Model Runner V2 and refuses VLLM_USE_V2_MODEL_RUNNER=0
  the first time vLLM asks which runner it uses.
- `VllmConfig.__post_init__`, the HiSparse block after the optimisation-level defaults: pipeline parallelism,
  decode context parallelism, `cudagraph_mode=FULL` (0.32.0+), `--no-scheduler-reserve-full-isl` (0.31.0+) and
  a model whose config has no `index_topk` (not a DSA model; needs the config.json), in that order. vLLM first refuses HiSparse off NVIDIA CUDA, so the oracle (CPU platform) cannot show these;
  a GPU host reaches them.
- `VllmConfig.__post_init__` after the hybrid KV cache manager is resolved: HiSparse with
  `disable_hybrid_kv_cache_manager = true`. When the choice is left to vLLM (a connector without HMA support
  turns the manager off), the connector class decides and it is left to vLLM.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from profilekit.errors import Location, Severity
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import Undecided, needs, serve_bool, serve_int, shape, shown
from profilekit.rules.runnerfacts import hisparse
from profilekit.vllm.versions import at_least

SOURCE = "vllm/config/vllm.py VllmConfig.__post_init__"
MSG_V2 = "HiSparse requires Model Runner V2; remove VLLM_USE_V2_MODEL_RUNNER=0."
MSG_PP = "HiSparse does not support pipeline parallelism."
MSG_DCP = "HiSparse does not support decode context parallelism."
MSG_FULL = (
    "HiSparse does not support cudagraph_mode=FULL; use FULL_AND_PIECEWISE (the default), which captures FULL "
    "graphs for decode batches."
)
MSG_RESERVE = "HiSparse requires --scheduler-reserve-full-isl; remove --no-scheduler-reserve-full-isl."
MSG_HMA = (
    "HiSparse requires the hybrid KV cache manager; remove --disable-hybrid-kv-cache-manager or use connectors "
    "that support HMA."
)
MSG_DSA = "HiSparse is only supported for DSA models with index_topk."
# model types whose config class (transformers 5.24.0 as the oracle pins it, vLLM's hy_v4) gives `index_topk` a
# default, so `hasattr(hf_config, "index_topk")` holds whatever config.json says: profilekit leaves them to vLLM
INDEX_TOPK_DEFAULTS = frozenset(
    {
        "axk2",
        "deepseek_v32",
        "deepseek_v4",
        "dots3_note",
        "glm5_next",
        "glm_moe_dsa",
        "hy_v4",
        "hy_v4_vl",
        "minimax_m3_vl",
        "mistral_large4",
        "step3p5",
        "step3p7",
    }
)

# the speculative methods 0.31.0-0.32.0 keep async scheduling on for (EagleModelTypes, NgramGPUTypes and the rest)
ASYNC_METHODS = ("eagle", "eagle3", "extract_hidden_states", "mtp", "ngram_gpu", "draft_model", "dspark", "dflash")
# the HiSparse block: after the spec-decode metrics check (6), before the KV sharing fast prefill check (6, 50)
UNSUPPORTED: Order = (STAGE_POST_INIT, 6, 20)
# right after the hybrid KV cache manager is resolved (rules/kv.py, 10)
HYBRID_KV_CACHE_MANAGER: Order = (STAGE_POST_INIT, 10, 50)


def _origin(f: RoleFacts) -> list[Location]:
    """Where HiSparse was asked for."""
    written = f.loc("serve", "attention_config", "hisparse_config") or f.loc("serve", "attention_config")
    if written and hisparse(f.version, f.serve) == "attention_config.hisparse_config":
        return written
    return f.loc("serve", "kv_transfer_config", "kv_connector") or f.loc("serve", "kv_transfer_config")


def _runner_order(f: RoleFacts) -> Order:
    """Where vLLM first asks `use_v2_model_runner` once HiSparse is on (and so refuses V1).

    `attention_config.hisparse_config` is seen from the start: 0.33.0 asks right before its async scheduling
    checks; 0.31.0-0.32.0 ask there only to decide async scheduling left unset with pipeline parallelism (and
    no speculative method or pooling runner that decides it first); otherwise, and for a HiSparseConnector
    (inferred in the HiSparse block), vLLM asks right before the model runner checks.
    """
    if hisparse(f.version, f.serve) == "attention_config.hisparse_config":
        if at_least(f.version, "0.33.0"):
            return (STAGE_POST_INIT, 5, 20)
        pp = serve_int(f, "pipeline_parallel_size", 1)
        if (
            at_least(f.version, "0.31.0")
            and pp is not None
            and pp > 1
            and "async_scheduling" not in f.serve
            and f.serve.get("distributed_executor_backend", "mp") == "mp"
            and f.serve.get("runner") != "pooling"
            and _keeps_async(f)
        ):
            return (STAGE_POST_INIT, 5, 40)
    return (STAGE_POST_INIT, 7, 99)  # after the CUDA platform hook (7), before the model runner checks (8)


def _keeps_async(f: RoleFacts) -> bool:
    """No speculative setting that makes 0.31.0-0.32.0 turn async scheduling off before asking for the runner."""
    if f.spec_method is None:
        return f.num_spec == 0
    spec = f.serve.get("speculative_config")
    unpadded = isinstance(spec, dict) and spec.get("disable_padded_drafter_batch") is True
    keeps = f.spec_method in ASYNC_METHODS or f.spec_method.endswith("_mtp")  # vLLM renames *_mtp to mtp
    return keeps and not unpadded


@rule(
    "hisparse-model-runner-v1",
    Severity.ERROR,
    "HiSparse (attention_config.hisparse_config or a HiSparseConnector) with VLLM_USE_V2_MODEL_RUNNER=0",
    releases=">=0.30.0",
    source="vllm/config/vllm.py VllmConfig.use_v2_model_runner",
)
def hisparse_model_runner_v1(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    what = hisparse(f.version, f.serve)
    raw = f.env_value("VLLM_USE_V2_MODEL_RUNNER")
    if what is None or raw is None:
        return []
    try:
        v1 = not int(raw)
    except ValueError:
        return []  # not an integer: vLLM fails on the value itself
    if not v1:
        return []
    return [
        Hit(
            "hisparse-model-runner-v1",
            f'{what} with VLLM_USE_V2_MODEL_RUNNER = {json.dumps(raw)}; vLLM {f.version} refuses to start: "{MSG_V2}"',
            [*_origin(f), *f.loc("env", "VLLM_USE_V2_MODEL_RUNNER")],
            "leave VLLM_USE_V2_MODEL_RUNNER unset (HiSparse makes vLLM pick Model Runner V2), or drop HiSparse",
            role=f.role.name,
            order=_runner_order(f),
        )
    ]


def _unsupported(f: RoleFacts) -> list[tuple[str, str, str, list[Location]]]:
    """(what, vLLM's message, fix, locations) of each option the HiSparse block refuses, in vLLM's order."""
    found: list[tuple[str, str, str, list[Location]]] = []
    pp = serve_int(f, "pipeline_parallel_size", 1)
    if pp is not None and pp > 1:
        found.append(
            (
                f"pipeline_parallel_size = {pp}",
                MSG_PP,
                "set pipeline_parallel_size = 1 (shard with tensor parallelism instead), or drop HiSparse",
                f.loc("serve", "pipeline_parallel_size"),
            )
        )
    dcp = serve_int(f, "decode_context_parallel_size", 1)
    if dcp is not None and dcp > 1:
        found.append(
            (
                f"decode_context_parallel_size = {dcp}",
                MSG_DCP,
                "set decode_context_parallel_size = 1, or drop HiSparse",
                f.loc("serve", "decode_context_parallel_size"),
            )
        )
    compilation = f.serve.get("compilation_config")
    mode = compilation.get("cudagraph_mode") if isinstance(compilation, dict) else None
    eager = f.serve.get("enforce_eager") is True  # enforce_eager turns CUDA graphs off before the check
    if at_least(f.version, "0.32.0") and isinstance(mode, str) and mode.upper() == "FULL" and not eager:
        found.append(
            (
                f"compilation_config.cudagraph_mode = {shown(mode)}",
                MSG_FULL,
                'remove cudagraph_mode (vLLM then uses FULL_AND_PIECEWISE), or set it to "FULL_AND_PIECEWISE"',
                f.loc("serve", "compilation_config", "cudagraph_mode"),
            )
        )
    if at_least(f.version, "0.31.0") and serve_bool(f, "scheduler_reserve_full_isl") is False:
        found.append(
            (
                "scheduler_reserve_full_isl = false",
                MSG_RESERVE,
                "remove scheduler_reserve_full_isl = false (HiSparse needs the full input reserved), or drop HiSparse",
                f.loc("serve", "scheduler_reserve_full_isl"),
            )
        )
    s = shape(f)
    if s is not None and "index_topk" not in s.raw and s.model_type not in INDEX_TOPK_DEFAULTS:
        found.append(
            (
                "a model whose config.json has no index_topk (not a DSA model)",
                MSG_DSA,
                "serve a DSA model (its config.json has index_topk), or drop HiSparse",
                list(f.model.locations),
            )
        )
    return found


@needs
def _dsa_needs(f: RoleFacts) -> list[Undecided]:
    if not at_least(f.version, "0.30.0") or hisparse(f.version, f.serve) is None or shape(f) is not None:
        return []
    return [Undecided("HiSparse against the model's index_topk (a DSA model or not)", tuple(_origin(f)))]


@rule(
    "hisparse-unsupported",
    Severity.ERROR,
    "HiSparse with pipeline or decode context parallelism, cudagraph_mode = FULL, scheduler_reserve_full_isl = false "
    "or a model without index_topk",
    releases=">=0.30.0",
    source=SOURCE,
)
def hisparse_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    what = hisparse(f.version, f.serve)
    if what is None:
        return []
    return [
        Hit(
            "hisparse-unsupported",
            f'{what} with {option}; vLLM {f.version} refuses to start: "{message}"',
            [*_origin(f), *locs],
            fix,
            role=f.role.name,
            order=(*UNSUPPORTED, step),
        )
        for step, (option, message, fix, locs) in enumerate(_unsupported(f))
    ]


@rule(
    "hisparse-hybrid-kv-cache-manager",
    Severity.ERROR,
    "HiSparse with disable_hybrid_kv_cache_manager = true",
    releases=">=0.30.0",
    source=SOURCE,
)
def hisparse_hybrid_kv_cache_manager(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    what = hisparse(f.version, f.serve)
    if what is None or serve_bool(f, "disable_hybrid_kv_cache_manager") is not True:
        return []
    return [
        Hit(
            "hisparse-hybrid-kv-cache-manager",
            f'{what} with disable_hybrid_kv_cache_manager = true; vLLM {f.version} refuses to start: "{MSG_HMA}"',
            [*_origin(f), *f.loc("serve", "disable_hybrid_kv_cache_manager")],
            "remove disable_hybrid_kv_cache_manager, or drop HiSparse",
            role=f.role.name,
            order=HYBRID_KV_CACHE_MANAGER,
        )
    ]
