"""Parallel sizes against each other and against the model: tensor, pipeline and context parallelism.

Sources (every release 0.27.0-0.33.0 unless a rule says otherwise):
`vllm/config/parallel.py` `ParallelConfig._validate_parallel_config` (context-parallel sizes, EPLB) and
`vllm/config/model.py` `ModelConfig.verify_with_parallel_config` (heads, SupportsPP, KV heads), which
`VllmConfig.__post_init__` calls, and `vllm/platforms/cuda.py` `CudaPlatformBase.check_and_update_config` (0.30.0). The data-parallel launch options are in rules/dataparallel.py, expert
parallelism in rules/experts.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from profilekit.errors import Location, Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import Undecided, lacking, needs, serve_bool, serve_int, shape, shown
from profilekit.vllm.versions import at_least

SOURCE_PARALLEL = "vllm/config/parallel.py ParallelConfig._validate_parallel_config"
SOURCE_MODEL = "vllm/config/model.py ModelConfig.verify_with_parallel_config"


def refuse(f: RoleFacts, what: str, message: str) -> str:
    return f'{what}; vLLM {f.version} refuses to start: "{message}"'


def parallel_sizes(f: RoleFacts) -> tuple[int, int, int, int, int] | None:
    """(tensor, pipeline, data, prefill context, decode context) parallel sizes; None when one is not a valid size."""
    sizes = tuple(
        serve_int(f, key, 1)
        for key in (
            "tensor_parallel_size",
            "pipeline_parallel_size",
            "data_parallel_size",
            "prefill_context_parallel_size",
            "decode_context_parallel_size",
        )
    )
    if any(s is None or s < 1 for s in sizes):
        return None  # not an integer, or below ParallelConfig's field constraints (invalid-value)
    tp, pp, dp, pcp, dcp = (int(s) for s in sizes if s is not None)
    return tp, pp, dp, pcp, dcp


def _written(f: RoleFacts, key: str, value: object) -> str:
    return f"{key} = {shown(value)}" if key in f.serve else f"{key} unset ({shown(value)})"


# ---- ParallelConfig._validate_parallel_config ------------------------------------------------


@rule(
    "context-parallel-size",
    Severity.ERROR,
    "decode/prefill context-parallel sizes that tensor parallelism (or data parallelism) does not allow",
    source=SOURCE_PARALLEL,
)
def context_parallel_size(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    sizes = parallel_sizes(f)
    if sizes is None:
        return []
    tp, _pp, dp, pcp, dcp = sizes
    v = f.version
    locs = [
        *f.loc("serve", "tensor_parallel_size"),
        *f.loc("serve", "prefill_context_parallel_size"),
        *f.loc("serve", "decode_context_parallel_size"),
    ]
    hits: list[Hit] = []

    def add(index: int, what: str, message: str, fix: str, where: list[Location] | None = None) -> None:
        hits.append(
            Hit(
                "context-parallel-size",
                refuse(f, what, message),
                where if where is not None else locs,
                fix,
                role=f.role.name,
                order=order.built("ParallelConfig", v, order.PARALLEL_VALIDATORS + index),
            )
        )

    if not at_least(v, "0.30.0") and pcp > 1 and dp > 1:
        add(
            6,
            f"prefill_context_parallel_size = {pcp} with data_parallel_size = {dp}",
            "PCP does not support data parallelism yet.",
            f"vLLM {v} has no prefill context parallelism with data parallelism: set one of them to 1",
            [*f.loc("serve", "prefill_context_parallel_size"), *f.loc("serve", "data_parallel_size")],
        )
    if pcp == 1 and dcp > 0 and tp % dcp != 0:
        add(
            7,
            f"decode_context_parallel_size = {dcp} does not divide {_written(f, 'tensor_parallel_size', tp)}",
            f"tp_size={tp} must be divisible by dcp_size={dcp}.",
            "decode context parallelism reuses the tensor-parallel ranks: set decode_context_parallel_size to a "
            f"divisor of tensor_parallel_size ({tp})",
        )
    elif pcp != 1 and dcp not in (1, pcp, tp * pcp):
        valid = sorted({1, pcp, tp * pcp})
        add(
            8,
            f"decode_context_parallel_size = {dcp} with prefill_context_parallel_size = {pcp} and "
            f"{_written(f, 'tensor_parallel_size', tp)}",
            "When PCP is enabled, DCP must be disabled, span the PCP axis, or span the full TP x PCP axis. "
            f"Got TP={tp}, PCP={pcp}, DCP={dcp}; valid DCP sizes are {valid}.",
            f"set decode_context_parallel_size to one of {', '.join(map(str, valid))}",
        )
    backend = f.serve.get("dcp_comm_backend")
    if not at_least(v, "0.29.0") and backend == "a2a" and dcp <= 1:
        add(
            9,
            f'dcp_comm_backend = "a2a" with {_written(f, "decode_context_parallel_size", dcp)}',
            "dcp_comm_backend='a2a' requires decode_context_parallel_size > 1.",
            "remove dcp_comm_backend, or set decode_context_parallel_size above 1",
            [*f.loc("serve", "dcp_comm_backend"), *f.loc("serve", "decode_context_parallel_size")],
        )
    if v == "0.30.0" and pcp > 1 and dp > 1:  # Cuda/RocmPlatform.check_and_update_config, 0.30.0 only
        platform = "ROCm" if f.gpu is not None and f.gpu.platform == "rocm" else "CUDA"
        hits.append(
            Hit(
                "context-parallel-size",
                refuse(
                    f,
                    f"prefill_context_parallel_size = {pcp} with data_parallel_size = {dp}",
                    f"PCP does not support data parallelism on {platform} yet.",
                ),
                [*f.loc("serve", "prefill_context_parallel_size"), *f.loc("serve", "data_parallel_size")],
                f"vLLM {v} has no prefill context parallelism with data parallelism on {platform}: set one of them "
                "to 1",
                role=f.role.name,
                order=(STAGE_POST_INIT, order.CUDA_PLATFORM_HOOK),
            )
        )
    return hits[:1]  # vLLM stops at the first


_NUMACTL_CPUSET = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")  # vllm/config/parallel.py


def _numa_value_error(key: str, value: object) -> str | None:
    """ParallelConfig's field validator of `numa_bind_nodes` or `numa_bind_cpus` (every release 0.27.0-0.33.0)."""
    if not isinstance(value, list):
        return None
    if key == "numa_bind_nodes":
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return None  # argparse's int conversion (invalid-value)
        if not value:
            return "numa_bind_nodes must not be empty."
        if any(node < 0 for node in value):
            return "numa_bind_nodes must contain non-negative integers."
        return None
    if not all(isinstance(v, str) and v for v in value):
        return None
    if not value:
        return "numa_bind_cpus must not be empty."
    for cpuset in value:
        if not _NUMACTL_CPUSET.fullmatch(cpuset):
            return "numa_bind_cpus entries must use numactl CPU list syntax, for example '0-3' or '0,2,4-7'."
        for part in cpuset.split(","):
            start, _, end = part.partition("-")
            if end and int(start) > int(end):
                return f"numa_bind_cpus ranges must be ascending, but got '{cpuset}'."
    return None


def _numa_values(f: RoleFacts) -> list[Hit]:
    hits = []
    for key in ("numa_bind_nodes", "numa_bind_cpus"):
        value = f.serve.get(key)
        error = _numa_value_error(key, value)
        if error is None:
            continue
        hits.append(
            Hit(
                "invalid-value",
                f"serve.{key}: vLLM {f.version} refuses {shown(value)}: "
                f'"1 validation error for ParallelConfig / {key} / Value error, {error}"',
                f.loc("serve", key),
                "write numactl node indices (0, 1, ...)"
                if key == "numa_bind_nodes"
                else 'write numactl CPU lists such as "0-3" or "0,2,4-7" (ascending ranges), one per GPU',
                role=f.role.name,
                order=order.fields("ParallelConfig", f.version),
            )
        )
    return hits


@rule(
    "numa-bind",
    Severity.ERROR,
    "numa_bind_nodes or numa_bind_cpus without numa_bind (their values are checked first, as invalid-value)",
    source=SOURCE_PARALLEL,
)
def numa_bind(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    # the field validators run as ParallelConfig is built, before its model validators: `invalid-value`
    values = _numa_values(f)
    given = [k for k in ("numa_bind_nodes", "numa_bind_cpus") if f.serve.get(k) is not None]
    if not given or serve_bool(f, "numa_bind") is True:
        return values
    return [
        *values,
        Hit(
            "numa-bind",
            refuse(
                f,
                f"{' and '.join(given)} without numa_bind = true",
                "numa_bind_nodes and numa_bind_cpus require numa_bind=True.",
            ),
            [loc for k in (*given, "numa_bind") for loc in f.loc("serve", k)],
            "set numa_bind = true, or remove " + " and ".join(given),
            role=f.role.name,
            order=order.built("ParallelConfig", f.version, order.PARALLEL_VALIDATORS + 2),
        ),
    ]


NNODES_BACKENDS = ("mp", "uni", "external_launcher")


@rule(
    "nnodes-executor-backend",
    Severity.ERROR,
    "nnodes > 1 with a distributed_executor_backend other than mp, uni or external_launcher",
    source="vllm/config/parallel.py ParallelConfig.__post_init__",
)
def nnodes_executor_backend(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    # unset, a CUDA host defaults to mp when nnodes > 1; the data-parallel launch checks of rules/dataparallel.py
    # run before ParallelConfig is built
    nnodes = serve_int(f, "nnodes", 1)
    backend = f.serve.get("distributed_executor_backend")
    if nnodes is None or nnodes <= 1 or backend is None or backend in NNODES_BACKENDS:
        return []
    return [
        Hit(
            "nnodes-executor-backend",
            refuse(
                f,
                f"nnodes = {nnodes} with distributed_executor_backend = {shown(backend)}",
                "nnodes > 1 can only be set when distributed executor backend is mp, uni or external_launcher.",
            ),
            [*f.loc("serve", "nnodes"), *f.loc("serve", "distributed_executor_backend")],
            'set distributed_executor_backend = "mp" (or leave it out), or start Ray across the nodes and set '
            "nnodes = 1",
            role=f.role.name,
            # after the data_parallel_rank range (+5) and the host's GPU count
            order=order.built("ParallelConfig", f.version, order.PARALLEL_POST_INIT + 8),
        )
    ]


@rule(
    "ray-nsight",
    Severity.ERROR,
    "ray_workers_use_nsight without the Ray executor",
    source="vllm/config/parallel.py ParallelConfig._verify_args",
)
def ray_nsight(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if serve_bool(f, "ray_workers_use_nsight") is not True or f.serve.get("distributed_executor_backend") == "ray":
        return []
    backend = f.serve.get("distributed_executor_backend")
    shown_backend = f"distributed_executor_backend = {shown(backend)}" if backend is not None else "no Ray executor"
    return [
        Hit(
            "ray-nsight",
            refuse(
                f,
                f"ray_workers_use_nsight = true with {shown_backend}",
                "Unable to use nsight profiling unless workers run with Ray.",
            ),
            [*f.loc("serve", "ray_workers_use_nsight"), *f.loc("serve", "distributed_executor_backend")],
            'set distributed_executor_backend = "ray", or remove ray_workers_use_nsight',
            role=f.role.name,
            order=order.built("ParallelConfig", f.version, order.PARALLEL_VERIFY_ARGS),
        )
    ]


# ---- ModelConfig.verify_with_parallel_config (needs the model's config.json) ------------------


@rule(
    "attention-heads-tensor-parallel",
    Severity.ERROR,
    "attention heads that tensor_parallel_size does not divide (needs the model's config.json)",
    source=SOURCE_MODEL,
)
def attention_heads_tensor_parallel(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    tp = serve_int(f, "tensor_parallel_size", 1)
    s = shape(f)
    heads = s.heads if s is not None else None
    if tp is None or tp < 1 or heads is None or heads % tp == 0:
        return []
    message = f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp})."
    divisors = [d for d in range(1, heads + 1) if heads % d == 0]
    return [
        Hit(
            "attention-heads-tensor-parallel",
            refuse(f, f"tensor_parallel_size = {tp} with a model of {heads} attention heads (config.json)", message),
            [*f.loc("serve", "tensor_parallel_size"), *f.model.locations],
            f"set tensor_parallel_size to a divisor of {heads}: {', '.join(map(str, divisors))}",
            role=f.role.name,
            order=(STAGE_POST_INIT, order.ATTENTION_HEADS),
        )
    ]


@needs
def _heads_needs(f: RoleFacts) -> list[Undecided]:
    tp = serve_int(f, "tensor_parallel_size", 1)
    s = shape(f)
    if tp is None or tp <= 1 or (s is not None and s.heads is not None):
        return []
    return [
        Undecided(
            f"tensor_parallel_size = {tp} against the attention heads{lacking(s, 'num_attention_heads')}",
            tuple(f.loc("serve", "tensor_parallel_size")),
        )
    ]


MSG_PP = "Pipeline parallelism is not supported for this model. Supported models implement the `SupportsPP` interface."


@rule(
    "pipeline-parallel-unsupported",
    Severity.ERROR,
    "pipeline_parallel_size > 1 for an architecture that does not implement SupportsPP",
    source=SOURCE_MODEL,
)
def pipeline_parallel_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    pp = serve_int(f, "pipeline_parallel_size", 1)
    info = f.model.info
    if pp is None or pp <= 1 or info is None or info.pipeline_parallel:
        return []
    return [
        Hit(
            "pipeline-parallel-unsupported",
            refuse(f, f"pipeline_parallel_size = {pp} with a {f.model.architecture} model", MSG_PP),
            [*f.loc("serve", "pipeline_parallel_size"), *f.model.locations],
            f"vLLM {f.version} cannot split {f.model.architecture} into pipeline stages: set pipeline_parallel_size "
            "= 1 and use tensor parallelism",
            role=f.role.name,
            order=(STAGE_POST_INIT, order.PIPELINE_SUPPORT),
        )
    ]


@rule(
    "pipeline-parallel-layers",
    Severity.WARNING,
    "more pipeline stages than the model has hidden layers (vLLM fails later, when it builds the model)",
    source="vllm/distributed/utils.py get_pp_indices",
)
def pipeline_parallel_layers(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    pp = serve_int(f, "pipeline_parallel_size", 1)
    s = shape(f)
    layers = s.layers if s is not None else None
    if pp is None or layers is None or pp <= layers:
        return []
    return [
        Hit(
            "pipeline-parallel-layers",
            f"pipeline_parallel_size = {pp} with a model of {layers} hidden layers (config.json): "
            f"{pp - layers} pipeline stage(s) would hold no layer; vLLM {f.version} accepts the configuration "
            "but cannot partition the model when it loads it",
            [*f.loc("serve", "pipeline_parallel_size"), *f.model.locations],
            f"set pipeline_parallel_size to at most {layers}",
            role=f.role.name,
        )
    ]


def _gqa_context_parallel(f: RoleFacts, tp: int, dcp: int, heads: int, kv: int) -> tuple[str, str, str] | None:
    """The first GQA/MQA decode-context-parallel failure: (what, vLLM's message, fix)."""
    if tp <= kv:
        return (
            f"decode_context_parallel_size = {dcp} with tensor_parallel_size = {tp} and a model of {kv} KV heads",
            "Decode context parallelism for GQA/MQA requires "
            f"`--tensor-parallel-size` ({tp}) to be greater than the model's total number of KV heads ({kv}). "
            "Increase `--tensor-parallel-size` or set `--decode-context-parallel-size 1`.",
            f"raise tensor_parallel_size above {kv}, or set decode_context_parallel_size = 1",
        )
    max_dcp = tp // kv
    if dcp > max_dcp:
        return (
            f"decode_context_parallel_size = {dcp} with tensor_parallel_size = {tp} and a model of {kv} KV heads",
            f"`--decode-context-parallel-size` ({dcp}) exceeds the maximum supported value ({max_dcp}) for "
            f"`--tensor-parallel-size` ({tp}) and {kv} model KV heads.",
            f"set decode_context_parallel_size to at most {max_dcp}",
        )
    per_kv = heads // kv
    if per_kv % dcp != 0:
        return (
            f"decode_context_parallel_size = {dcp} with a model of {per_kv} query heads per KV head",
            f"The model's number of query heads per KV head ({per_kv}) must be divisible by "
            f"`--decode-context-parallel-size` ({dcp}) for GQA/MQA.",
            f"set decode_context_parallel_size to a divisor of {per_kv}",
        )
    return None


@rule(
    "context-parallel-kv-heads",
    Severity.ERROR,
    "decode context parallelism that the model's KV heads do not allow (GQA/MQA; needs the model's config.json)",
    source=SOURCE_MODEL,
)
def context_parallel_kv_heads(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    sizes = parallel_sizes(f)
    s = shape(f)
    if sizes is None or s is None or s.mla:
        return []
    tp, _pp, _dp, _pcp, dcp = sizes
    heads, kv = s.heads, s.kv_heads
    if dcp <= 1 or heads is None or kv is None or kv < 1:
        return []
    failure = _gqa_context_parallel(f, tp, dcp, heads, kv)
    if failure is None:
        return []
    what, message, fix = failure
    return [
        Hit(
            "context-parallel-kv-heads",
            refuse(f, what + " (config.json)", message),
            [
                *f.loc("serve", "decode_context_parallel_size"),
                *f.loc("serve", "tensor_parallel_size"),
                *f.model.locations,
            ],
            fix,
            role=f.role.name,
            order=(STAGE_POST_INIT, order.CONTEXT_PARALLEL_HEADS),
        )
    ]


@needs
def _kv_heads_needs(f: RoleFacts) -> list[Undecided]:
    dcp = serve_int(f, "decode_context_parallel_size", 1)
    s = shape(f)
    if dcp is None or dcp <= 1 or (s is not None and (s.mla or s.kv_heads is not None)):
        return []
    return [
        Undecided(
            f"decode_context_parallel_size = {dcp} against the KV heads{lacking(s, 'num_key_value_heads')}",
            tuple(f.loc("serve", "decode_context_parallel_size")),
        )
    ]


@needs
def _replayssm_heads_needs(f: RoleFacts) -> list[Undecided]:
    """replayssm-tensor-parallel-heads (rules/replayssm.py) reads mamba_num_heads from the config.json."""
    tp = serve_int(f, "tensor_parallel_size", 1)
    s = shape(f)
    if f.serve.get("use_replayssm") is not True or tp is None or tp <= 1:
        return []
    if s is not None and isinstance(s.text.get("mamba_num_heads"), int):
        return []
    if f.model.hybrid is False:
        return []
    return [
        Undecided(
            f"use_replayssm with tensor_parallel_size = {tp} against the Mamba heads{lacking(s, 'mamba_num_heads')}",
            tuple(f.loc("serve", "tensor_parallel_size")),
        )
    ]
