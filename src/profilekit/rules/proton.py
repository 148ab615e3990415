"""The Proton profiler beside CUDA graphs.

Sources: `vllm/config/vllm.py`. 0.28.0-0.29.0: `VllmConfig.__post_init__` refuses `profiler_config.profiler =
"proton"` unless CUDA graphs are off, right after `enforce_eager` turns them off (before the optimisation level
fills in a default, so an unset `cudagraph_mode` counts as on). 0.30.0 and later: `VllmConfig._validate_profiler_config`
(after the model runner checks and the V2-attribution check of rules/postinit.py) refuses PC sampling
(`proton_mode = "pcsampling..."`) with CUDA graphs, and CUDA graphs without `proton_graph_attribution`; there the
resolved graph mode counts, so profilekit judges only what the options settle (below). vLLM first refuses Proton
off NVIDIA CUDA, so the oracle (CPU platform) cannot show these; a GPU host reaches them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import shown
from profilekit.rules.postinit import PROTON_GRAPH_ATTRIBUTION
from profilekit.vllm.versions import at_least

MSG_EARLY = (
    "The Proton profiler requires CUDA graphs to be disabled. Use --enforce-eager or set "
    "--compilation-config.cudagraph_mode=none."
)
MSG_PC_SAMPLING = "Proton PC sampling requires CUDA graphs to be disabled. Use --enforce-eager."
MSG_ATTRIBUTION = (
    "Proton profiling with CUDA graphs requires proton_graph_attribution=True to capture replayed kernels. "
    "Enable attribution or use --enforce-eager."
)
# 0.28.0-0.29.0: after the spec-decode metrics check (6), before the KV sharing fast prefill check (6, 50)
EARLY: Order = (STAGE_POST_INIT, 6, 10)
LATE: Order = (*PROTON_GRAPH_ATTRIBUTION, 1)  # right after the V2-attribution check


def _compilation(f: RoleFacts) -> dict[str, Any]:
    value = f.serve.get("compilation_config")
    return value if isinstance(value, dict) else {}


def _graphs(f: RoleFacts) -> tuple[bool, str] | None:
    """(CUDA graphs on, what says so) once vLLM has resolved the graph mode (0.30.0+); None when the options
    alone do not settle it (a compilation mode, an optimisation level, TORCH_COMPILE_DISABLE or the MoonEP
    backend can turn graphs off, and a written PIECEWISE falls back to none without VLLM_COMPILE)."""
    if f.serve.get("enforce_eager") is True:
        return False, "enforce_eager = true"
    cc = _compilation(f)
    if cc.get("cudagraph_mm_encoder") is True:
        return True, "compilation_config.cudagraph_mm_encoder = true"
    mode = cc.get("cudagraph_mode")
    if isinstance(mode, str) and mode.upper() == "NONE":
        return False, f"compilation_config.cudagraph_mode = {shown(mode)}"
    if (
        "mode" in cc
        or "optimization_level" in f.serve
        or f.env_value("TORCH_COMPILE_DISABLE") is not None
        or f.serve.get("all2all_backend") == "moonep"
        or not (mode is None or (isinstance(mode, str) and mode.upper().startswith("FULL")))
    ):
        return None
    if mode is None:
        return True, "CUDA graphs on (vLLM's default)"
    return True, f"compilation_config.cudagraph_mode = {shown(mode)}"


def _early(f: RoleFacts) -> tuple[str, str] | None:
    """0.28.0-0.29.0: (what, message) when CUDA graphs are not written off."""
    if f.serve.get("enforce_eager") is True:
        return None
    mode = _compilation(f).get("cudagraph_mode")
    if isinstance(mode, str) and mode.upper() == "NONE":
        return None
    if mode is None:
        return "CUDA graphs on (no enforce_eager, cudagraph_mode unset)", MSG_EARLY
    return f"compilation_config.cudagraph_mode = {shown(mode)}", MSG_EARLY


def _late(f: RoleFacts, profiler: dict[str, Any]) -> tuple[str, str] | None:
    """0.30.0+: (what, message) for PC sampling or unattributed profiling with CUDA graphs."""
    graphs = _graphs(f)
    if graphs is None or not graphs[0]:
        return None
    mode = profiler.get("proton_mode")
    if isinstance(mode, str) and mode.split(":", 1)[0].lower() == "pcsampling":
        return f"{graphs[1]} with profiler_config.proton_mode = {shown(mode)}", MSG_PC_SAMPLING
    if profiler.get("proton_graph_attribution") is True:
        return None
    return f"{graphs[1]} without profiler_config.proton_graph_attribution", MSG_ATTRIBUTION


@rule(
    "proton-cuda-graphs",
    Severity.ERROR,
    "the Proton profiler with CUDA graphs (0.28.0-0.29.0), or with PC sampling or without graph attribution (0.30.0+)",
    releases=">=0.28.0",
    source="vllm/config/vllm.py VllmConfig.__post_init__ / VllmConfig._validate_profiler_config",
)
def proton_cuda_graphs(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    profiler = f.serve.get("profiler_config")
    if not isinstance(profiler, dict) or profiler.get("profiler") != "proton":
        return []
    late = at_least(f.version, "0.30.0")
    found = _late(f, profiler) if late else _early(f)
    if found is None:
        return []
    what, message = found
    fix = (
        'set enforce_eager = true (or compilation_config.cudagraph_mode = "NONE") while profiling with Proton'
        if not late or message == MSG_PC_SAMPLING
        else "set profiler_config.proton_graph_attribution = true (Model Runner V2), or enforce_eager = true"
    )
    return [
        Hit(
            "proton-cuda-graphs",
            f'profiler_config.profiler = "proton" with {what}; vLLM {f.version} refuses to start: "{message}"',
            [
                *f.loc("serve", "profiler_config", "profiler"),
                *f.loc("serve", "compilation_config", "cudagraph_mode"),
                *f.loc("serve", "compilation_config", "cudagraph_mm_encoder"),
                *f.loc("serve", "profiler_config", "proton_mode"),
            ],
            fix,
            role=f.role.name,
            order=LATE if late else EARLY,
        )
    ]
