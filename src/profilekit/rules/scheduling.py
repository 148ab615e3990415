"""Async scheduling, the speculative scheduling budget and CUDA graph capture sizes, as `VllmConfig.__post_init__`
checks them; and microbatching with DeepSeek-V4.1 Engram.

Sources: `vllm/config/vllm.py` `VllmConfig.__post_init__` (every release 0.27.0-0.33.0): explicitly asked-for
async scheduling refuses an executor whose class does not support it (before 0.33.0 `ray` with
`VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0` picks `RayDistributedExecutor`, which does not; from 0.33.0 only an executor
class named by import path can, left to vLLM), and in 0.33.0 Model Runner V1 with a drafter other than
EAGLE/MTP/draft model/NGram GPU/DSpark/DFlash, with `disable_padded_drafter_batch`, or with pipeline parallelism
(before 0.33.0 rules/postinit.py's async-scheduling-speculative). `VllmConfig._set_max_num_scheduled_tokens`
(with speculative decoding): 0.27.x subtract the drafting slots of every sequence from the token budget; 0.28.0-0.32.0
need the budget above the drafting slots of one request; 0.33.0 above `num_lookahead_tokens`.
`VllmConfig._set_cudagraph_sizes` (with CUDA graphs): a written `max_cudagraph_capture_size` must equal the largest
written capture size that fits the token budget. `VllmConfig._resolve_and_verify_engram_config` (0.30.0 and later):
DeepSeek-V4.1 with Engram layers refuses DBO and microbatching. ROCm DeepEP high-throughput DBO (raised only on
ROCm) and the capture-size assertion on a GPU are judged on the declared GPU by rules/platforms.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Location, Severity
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.microbatch import microbatches
from profilekit.rules.modelcfg import serve_bool, serve_int, shown
from profilekit.rules.postinit import ASYNC_SCHEDULING, drafts_from_hidden_states
from profilekit.rules.scheduler import budget
from profilekit.vllm.constraints import speculative_view
from profilekit.vllm.versions import at_least

SOURCE = "vllm/config/vllm.py VllmConfig.__post_init__"
ASYNC_V1_RUNNER: Order = ASYNC_SCHEDULING  # the same block as the < 0.33.0 speculative refusals
ASYNC_EXECUTOR: Order = (STAGE_POST_INIT, 5, 51)  # the block's last check
# after the per-request spec-decode metrics check (6), before the fast-prefill check (6, 50) that follows them
SCHEDULED_TOKENS: Order = (STAGE_POST_INIT, 6, 10)
CUDAGRAPH_SIZES: Order = (STAGE_POST_INIT, 6, 20)
ENGRAM_MICROBATCHING: Order = (STAGE_POST_INIT, -46)  # right before EngramConfig.verify_model_config (-45)
# 0.33.0: methods V1 async scheduling accepts (EagleModelTypes, NgramGPUTypes, draft_model, dspark, dflash)
V1_ASYNC_METHODS = ("eagle", "eagle3", "extract_hidden_states", "mtp", "dflash", "ngram_gpu", "draft_model", "dspark")


def _v1_async_failure(f: RoleFacts) -> tuple[str, list[Location]] | None:
    """0.33.0's `v1_async_sched_incompat` and the keys that made it; None when V2 or nothing refused."""
    spec = speculative_view(f.serve)
    if isinstance(spec, dict) and spec and f.num_spec != 0:
        method = f.spec_method
        if method is None:
            return None  # vLLM infers it from the draft model
        renamed = "mtp" if method.endswith("_mtp") else method
        if renamed not in V1_ASYNC_METHODS:
            return f"{renamed}-based speculative decoding", f.loc("serve", "speculative_config")
        if spec.get("disable_padded_drafter_batch") is True:
            return "disable_padded_drafter_batch=True", f.loc("serve", "speculative_config")
    pp = serve_int(f, "pipeline_parallel_size", 1)
    if pp is not None and pp > 1:
        return "pipeline parallelism", f.loc("serve", "pipeline_parallel_size")
    return None


@rule(
    "async-scheduling-v1-runner",
    Severity.ERROR,
    "async_scheduling = true on Model Runner V1 with a drafter it cannot overlap, or pipeline parallelism",
    releases=">=0.33.0",
    source=SOURCE,
)
def async_scheduling_v1_runner(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if serve_bool(f, "async_scheduling") is not True or f.v2_model_runner is not False:
        return []
    found = _v1_async_failure(f)
    if found is None:
        return []
    what, locs = found
    return [
        Hit(
            "async-scheduling-v1-runner",
            f"async_scheduling = true on Model Runner V1 with {what}; vLLM {f.version} refuses to start: "
            f'"Async scheduling is not supported by the V1 model runner with {what}."',
            [*f.loc("serve", "async_scheduling"), *locs, *f.loc("env", "VLLM_USE_V2_MODEL_RUNNER")],
            "remove async_scheduling (vLLM then leaves it off on Model Runner V1), or run Model Runner V2",
            role=f.role.name,
            order=ASYNC_V1_RUNNER,
        )
    ]


def _int_env(value: str | None) -> bool | None:
    if value is None:
        return None
    try:
        return bool(int(value))
    except ValueError:
        return None


@rule(
    "async-scheduling-executor",
    Severity.ERROR,
    "async_scheduling = true with an executor that does not support it (the Ray V1 executor before 0.33.0)",
    source=SOURCE,
)
def async_scheduling_executor(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if serve_bool(f, "async_scheduling") is not True or f.serve.get("distributed_executor_backend") != "ray":
        return []
    if at_least(f.version, "0.33.0"):
        return []  # only the Ray V2 executor is left; an executor class named by import path is left to vLLM
    if _int_env(f.env_value("VLLM_USE_RAY_V2_EXECUTOR_BACKEND")) is not False:
        return []  # the Ray V2 executor (the default) supports async scheduling
    return [
        Hit(
            "async-scheduling-executor",
            'async_scheduling = true with distributed_executor_backend = "ray" and '
            f'VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0 (the Ray V1 executor); vLLM {f.version} refuses to start: "`ray` '
            'does not support async scheduling yet."',
            [
                *f.loc("serve", "async_scheduling"),
                *f.loc("serve", "distributed_executor_backend"),
                *f.loc("env", "VLLM_USE_RAY_V2_EXECUTOR_BACKEND"),
            ],
            "remove async_scheduling (vLLM then leaves it off for this executor), or remove "
            "VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0",
            role=f.role.name,
            order=ASYNC_EXECUTOR,
        )
    ]


def _slots(f: RoleFacts, spec: dict[str, Any], k: int) -> int | None:
    """Drafting slots per request: `max_num_new_slots_for_drafting` (< 0.33.0), `num_lookahead_tokens` (0.33.0)."""
    method = f.spec_method
    parallel = spec.get("parallel_drafting") is True or (
        method in ("dflash", "dspark") and at_least(f.version, "0.27.0")
    )
    if at_least(f.version, "0.33.0"):
        if method == "dflash":
            return k + 1
        if method == "dspark":
            return None  # k or k + 1: the draft model's config (sample_from_anchor) decides
        return k if drafts_from_hidden_states(method) or method == "draft_model" else 0
    if not at_least(f.version, "0.28.0"):
        return (k - 1 if parallel else 0) + (1 if method == "draft_model" else 0)
    if method == "dflash":
        return k
    if parallel:
        return k if method == "draft_model" else k - 1
    return 1 if method == "draft_model" else 0


def _budget_failure(f: RoleFacts) -> tuple[str, str] | None:
    """(what, vLLM's message) of `_set_max_num_scheduled_tokens`; None when it passes or profilekit cannot tell."""
    spec = speculative_view(f.serve)
    k = f.num_spec
    if not isinstance(spec, dict) or not spec or not k or f.spec_method is None:
        return None
    b = budget(f)
    slots = _slots(f, spec, k)
    if b is None or slots is None or slots < 0:
        return None
    tokens = b.batched_tokens
    written = serve_int(f, "max_num_scheduled_tokens")
    if "max_num_scheduled_tokens" in f.serve and written is None:
        return None
    if written is not None and written < 1 and at_least(f.version, "0.32.0"):
        return None  # the field's constraint (ge=1 from 0.32.0) refuses it first: invalid-value
    early = not at_least(f.version, "0.28.0")
    delta = slots * b.seqs if early else slots
    scheduled = written if written is not None else (tokens - delta if early else tokens)
    budget_text = f"max_num_batched_tokens {tokens}" + ("" if b.batched_written else " (vLLM's default)")
    if scheduled <= 0:
        why = "num_speculative_tokens or max_num_seqs" if early else "num_speculative_tokens"
        source = "max_num_scheduled_tokens = 0" if written is not None else f"{budget_text} less the drafting slots"
        return (
            f"{source} with speculative decoding",
            f"max_num_scheduled_tokens is set to {scheduled} based on the speculative decoding settings, which does "
            "not allow any tokens to be scheduled. Increase max_num_batched_tokens to accommodate the additional "
            f"draft token slots, or decrease {why}.",
        )
    if early:
        if tokens >= scheduled + delta:
            return None
        return (
            f"max_num_scheduled_tokens = {scheduled} with {budget_text} and {delta} drafting slots",
            "VllmConfig received max_num_scheduled_tokens but it does not have enough slots to support the "
            f"speculative decoding settings. It should be greater by at least {delta}, but got "
            f"max_num_batched_tokens={tokens} and max_num_scheduled_tokens={scheduled}.",
        )
    if tokens > slots:
        return None
    name = "num_lookahead_tokens" if at_least(f.version, "0.33.0") else "scheduled_token_delta"
    return (
        f"{budget_text} with {slots} drafting slots per request",
        "VllmConfig does not have enough slots to schedule a token and support the speculative decoding settings. "
        f"Got max_num_batched_tokens={tokens} and {name}={slots}.",
    )


@rule(
    "speculative-scheduled-tokens",
    Severity.ERROR,
    "a token budget too small for the drafting slots speculative decoding adds",
    source="vllm/config/vllm.py VllmConfig._set_max_num_scheduled_tokens",
)
def speculative_scheduled_tokens(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = _budget_failure(f)
    if found is None:
        return []
    what, message = found
    return [
        Hit(
            "speculative-scheduled-tokens",
            f'{what}; vLLM {f.version} refuses to start: "{message}"',
            [
                *f.loc("serve", "max_num_batched_tokens"),
                *f.loc("serve", "max_num_scheduled_tokens"),
                *f.loc("serve", "max_num_seqs"),
                *f.locs("serve", "speculative_config"),
            ],
            "raise max_num_batched_tokens above the drafting slots, or lower num_speculative_tokens "
            "(or remove max_num_scheduled_tokens)",
            role=f.role.name,
            order=SCHEDULED_TOKENS,
        )
    ]


def capture_setting(f: RoleFacts, key: str) -> tuple[Any, list[Location]]:
    """A capture setting written as a flag or inside compilation_config; (None, []) when both (exclusive.py)."""
    cfg = f.serve.get("compilation_config")
    in_cfg = isinstance(cfg, dict) and key in cfg
    if key in f.serve:
        return (None, []) if in_cfg else (f.serve[key], f.loc("serve", key))
    if isinstance(cfg, dict) and in_cfg:
        return cfg[key], f.loc("serve", "compilation_config", key) or f.loc("serve", "compilation_config")
    return None, []


def cudagraphs_on(f: RoleFacts) -> bool:
    """CUDA graphs certainly on: not eager, and no compilation mode, level or cudagraph_mode written."""
    if serve_bool(f, "enforce_eager") is True or "optimization_level" in f.serve:
        return False
    cfg = f.serve.get("compilation_config")
    if cfg is not None and not isinstance(cfg, dict):
        return False
    return not any(k in (cfg or {}) for k in ("mode", "level", "cudagraph_mode"))


FULL_GRAPH_MODES = ("FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")


def full_cudagraphs(f: RoleFacts) -> bool:
    """Full CUDA graphs certainly on: vLLM's default (`cudagraphs_on`), or a cudagraph_mode with full graphs written
    in compilation_config, not eager: those stay on whatever the mode (`_normalize_piecewise_cudagraph_mode` drops
    only the piecewise part when the mode is not VLLM_COMPILE)."""
    if cudagraphs_on(f):
        return True
    cfg = f.serve.get("compilation_config")
    if serve_bool(f, "enforce_eager") is True or "optimization_level" in f.serve or not isinstance(cfg, dict):
        return False
    mode = cfg.get("cudagraph_mode")
    return isinstance(mode, str) and mode.upper() in FULL_GRAPH_MODES


def _positive_ints(value: Any) -> list[int] | None:
    if not isinstance(value, list) or not value:
        return None
    ok = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    return [int(v) for v in value] if ok else None


@rule(
    "cudagraph-capture-size-mismatch",
    Severity.ERROR,
    "max_cudagraph_capture_size other than the largest cudagraph_capture_sizes entry that fits the token budget",
    source="vllm/config/vllm.py VllmConfig._set_cudagraph_sizes",
)
def cudagraph_capture_size_mismatch(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    top, top_locs = capture_setting(f, "max_cudagraph_capture_size")
    sizes_raw, sizes_locs = capture_setting(f, "cudagraph_capture_sizes")
    sizes = _positive_ints(sizes_raw)
    if not isinstance(top, int) or isinstance(top, bool) or top < 1 or sizes is None or not cudagraphs_on(f):
        return []
    b = budget(f)
    if b is None:
        return []
    fitting = [s for s in set(sizes) if s <= b.batched_tokens]
    valid = max(fitting) if fitting else 0
    if top == valid:
        return []
    dropped = "" if valid == max(sizes) else f" (sizes above max_num_batched_tokens {b.batched_tokens} are dropped)"
    return [
        Hit(
            "cudagraph-capture-size-mismatch",
            f"max_cudagraph_capture_size = {top} with cudagraph_capture_sizes up to {valid}{dropped}; vLLM "
            f'{f.version} refuses to start: "customized max_cudagraph_capture_size(={top}) should be consistent '
            f'with the max value of cudagraph_capture_sizes(={valid})"',
            [*top_locs, *sizes_locs, *f.loc("serve", "max_num_batched_tokens")],
            f"set max_cudagraph_capture_size = {valid}, or remove it (vLLM derives it from cudagraph_capture_sizes)"
            if valid
            else "remove max_cudagraph_capture_size, or list capture sizes within max_num_batched_tokens",
            role=f.role.name,
            order=CUDAGRAPH_SIZES,
        )
    ]


def _engram_layers(f: RoleFacts) -> bool | None:
    """Whether the config.json lists Engram layer ids (`hf_text_config.engram_layer_ids`); None without one."""
    raw = f.model.config
    if raw is None:
        return None
    text = raw.get("text_config")
    return bool((text if isinstance(text, dict) else raw).get("engram_layer_ids"))


@rule(
    "engram-microbatching",
    Severity.ERROR,
    "DBO or microbatching for a DeepSeek-V4.1 model with Engram layers",
    releases=">=0.30.0",
    source="vllm/config/vllm.py VllmConfig._resolve_and_verify_engram_config",
)
def engram_microbatching(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.model.architecture != "DeepseekV41ForCausalLM" or microbatches(f) is None or not _engram_layers(f):
        return []
    on = (
        "enable_dbo = true" if serve_bool(f, "enable_dbo") is True else f"ubatch_size = {shown(f.serve['ubatch_size'])}"
    )
    return [
        Hit(
            "engram-microbatching",
            f"{on} for a DeepSeek-V4.1 model with Engram layers; vLLM {f.version} refuses to start: "
            '"DeepSeek V4.1 Engram does not support DBO or microbatching. Disable --enable-dbo and set --ubatch-size '
            'to 0."',
            [*f.loc("serve", "enable_dbo"), *f.loc("serve", "ubatch_size"), *f.model.locations],
            "remove enable_dbo and ubatch_size",
            role=f.role.name,
            order=ENGRAM_MICROBATCHING,
        )
    ]
