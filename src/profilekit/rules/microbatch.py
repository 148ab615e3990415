"""Microbatching (dual batch overlap, `enable_dbo`, and `ubatch_size`): thresholds and all2all backends.

Sources: `vllm/config/parallel.py` `ParallelConfig._verify_args` (0.30.0 and later: the DBO token thresholds
against the number of microbatches, after the nsight check) and `vllm/config/vllm.py`
`VllmConfig.__post_init__` (every release 0.27.0-0.33.0: an assertion that microbatching runs on a
DeepEP or NIXL-EP all2all backend, right after the platform hook; 0.33.0 rewords it "on this platform" and on ROCm
accepts allgather_reducescatter too, judged on the role's declared GPU).
`ParallelConfig.use_ubatching` is `enable_dbo or ubatch_size > 1`; `num_ubatches` is 2 with DBO, else
`ubatch_size`. `_validate_parallel_config` first turns the removed "pplx" and "naive" backends into
"allgather_reducescatter".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import serve_bool, serve_int
from profilekit.rules.parallel import refuse
from profilekit.vllm.versions import at_least

if TYPE_CHECKING:
    from profilekit.hardware import Gpu

SOURCE = "vllm/config/vllm.py VllmConfig.__post_init__ (use_ubatching), vllm/config/parallel.py ParallelConfig"
MICROBATCH_BACKENDS = ("deepep_low_latency", "deepep_high_throughput", "nixl_ep")
DEFAULT_THRESHOLDS = {"dbo_decode_token_threshold": 32, "dbo_prefill_token_threshold": 512}


def microbatches(f: RoleFacts) -> int | None:
    """`num_ubatches` when microbatching is on (`use_ubatching`), else None."""
    dbo = serve_bool(f, "enable_dbo") is True
    size = serve_int(f, "ubatch_size", 0)
    if size is None or size < 0:
        return None  # not an integer, or below the field constraint (invalid-value)
    if not dbo and size <= 1:
        return None
    return 2 if dbo else size


def _why(f: RoleFacts) -> str:
    parts = []
    if serve_bool(f, "enable_dbo") is True:
        parts.append("enable_dbo = true")
    size = serve_int(f, "ubatch_size", 0)
    if size is not None and size > 1:
        parts.append(f"ubatch_size = {size}")
    return " and ".join(parts)


def microbatch_backends(version: str, gpu: Gpu | None) -> tuple[str, ...]:
    """The all2all backends microbatching accepts: 0.33.0 adds allgather_reducescatter on ROCm."""
    if at_least(version, "0.33.0") and gpu is not None and gpu.platform == "rocm":
        return (*MICROBATCH_BACKENDS, "allgather_reducescatter")
    return MICROBATCH_BACKENDS


def all2all_message(version: str, backend: str, gpu: Gpu | None = None) -> str:
    """The assertion's text in `version` (on `gpu`'s platform; None: CUDA)."""
    if at_least(version, "0.33.0"):
        backends = microbatch_backends(version, gpu)
        return (
            f"Microbatching currently only supports the {', '.join(backends)} all2all backends on this "
            f"platform. {backend} is not supported. To fix use one of "
            f"{', '.join('--all2all-backend=' + b for b in backends)} and install the matching kernels."
        )
    return (
        "Microbatching currently only supports the deepep_low_latency, deepep_high_throughput, and nixl_ep all2all "
        f"backends. {backend} is not supported. To fix use --all2all-backend=deepep_low_latency, "
        "--all2all-backend=deepep_high_throughput, or --all2all-backend=nixl_ep and install the matching kernels."
    )


@rule(
    "microbatching-all2all-backend",
    Severity.ERROR,
    "microbatching (enable_dbo, ubatch_size > 1) without a DeepEP or NIXL-EP all2all backend",
    source=SOURCE,
)
def microbatching_all2all_backend(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if microbatches(f) is None:
        return []
    backend = f.serve.get("all2all_backend", "allgather_reducescatter")
    if not isinstance(backend, str):
        return []
    effective = "allgather_reducescatter" if backend in ("pplx", "naive") else backend
    accepted = microbatch_backends(f.version, f.gpu)
    if effective in accepted:
        return []
    written = f"all2all_backend = {backend!r}" if "all2all_backend" in f.serve else f"the default {effective!r}"
    return [
        Hit(
            "microbatching-all2all-backend",
            refuse(f, f"{_why(f)} with {written} all2all backend", all2all_message(f.version, effective, f.gpu)),
            [*f.loc("serve", "enable_dbo"), *f.loc("serve", "ubatch_size"), *f.loc("serve", "all2all_backend")],
            f"set all2all_backend to one of {', '.join(accepted)} (and install its kernels), or turn "
            "microbatching off (enable_dbo = false, ubatch_size at most 1)",
            role=f.role.name,
            order=(STAGE_POST_INIT, order.MICROBATCHING),
        )
    ]


@rule(
    "microbatching-thresholds",
    Severity.ERROR,
    "DBO token thresholds below the number of microbatches",
    releases=">=0.30.0",
    source="vllm/config/parallel.py ParallelConfig._verify_args",
)
def microbatching_thresholds(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    count = microbatches(f)
    if count is None:
        return []
    thresholds = {key: serve_int(f, key, default) for key, default in DEFAULT_THRESHOLDS.items()}
    if any(v is None or v < 0 for v in thresholds.values()):
        return []  # invalid-value reports those
    low = min(int(v or 0) for v in thresholds.values())
    if low >= count:
        return []
    shown_thresholds = ", ".join(
        f"{key} = {value}" if key in f.serve else f"{key} unset ({value})" for key, value in thresholds.items()
    )
    return [
        Hit(
            "microbatching-thresholds",
            refuse(
                f,
                f"{_why(f)} ({count} microbatches) with {shown_thresholds}",
                "dbo_decode_token_threshold and dbo_prefill_token_threshold must be at least the number of "
                f"microbatches ({count}).",
            ),
            [
                *f.loc("serve", "ubatch_size"),
                *f.loc("serve", "enable_dbo"),
                *f.loc("serve", "dbo_decode_token_threshold"),
                *f.loc("serve", "dbo_prefill_token_threshold"),
            ],
            f"a batch must hold at least one token per microbatch: set both thresholds to at least {count}, or "
            "use fewer microbatches",
            role=f.role.name,
            order=order.built("ParallelConfig", f.version, order.PARALLEL_VERIFY_ARGS + 1),
        )
    ]
