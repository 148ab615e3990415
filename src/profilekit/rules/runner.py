"""The model runner a role ends up on: Model Runner V2 asked for (or forced) with a feature it lacks, and
prefill context parallelism kept off V2.

Source: `vllm/config/vllm.py` `VllmConfig._validate_v2_model_runner`, `_get_v2_model_runner_unsupported_features`
and `use_v2_model_runner` (every release 0.27.0-0.33.0; the feature list changes, rules/runnerfacts.py), the
`prefill_context_parallel_size > 1` branch after it (0.27.x-0.28.0), and `_validate_v1_model_runner` with
`_get_v1_model_runner_unsupported_features` (0.29.0+) for a role that ends up on Model Runner V1.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from profilekit.errors import Location, Severity
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.runnerfacts import forces_v2, hisparse, v1_unsupported_features
from profilekit.vllm.constraints import speculative_view

MSG_PCP_V1 = "Prefill context parallelism requires Model Runner V2. Remove VLLM_USE_V2_MODEL_RUNNER=0."

# the options behind each feature `_get_v2_model_runner_unsupported_features` names
_FEATURE_KEYS = {
    "prefill context parallelism": ("prefill_context_parallel_size",),
    "pipeline parallelism with external_launcher": ("distributed_executor_backend", "pipeline_parallel_size"),
    "dual batch overlap": ("enable_dbo",),
    "elastic expert parallelism": ("enable_elastic_ep",),
    "routed experts capture": ("enable_return_routed_experts",),
    "custom logits processors": ("logits_processors",),
    "prompt embeds": ("enable_prompt_embeds",),
    "KV sharing fast prefill": ("kv_sharing_fast_prefill",),
    "EC transfer": ("ec_transfer_config",),
    "mamba cache mode 'all'": ("mamba_cache_mode", "enable_prefix_caching"),
}


def _feature_locations(f: RoleFacts) -> list[Location]:
    locs: list[Location] = []
    for feature in f.v2_unsupported:
        if "speculative" in feature:
            locs += f.locs("serve", "speculative_config")
        for key in _FEATURE_KEYS.get(feature, ()):
            locs += f.loc("serve", key)
    return locs


@rule(
    "model-runner-v2-unsupported",
    Severity.ERROR,
    "Model Runner V2 (asked for with VLLM_USE_V2_MODEL_RUNNER=1, or forced) with a feature it does not support",
    source="vllm/config/vllm.py VllmConfig._validate_v2_model_runner",
)
def v2_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.v2_model_runner is not True or not f.v2_unsupported:
        return []
    features = ", ".join(f.v2_unsupported)
    raw = f.env_value("VLLM_USE_V2_MODEL_RUNNER")
    forced = hisparse(f.version, f.serve) or forces_v2(f.version, f.serve, f.spec_method)
    if raw is not None:
        why = f"VLLM_USE_V2_MODEL_RUNNER = {json.dumps(raw)} asks for Model Runner V2"
        fix = (
            'set VLLM_USE_V2_MODEL_RUNNER = "0" (or leave it unset: vLLM then picks V1 for this configuration), '
            "or drop the feature"
        )
        locs = f.loc("env", "VLLM_USE_V2_MODEL_RUNNER")
    else:
        why = f"{forced} makes vLLM {f.version} pick Model Runner V2"
        fix = f"drop the feature: vLLM {f.version} runs {forced} only on Model Runner V2"
        locs = []
    return [
        Hit(
            "model-runner-v2-unsupported",
            f'{why} with {features}; vLLM {f.version} refuses to start: "Model Runner V2 does not yet support: '
            f'{features}"',
            [*locs, *_feature_locations(f)],
            fix,
            role=f.role.name,
            order=(STAGE_POST_INIT, 8),
        )
    ]


@rule(
    "prefill-context-parallel-v1",
    Severity.ERROR,
    "prefill context parallelism with VLLM_USE_V2_MODEL_RUNNER=0: only Model Runner V2 runs it",
    releases="<0.29.0",
    source="vllm/config/vllm.py VllmConfig.__post_init__ (after use_v2_model_runner)",
)
def prefill_context_parallel_v1(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    forced = forces_v2(f.version, f.serve, None)
    if f.v2_model_runner is not False or forced is None or not forced.startswith("prefill_context"):
        return []
    raw = f.env_value("VLLM_USE_V2_MODEL_RUNNER")
    return [
        Hit(
            "prefill-context-parallel-v1",
            f"{forced} with VLLM_USE_V2_MODEL_RUNNER = {json.dumps(raw)} (Model Runner V1); vLLM {f.version} "
            f'refuses to start: "{MSG_PCP_V1}"',
            [*f.loc("serve", "prefill_context_parallel_size"), *f.loc("env", "VLLM_USE_V2_MODEL_RUNNER")],
            "leave VLLM_USE_V2_MODEL_RUNNER unset (or set it to 1), or set prefill_context_parallel_size = 1",
            role=f.role.name,
            order=(STAGE_POST_INIT, 8),
        )
    ]


_V1_FEATURE_KEYS = {
    "prefill context parallel": (("prefill_context_parallel_size",),),
    "pipeline parallelism with async scheduling": (("pipeline_parallel_size",), ("async_scheduling",)),
    "dspark speculative decoding": (("speculative_config", "method"),),
    "adaptive draft verification": (("speculative_config", "enable_adaptive_verification"),),
    "draft lm_head quantization": (("speculative_config", "draft_lm_head_quantization"),),
    "batch-sharded sampling": (("enable_batch_sharded_sampling",),),
}


@rule(
    "model-runner-v1-unsupported",
    Severity.ERROR,
    "Model Runner V1 (VLLM_USE_V2_MODEL_RUNNER=0, or picked for a feature V2 lacks) with a feature only V2 runs",
    releases=">=0.29.0",
    source="vllm/config/vllm.py VllmConfig._validate_v1_model_runner",
)
def v1_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.v2_model_runner is not False:
        return []
    spec = speculative_view(f.serve)
    found = v1_unsupported_features(f.version, f.serve, f.model, spec=spec if isinstance(spec, dict) else None)
    if not found:
        return []  # None: the draft checkpoint decides part of the list
    features = ", ".join(found)
    raw = f.env_value("VLLM_USE_V2_MODEL_RUNNER")
    if raw is not None:
        why = f"VLLM_USE_V2_MODEL_RUNNER = {json.dumps(raw)} asks for Model Runner V1"
        fix = "leave VLLM_USE_V2_MODEL_RUNNER unset (or set it to 1), or drop the feature"
    elif f.v2_unsupported:
        why = f"{', '.join(f.v2_unsupported)} keeps vLLM {f.version} on Model Runner V1"
        fix = "drop the feature, or what keeps the role off Model Runner V2"
    else:
        return []
    locs = [loc for feature in found for path in _V1_FEATURE_KEYS.get(feature, ()) for loc in f.loc("serve", *path)]
    return [
        Hit(
            "model-runner-v1-unsupported",
            f'{why} with {features}; vLLM {f.version} refuses to start: "Model Runner V1 does not support: {features}"',
            [*f.loc("env", "VLLM_USE_V2_MODEL_RUNNER"), *locs],
            fix,
            role=f.role.name,
            order=(STAGE_POST_INIT, 8),
        )
    ]
