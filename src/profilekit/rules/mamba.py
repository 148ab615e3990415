"""Mamba cache rules that hold with or without ReplaySSM.

Source: `vllm/config/vllm.py` `VllmConfig.__post_init__` (every release 0.27.0-0.33.0).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from profilekit.errors import Severity
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts

MSG_ROUNDING_DTYPE = (
    "Stochastic rounding for Mamba cache requires the SSM cache to be float16. Please set it explicitly, by "
    "specifying `--mamba-ssm-cache-dtype float16`, or disable stochastic rounding by not specifying "
    "`--enable-mamba-cache-stochastic-rounding`."
)


@rule(
    "mamba-stochastic-rounding-dtype",
    Severity.ERROR,
    "enable_mamba_cache_stochastic_rounding without mamba_ssm_cache_dtype = float16",
    source="vllm/config/vllm.py VllmConfig.__post_init__",
)
def stochastic_rounding_dtype(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.serve.get("enable_mamba_cache_stochastic_rounding") is not True:
        return []
    dtype = f.serve.get("mamba_ssm_cache_dtype", "auto")
    if dtype == "float16":
        return []
    shown = (
        f"mamba_ssm_cache_dtype = {json.dumps(dtype, default=str)}"
        if "mamba_ssm_cache_dtype" in f.serve
        else ("mamba_ssm_cache_dtype unset")
    )
    return [
        Hit(
            "mamba-stochastic-rounding-dtype",
            f"enable_mamba_cache_stochastic_rounding = true with {shown}; vLLM {ctx.version} refuses to start: "
            f'"{MSG_ROUNDING_DTYPE}"',
            [*f.loc("serve", "enable_mamba_cache_stochastic_rounding"), *f.loc("serve", "mamba_ssm_cache_dtype")],
            'set mamba_ssm_cache_dtype = "float16", or remove enable_mamba_cache_stochastic_rounding',
            role=f.role.name,
            order=(STAGE_POST_INIT, 5),
        )
    ]
