"""Will the weights and one max_model_len request's KV cache fit on the GPU the role declares (docs/CAPACITY.md).

Sources: `vllm/v1/worker/gpu_worker.py` `determine_available_memory` (what the KV cache gets),
`vllm/v1/core/kv_cache_utils.py` (0.33.0: `kv_cache_planning.py`) `_check_enough_kv_cache_memory` and
`estimate_max_model_len` (the refusal and its figure), through profilekit.capacity. The weights and the KV cache
are computed as vLLM computes them; the reserve between them (activations, memory outside PyTorch, CUDA graphs)
is an estimate, so a verdict that depends on it is a warning, and only one that holds without any reserve an error.
A role with no GPU declared, or whose weights or KV cache profilekit cannot tell, gets no verdict (`profilekit
capacity` says what is missing).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.errors import Location, Severity
from profilekit.rules.engine import Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import derived_max_model_len
from profilekit.rules.scheduler import budget
from profilekit.rules.scheduling import full_cudagraphs

if TYPE_CHECKING:
    from profilekit.capacity.plan import Offload, Plan
    from profilekit.capacity.weights import Weights

SOURCE = "vllm/v1/worker/gpu_worker.py determine_available_memory; vllm/v1/core/kv_cache_utils.py"
DOCS = "https://docs.vllm.ai/en/latest/configuration/conserving_memory/"


def _index(path: Path, shown: str) -> tuple[int | None, str]:
    """metadata.total_size of a model.safetensors.index.json, or why not (read once per version of the file)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None, f"{shown} does not exist"
    except OSError as exc:
        return None, f"{shown} cannot be read ({exc.strerror})"
    return _read_index(path, shown, stat.st_mtime_ns, stat.st_size)


@cache
def _read_index(path: Path, shown: str, _mtime: int, _size: int) -> tuple[int | None, str]:
    from profilekit.capacity.weights import index_total  # noqa: PLC0415 - only a role with a GPU declared

    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"{shown} cannot be read as JSON ({type(exc).__name__})"
    total = index_total(raw)
    return (total, "") if total is not None else (None, f"{shown} has no metadata.total_size")


def role_weights(f: RoleFacts, root: Path | None) -> Weights | str:
    """The role's weights from [model] weights_gib, [model] weights_index, or its config.json."""
    from profilekit.capacity.weights import weights  # noqa: PLC0415 - only a role with a GPU declared

    tp = _positive(f.serve.get("tensor_parallel_size"))
    pp = _positive(f.serve.get("pipeline_parallel_size"))
    declared = f.role.entry("model", "weights_gib")
    size = declared.value if declared is not None and isinstance(declared.value, (int, float)) else None
    given = f.role.entry("model", "weights_index")
    total: int | None = None
    shown = ""
    if size is None and given is not None and isinstance(given.value, str):
        path = Path(given.value).expanduser()
        path = path if path.is_absolute() or root is None else root / path
        total, problem = _index(path, given.value)
        if total is None:
            return f"[model] weights_index: {problem}"
        shown = given.value
    return weights(f.model.config, declared_gib=size, index=total, index_source=shown, tp=tp, pp=pp)


def role_plan(f: RoleFacts, root: Path | None) -> Plan:
    """The role's capacity on its declared GPU (profilekit.capacity.plan)."""
    from profilekit.capacity.plan import plan  # noqa: PLC0415 - the capacity stage loads for a role with a GPU only

    b = budget(f)
    gpu = f.gpu
    # vLLM checks a hybrid model's Mamba blocks against max_num_seqs before capturing full decode graphs: on by
    # default or written, and kept on a CUDA GPU whose attention backends (FlashAttention, FlashInfer, the MLA
    # backends; Mamba and GDN: uniform batches) never drop them to piecewise
    graphs = gpu is not None and gpu.platform == "cuda" and gpu.capability >= (8, 0) and full_cudagraphs(f)
    return plan(
        role=f.role.name,
        gpu=f.gpu,
        version=f.version,
        config=f.model.config,
        serve=f.serve,
        weights=role_weights(f, root),
        max_model_len=derived_max_model_len(f),
        tokens=b.batched_tokens if b is not None else 2048,
        seqs=b.seqs if b is not None else 256,
        mamba_mode=f.mamba_cache_mode,
        graph_seqs=b.seqs if graphs and b is not None else None,
        offload=offload_on_node(f),
    )


def _plan(ctx: Context, f: RoleFacts) -> Plan | None:
    """The role's plan, once per role; None without a declared GPU (no verdict, and nothing more to load)."""
    if f.gpu is None:
        return None
    key = "capacity.plan"
    if key not in f.memo:
        f.memo[key] = role_plan(f, ctx.root)
    found: Plan = f.memo[key]
    return found


def _positive(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def _places(f: RoleFacts, *keys: str) -> list[Location]:
    locs = [loc for key in keys for loc in f.loc("serve", key)]
    return (
        locs
        + [loc for key in ("weights_gib", "weights_index") for loc in f.loc("model", key)]
        + f.loc("hardware", "gpu")
    )


@rule(
    "weights-exceed-gpu",
    Severity.ERROR,
    "the model's weights on one GPU exceed what vLLM may use of it (total memory x gpu_memory_utilization)",
    source=SOURCE,
)
def weights_exceed_gpu(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    p = _plan(ctx, f)
    if p is None or p.gpu is None:
        return []
    from profilekit.capacity.memory import gib  # noqa: PLC0415 - loaded with the plan
    from profilekit.capacity.plan import WEIGHTS_EXCEED  # noqa: PLC0415 - loaded with the plan

    if p.verdict().state != WEIGHTS_EXCEED:
        return []
    assert not isinstance(p.weights, str) and not isinstance(p.memory, str)
    util = f.serve.get("gpu_memory_utilization", 0.9)
    wider = _wider(f, p)
    message = (
        f"the weights take {gib(p.weights.per_gpu)} GiB on each GPU ({p.weights.source}), more than the "
        f"{gib(p.memory.requested)} GiB vLLM may use of {p.gpu.name} (gpu_memory_utilization {util} of "
        f"{gib(p.gpu.memory_bytes)} GiB); vLLM runs out of memory loading them, or refuses: "
        '"No available memory for the cache blocks."'
    )
    fix = f"spread the weights over more GPUs ({wider})" if wider else "use a GPU with more memory"
    fix += ", or serve a quantized checkpoint"
    return [
        Hit(
            "weights-exceed-gpu",
            message,
            _places(f, "tensor_parallel_size", "gpu_memory_utilization"),
            fix,
            role=f.role.name,
        )
    ]


def _wider(f: RoleFacts, p: Plan) -> str:
    """The smallest tensor_parallel_size (a power of two) at which the weights fit, as text."""
    tp = _positive(f.serve.get("tensor_parallel_size"))
    if isinstance(p.weights, str) or isinstance(p.memory, str):
        return ""
    per_gpu_at_one = p.weights.per_gpu * tp
    for wider in (2, 4, 8, 16, 32, 64):
        if wider > tp and per_gpu_at_one / wider <= p.memory.requested * 0.9:
            return f"tensor_parallel_size = {wider}"
    return ""


@rule(
    "kv-cache-too-small",
    Severity.ERROR,
    "one request of max_model_len does not fit in the KV cache memory vLLM would have (a warning when only the "
    "estimated reserve decides)",
    source=SOURCE,
)
def kv_cache_too_small(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    p = _plan(ctx, f)
    if p is None:
        return []
    from profilekit.capacity.memory import gib  # noqa: PLC0415 - loaded with the plan
    from profilekit.capacity.plan import KV_REFUSED, TIGHT  # noqa: PLC0415 - loaded with the plan

    state = p.verdict().state
    if state not in (KV_REFUSED, TIGHT):
        return []  # fits, unknown, or the weights alone do not fit (weights-exceed-gpu says it)
    assert not isinstance(p.kv, str) and not isinstance(p.memory, str) and p.max_model_len is not None
    kv, mem, mml = p.kv, p.memory, p.max_model_len
    sure = mem.without_reserve
    severity = Severity.ERROR if state == KV_REFUSED else Severity.WARNING
    shown = mem.available if mem.available > 0 else sure
    needed = kv.needed_bytes(mml)
    estimated = kv.estimate_max_model_len(shown, mml) if shown > 0 else 0
    about = "" if mem.exact else "about "
    if shown <= 0:
        quoted = "No available memory for the cache blocks."
    else:
        quoted = (
            f"To serve at least one request with the model's max seq len ({mml}), ({gib(needed)} GiB KV cache is "
            f"needed, which is larger than the available KV cache memory ({gib(shown)} GiB)."
            + (
                f" Based on the available memory, the estimated maximum model length is {estimated}."
                if estimated
                else ""
            )
        )
    where = f"on {p.gpu.name}" if p.gpu is not None else ""
    if severity is Severity.ERROR:
        head = f"one request of max_model_len {mml} needs {gib(needed)} GiB of KV cache {where}, more than the "
        head += f"{gib(sure)} GiB left after the weights even with no activations; vLLM refuses to start"
        head += "" if mem.exact else " (its figures, estimated)"
    else:
        head = (
            f"one request of max_model_len {mml} needs {gib(needed)} GiB of KV cache {where}; vLLM would have "
            f"{about}{gib(mem.available)} GiB (an estimate: {gib(mem.reserve)} GiB reserved for activations, "
            f"memory outside PyTorch and CUDA graphs, give or take {gib(mem.uncertainty)}), so it likely refuses"
        )
    fixes = [f"max_model_len = {estimated}" if estimated else "", _utilization_fix(f, p, needed)]
    fix = "set " + " or ".join(x for x in fixes if x) if any(fixes) else "use a GPU with more memory"
    return [
        Hit(
            "kv-cache-too-small",
            f'{head}: "{quoted}"',
            _places(f, "max_model_len", "gpu_memory_utilization", "kv_cache_dtype", "tensor_parallel_size"),
            fix + f" (see {DOCS})",
            role=f.role.name,
            severity=severity,
        )
    ]


@rule(
    "mamba-blocks-too-few",
    Severity.ERROR,
    "max_num_seqs above the Mamba cache blocks vLLM would have: a hybrid model's full CUDA graphs need one block per "
    "decode sequence (a warning when only the estimated reserve decides)",
    source="vllm/config/compilation.py CompilationConfig.resolve_cudagraph_mode_and_sizes",
)
def mamba_blocks_too_few(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    p = _plan(ctx, f)
    found = p.mamba_blocks() if p is not None else None  # None unless max_num_seqs is checked (graph_seqs)
    if p is None or p.gpu is None or found is None or p.graph_seqs is None:
        return []
    from profilekit.capacity.plan import FITS, KV_REFUSED  # noqa: PLC0415 - loaded with the plan

    verdict, blocks, safe = found
    if verdict.state == FITS:
        return []
    assert not isinstance(p.memory, str)
    seqs = p.graph_seqs
    quoted = (
        f"max_num_seqs ({seqs}) exceeds available Mamba cache blocks ({blocks}). Each decode sequence requires one "
        f"Mamba cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to at most {blocks} or "
        "increase gpu_memory_utilization."
    )
    written = "" if "max_num_seqs" in f.serve else f" (vLLM's default on {p.gpu.name})"
    if verdict.state == KV_REFUSED:
        head = (
            f"max_num_seqs {seqs}{written} is more than the Mamba cache blocks the KV cache holds on {p.gpu.name} "
            f"even with no activations; vLLM refuses to start after loading the weights and profiling"
            + ("" if p.memory.exact else " (its figures, estimated)")
        )
    else:
        head = (
            f"max_num_seqs {seqs}{written} is about as many as the Mamba cache blocks the KV cache would hold on "
            f"{p.gpu.name} (about {blocks}, an estimate: the reserve's uncertainty decides), so it may refuse"
        )
    fix = f"set max_num_seqs = {safe}" if safe > 0 else "use a GPU with more memory"
    fix += ', or compilation_config.cudagraph_mode = "PIECEWISE" (no full decode graphs)'
    return [
        Hit(
            "mamba-blocks-too-few",
            f'{head}: "{quoted}"',
            _places(f, "max_num_seqs", "gpu_memory_utilization", "max_model_len", "tensor_parallel_size"),
            fix,
            role=f.role.name,
            severity=Severity.ERROR if verdict.state == KV_REFUSED else Severity.WARNING,
        )
    ]


def _utilization_fix(f: RoleFacts, p: Plan, needed: int) -> str:
    """The gpu_memory_utilization at which the estimate fits, if one below 0.98 does."""
    from profilekit.capacity.memory import GIB  # noqa: PLC0415 - loaded with the plan

    if p.gpu is None or isinstance(p.memory, str) or p.memory.exact:
        return ""
    total = p.gpu.memory_bytes
    want = (p.memory.weights + p.memory.reserve + p.memory.uncertainty + needed + GIB // 4) / total
    util = f.serve.get("gpu_memory_utilization", 0.9)
    if isinstance(util, (int, float)) and util < want <= 0.98:
        return f"gpu_memory_utilization = {want:.2f}"
    return ""


# ---- the KV cache offloaded to CPU memory, against the host memory a node has -------------------------------------

_OFFLOAD_CONNECTORS = ("OffloadingConnector", "SimpleCPUOffloadConnector")
_SIMPLE_DEFAULT = 8 << 30  # simple_cpu_offload_connector.py DEFAULT_CPU_CAPACITY_BYTES


def _size(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _connector_buffer(name: object, extra: object, world: int) -> tuple[int, str] | None:
    """The CPU bytes one engine's offloading connector pins (`cpu_bytes_to_use` is the engine's, summed over its
    ranks; SimpleCPUOffloadConnector: `cpu_bytes_to_use_per_rank` x ranks wins, 8 GiB when neither is given)."""
    if name not in _OFFLOAD_CONNECTORS:
        return None
    extra = extra if isinstance(extra, dict) else {}
    per_rank, total = _size(extra.get("cpu_bytes_to_use_per_rank")), _size(extra.get("cpu_bytes_to_use"))
    if name == "SimpleCPUOffloadConnector" and per_rank is not None:
        return int(per_rank) * world, f"{name} cpu_bytes_to_use_per_rank {int(per_rank)} x {world} GPUs"
    if total is not None:
        return int(total), f"{name} cpu_bytes_to_use {int(total)}"
    if name == "SimpleCPUOffloadConnector":
        return _SIMPLE_DEFAULT, f"{name}'s default of 8 GiB (no cpu_bytes_to_use)"
    return None  # OffloadingConnector without cpu_bytes_to_use: vLLM refuses it (its own message)


def offload_buffer(f: RoleFacts) -> tuple[int, str, list[Location]] | None:
    """The CPU memory one engine of the role pins for its offloaded KV cache, what says so and where; None when it
    offloads to no CPU buffer profilekit can size (LMCache's server holds its own)."""
    from profilekit.capacity.memory import GIB  # noqa: PLC0415 - only a role that offloads

    serve = f.serve
    tp, pp = _positive(serve.get("tensor_parallel_size")), _positive(serve.get("pipeline_parallel_size"))
    size = _size(serve.get("kv_offloading_size"))
    if size is not None:  # `_post_init_kv_transfer_config`: it replaces any connector written
        if serve.get("kv_offloading_backend", "native") != "native":
            return None
        gpus = f"{tp * pp} GPU{'s' if tp * pp != 1 else ''}"
        said = f"kv_offloading_size {size:g} GiB (the engine's, summed over its {gpus})"
        return int(size * GIB), said, f.loc("serve", "kv_offloading_size")
    config = serve.get("kv_transfer_config")
    if not isinstance(config, dict):
        return None
    connectors = [config]
    extra = config.get("kv_connector_extra_config")
    if config.get("kv_connector") == "MultiConnector" and isinstance(extra, dict):
        children = extra.get("connectors")
        connectors += [c for c in children if isinstance(c, dict)] if isinstance(children, list) else []
    for connector in connectors:
        found = _connector_buffer(connector.get("kv_connector"), connector.get("kv_connector_extra_config"), tp * pp)
        if found is not None:
            return found[0], found[1], f.role.origins("serve", "kv_transfer_config")
    return None


def offload_on_node(f: RoleFacts) -> Offload | None:
    """The role's offloaded KV cache on one node against the host memory it declares; None when it offloads to no
    CPU buffer profilekit can size."""
    from profilekit.capacity.plan import Offload  # noqa: PLC0415 - only a role that offloads

    found = offload_buffer(f)
    if found is None:
        return None
    per_engine, said, places = found
    serve = f.serve
    engines = _positive(serve.get("data_parallel_size_local"))
    if "data_parallel_size_local" not in serve and not serve.get("data_parallel_address"):
        engines = _positive(serve.get("data_parallel_size"))  # every engine of the role on this node
    return Offload(per_engine, engines, said, _size(f.role.hardware.get("host_memory_gib")), tuple(places))


@rule(
    "kv-offload-exceeds-host-memory",
    Severity.ERROR,
    "the CPU memory a node's vLLM engines pin for the offloaded KV cache exceeds the host memory [hardware] declares",
    source="vllm/config/vllm.py _post_init_kv_transfer_config; vllm/v1/kv_offload/cpu/spec.py",
)
def kv_offload_exceeds_host_memory(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = offload_on_node(f) if f.role.hardware.get("host_memory_gib") is not None else None
    if found is None or not found.exceeds or found.host_gib is None:
        return []
    from profilekit.capacity.memory import gib  # noqa: PLC0415 - only a role that offloads

    host, engines = found.host_gib, found.engines
    many = f" x {engines} engines (data parallel ranks on the node)" if engines > 1 else ""
    return [
        Hit(
            "kv-offload-exceeds-host-memory",
            f"the KV cache offloaded to CPU memory pins {gib(found.pinned)} GiB on a node ({found.source}{many}), more "
            f"than the {host:g} GiB of host memory [hardware] host_memory_gib declares; allocating it fails or the "
            "node's out-of-memory killer stops the engine",
            [*found.places, *f.loc("hardware", "host_memory_gib")],
            f"set kv_offloading_size to at most {max(int(host * 0.8 / engines), 1)} GiB (leaving the rest of the "
            "host memory to the processes and the page cache), or declare the node's real host_memory_gib",
            role=f.role.name,
        )
    ]
