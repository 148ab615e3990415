"""Option pairs `VllmConfig.__post_init__` refuses that no other family owns.

Sources: `vllm/config/vllm.py` `VllmConfig._verify_trace_replay_config` (0.29.0 and later, right after the sampling
replay checks of rules/outputs.py): `--enable-trace-replay` needs Model Runner V2 (rules/runnerfacts.py decides which
runner a role gets). `VllmConfig._validate_profiler_config` (0.30.0 and later, right after the model runner checks):
Proton CUDA graph attribution needs Model Runner V2; vLLM first refuses Proton off NVIDIA CUDA, so the oracle (CPU
platform) cannot show it. `VllmConfig.__post_init__` before 0.33.0: `--async-scheduling` asked for with a speculative
method it does not support (ngram and the other CPU or head drafters), or with `disable_padded_drafter_batch`
(0.33.0 refuses those only on Model Runner V1, with another message: rules/scheduling.py). `VllmConfig.__post_init__`, every release 0.27.0-0.33.0: `--kv-sharing-fast-prefill`
with a speculative method that drafts from the target's hidden states (`SpeculativeConfig.use_eagle()`: eagle,
eagle3, mtp and the model-specific MTP names vLLM renames to mtp, dflash, dspark). It runs right after the CUDA
graph sizes are set, before the platform hook. A method vLLM infers from the draft model's name or config is left to
vLLM (profilekit judges the method a layer writes).
"""

from __future__ import annotations

from collections.abc import Iterable

from profilekit.errors import Severity
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import serve_bool, shown
from profilekit.rules.outputs import SAMPLING_REPLAY
from profilekit.vllm.versions import at_least

# after the per-request spec-decode metrics check (6, rules/outputs.py), before the platform hook (7)
KV_SHARING_FAST_PREFILL: Order = (STAGE_POST_INIT, 6, 50)
PROTON_GRAPH_ATTRIBUTION: Order = (STAGE_POST_INIT, 8, 1)  # after the model runner checks, before (8, 2)
ASYNC_SCHEDULING: Order = (STAGE_POST_INIT, 5, 50)  # after the Mamba dtype check (5), before (6)
# methods SpeculativeConfig keeps that async scheduling refuses before 0.33.0 (a method vLLM infers is left to vLLM)
ASYNC_REFUSED_METHODS = ("ngram", "medusa", "mlp_speculator", "suffix")
TRACE_REPLAY: Order = (STAGE_POST_INIT, SAMPLING_REPLAY, 1)  # right after _verify_sampling_replay_config
HIDDEN_STATE_METHODS = ("eagle", "eagle3", "mtp", "dflash", "dspark")
MSG_FAST_PREFILL_EAGLE = (
    "Fast prefill optimization for KV sharing is not compatible with EAGLE as EAGLE requires correct logits for all "
    "tokens while fast prefill gives incorrect logits for prompt tokens."
)


def drafts_from_hidden_states(method: str | None) -> bool:
    """`SpeculativeConfig.use_eagle()` for a written method (an `*_mtp` name is renamed to mtp first)."""
    return method is not None and (method in HIDDEN_STATE_METHODS or method.endswith("_mtp"))


@rule(
    "kv-sharing-fast-prefill-eagle",
    Severity.ERROR,
    "kv_sharing_fast_prefill with an EAGLE-style speculative method (eagle, eagle3, mtp, dflash, dspark)",
    source="vllm/config/vllm.py VllmConfig.__post_init__",
)
def kv_sharing_fast_prefill_eagle(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if serve_bool(f, "kv_sharing_fast_prefill") is not True or not drafts_from_hidden_states(f.spec_method):
        return []
    return [
        Hit(
            "kv-sharing-fast-prefill-eagle",
            f"kv_sharing_fast_prefill = true with speculative method {shown(f.spec_method)}; vLLM {f.version} "
            f'refuses to start: "{MSG_FAST_PREFILL_EAGLE}"',
            [
                *f.loc("serve", "kv_sharing_fast_prefill"),
                *(f.loc("serve", "speculative_config", "method") or f.loc("serve", "spec_method")),
            ],
            "remove kv_sharing_fast_prefill, or draft with a method that does not read the target's hidden states "
            "(ngram, draft_model)",
            role=f.role.name,
            order=KV_SHARING_FAST_PREFILL,
        )
    ]


@rule(
    "trace-replay-v1",
    Severity.ERROR,
    "enable_trace_replay on Model Runner V1",
    releases=">=0.29.0",
    source="vllm/config/vllm.py VllmConfig._verify_trace_replay_config",
)
def trace_replay_v1(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if serve_bool(f, "enable_trace_replay") is not True or f.v2_model_runner is not False:
        return []  # None: profilekit cannot tell which runner the role gets
    return [
        Hit(
            "trace-replay-v1",
            f'enable_trace_replay = true on Model Runner V1; vLLM {f.version} refuses to start: "trace replay '
            'requires Model Runner V2"',
            [*f.loc("serve", "enable_trace_replay"), *f.loc("env", "VLLM_USE_V2_MODEL_RUNNER")],
            "run Model Runner V2 (leave VLLM_USE_V2_MODEL_RUNNER unset and drop what forces V1), or remove "
            "enable_trace_replay",
            role=f.role.name,
            order=TRACE_REPLAY,
        )
    ]


@rule(
    "proton-graph-attribution-v1",
    Severity.ERROR,
    "profiler_config.proton_graph_attribution on Model Runner V1",
    releases=">=0.30.0",
    source="vllm/config/vllm.py VllmConfig._validate_profiler_config",
)
def proton_graph_attribution_v1(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("profiler_config")
    if not isinstance(cfg, dict) or cfg.get("profiler") != "proton" or cfg.get("proton_graph_attribution") is not True:
        return []
    if f.v2_model_runner is not False:
        return []
    return [
        Hit(
            "proton-graph-attribution-v1",
            "profiler_config.proton_graph_attribution = true on Model Runner V1; vLLM "
            f'{f.version} refuses to start: "Proton CUDA graph attribution requires the V2 model runner."',
            [
                *(f.loc("serve", "profiler_config", "proton_graph_attribution") or f.loc("serve", "profiler_config")),
                *f.loc("env", "VLLM_USE_V2_MODEL_RUNNER"),
            ],
            "run Model Runner V2, or profile with enforce_eager = true and without proton_graph_attribution",
            role=f.role.name,
            order=PROTON_GRAPH_ATTRIBUTION,
        )
    ]


def _async_speculative_failure(f: RoleFacts) -> tuple[str, str] | None:
    """(what, vLLM's message) when explicit async scheduling meets a speculative setting it refuses (< 0.33.0)."""
    if serve_bool(f, "async_scheduling") is not True or f.spec_method is None or f.num_spec == 0:
        return None
    if f.spec_method in ASYNC_REFUSED_METHODS:
        kinds = (
            "EAGLE/MTP/Draft Model/NGram GPU/DSpark/DFlash"
            if at_least(f.version, "0.31.0")
            else ("EAGLE/MTP/Draft Model/NGram GPU/DSpark")
        )
        return (
            f"async_scheduling = true with speculative method {shown(f.spec_method)}",
            f"Currently, async scheduling is only supported with {kinds} kind of speculative decoding",
        )
    spec = f.serve.get("speculative_config")
    if isinstance(spec, dict) and spec.get("disable_padded_drafter_batch") is True:
        return (
            "async_scheduling = true with speculative_config.disable_padded_drafter_batch = true",
            "Async scheduling is not compatible with disable_padded_drafter_batch=True.",
        )
    return None


@rule(
    "async-scheduling-speculative",
    Severity.ERROR,
    "async_scheduling = true with a speculative method or drafter setting it does not support",
    releases="<0.33.0",
    source="vllm/config/vllm.py VllmConfig.__post_init__",
)
def async_scheduling_speculative(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = _async_speculative_failure(f)
    if found is None:
        return []
    what, message = found
    return [
        Hit(
            "async-scheduling-speculative",
            f'{what}; vLLM {f.version} refuses to start: "{message}"',
            [
                *f.loc("serve", "async_scheduling"),
                *f.loc("serve", "speculative_config"),
                *f.loc("serve", "spec_method"),
            ],
            "remove async_scheduling (vLLM then leaves it off for this drafter), or draft with EAGLE, MTP, a draft "
            "model or ngram_gpu",
            role=f.role.name,
            order=ASYNC_SCHEDULING,
        )
    ]
