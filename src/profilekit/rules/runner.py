"""The model runner a role asks for: Model Runner V2 requested for a feature it lacks.

Source: `vllm/config/vllm.py` `VllmConfig._validate_v2_model_runner` and
`_get_v2_model_runner_unsupported_features` (every release 0.27.0-0.33.0; the feature list changes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from profilekit.errors import Severity
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts


@rule(
    "model-runner-v2-unsupported",
    Severity.ERROR,
    "VLLM_USE_V2_MODEL_RUNNER=1 with a feature Model Runner V2 does not support",
    source="vllm/config/vllm.py VllmConfig._validate_v2_model_runner",
)
def v2_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    raw = f.env_value("VLLM_USE_V2_MODEL_RUNNER")
    if raw is None or f.v2_model_runner is not True or not f.v2_unsupported:
        return []
    features = ", ".join(f.v2_unsupported)
    locs = f.loc("env", "VLLM_USE_V2_MODEL_RUNNER")
    if any("speculative" in x for x in f.v2_unsupported):
        locs += f.locs("serve", "speculative_config")
    if any("mamba cache mode" in x for x in f.v2_unsupported):
        locs += [*f.loc("serve", "mamba_cache_mode"), *f.loc("serve", "enable_prefix_caching")]
    return [
        Hit(
            "model-runner-v2-unsupported",
            f"VLLM_USE_V2_MODEL_RUNNER = {json.dumps(raw)} asks for Model Runner V2 with {features}; vLLM "
            f'{ctx.version} refuses to start: "Model Runner V2 does not yet support: {features}"',
            locs,
            'set VLLM_USE_V2_MODEL_RUNNER = "0" (or leave it unset: vLLM then picks V1 for this configuration), '
            "or drop the feature",
            role=f.role.name,
            order=(STAGE_POST_INIT, 8),
        )
    ]
