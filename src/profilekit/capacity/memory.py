"""The memory vLLM leaves for the KV cache on one GPU: an ESTIMATE, with its formula and inputs (docs/CAPACITY.md).

vLLM (vllm/v1/worker/gpu_worker.py `determine_available_memory`, every release 0.27.0-0.33.0) asks for
`total memory x gpu_memory_utilization`, loads the weights, runs one forward pass of `max_num_batched_tokens`
tokens and one sampler pass of `max_num_seqs` sequences, and gives the KV cache what is left after the weights,
the pass's peak of PyTorch memory, the memory that grew outside PyTorch since its start-up snapshot, and the CUDA
graphs' estimated memory (`profile_cudagraph_memory`, taken by default: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1);
`--kv-cache-memory-bytes` replaces all of that with a figure of its own. The snapshot is taken after
`init_worker_distributed_environment` ("This ensures NCCL buffers are allocated before we measure available
memory"; from 0.33.0 after creating the cuBLAS handles too), so NCCL's buffers are not taken from the KV cache.
Nothing is profiled here, so the reserve between the weights and the KV cache is estimated:

    activations = max_num_batched_tokens x (4 x hidden + 3 x intermediate / TP) x 2 bytes
                + max_num_seqs x vocabulary x 4 bytes x 2            (the sampler's float32 logits, twice)
    outside PyTorch = 1.0 GiB, whatever the GPU count (kernels loaded and buffers allocated in the profile pass)
    CUDA graphs = 0.5 GiB, none with enforce_eager

and its uncertainty is taken as half of it plus 0.5 GiB: a verdict that turns on the reserve is a warning, one that
holds without any reserve an error. Against published start-up logs (docs/CAPACITY-LOGS.md, older releases): the
estimate lands low by 0.8-1.6 GiB on four of five, whose releases took no CUDA graphs from the KV cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profilekit.records import record
from profilekit.vllm.modelshape import ModelShape, as_int

GIB = 1 << 30
NON_TORCH = GIB  # one figure for any GPU count: NCCL is set up before vLLM's snapshot (see above)
CUDA_GRAPHS = GIB // 2
# a sanity bound, not vLLM's: the largest published models have a few hundred layers, and the layout and the weight
# count hold one entry per layer (a junk num_hidden_layers of 10**9 would otherwise take gigabytes)
MAX_LAYERS = 100_000
DEFAULT_UTILIZATION = 0.9  # CacheConfig.gpu_memory_utilization


def gib(value: float) -> str:
    """Bytes as vLLM prints GiB (`format_gib`: two decimals)."""
    return f"{value / GIB:.2f}"


@record(frozen=True, slots=True)
class Memory:
    """One GPU's memory as vLLM divides it, in bytes."""

    requested: int  # total x gpu_memory_utilization
    weights: int
    reserve: int  # activations + outside PyTorch + CUDA graphs (an estimate; 0 when kv_cache_memory_bytes is set)
    uncertainty: int  # how far the reserve may be off
    exact: bool  # kv_cache_memory_bytes: vLLM takes the figure as given, nothing is estimated
    inputs: tuple[str, ...]

    @property
    def available(self) -> int:
        """The KV cache memory: vLLM's "Available KV cache memory" (estimated unless exact)."""
        return self.requested - self.weights - self.reserve

    @property
    def without_reserve(self) -> int:
        """The most the KV cache could get: no activations, nothing outside PyTorch (with kv_cache_memory_bytes,
        where nothing is reserved, exactly `available`)."""
        return self.requested - self.weights


def activations(config: Mapping[str, Any], *, tokens: int, seqs: int, tp: int) -> int | None:
    """The profile pass's peak of activations (the formula above); None without the config's sizes."""
    shape = ModelShape.of(dict(config)).text
    hidden, vocab = as_int(shape.get("hidden_size")), as_int(shape.get("vocab_size"))
    inter = as_int(shape.get("moe_intermediate_size")) or as_int(shape.get("intermediate_size"))
    if hidden is None or vocab is None or inter is None:
        return None
    return tokens * (4 * hidden + 3 * inter // tp) * 2 + seqs * vocab * 4 * 2


def memory(
    *,
    total: int,
    serve: Mapping[str, Any],
    weights: int,
    config: Mapping[str, Any] | None,
    tokens: int,
    seqs: int,
    gpus: int,
) -> Memory:
    """The KV cache memory of one GPU of `total` bytes holding `weights` bytes of weights."""
    utilization = serve.get("gpu_memory_utilization", DEFAULT_UTILIZATION)
    utilization = utilization if isinstance(utilization, (int, float)) and not isinstance(utilization, bool) else 0.9
    requested = int(total * utilization)
    given = as_int(serve.get("kv_cache_memory_bytes"))
    shown = f"gpu_memory_utilization {utilization} of {total / GIB:.1f} GiB: {requested / GIB:.2f} GiB requested"
    if given is not None:
        exact = (shown, f"kv_cache_memory_bytes {given}: the KV cache gets exactly that (no profiling)")
        return Memory(weights + given, weights, 0, 0, True, exact)
    tp = as_int(serve.get("tensor_parallel_size")) or 1
    active = activations(config, tokens=tokens, seqs=seqs, tp=tp) if config is not None else None
    guessed = active is None
    active = GIB if active is None else active
    outside = NON_TORCH
    graphs = 0 if serve.get("enforce_eager") is True else CUDA_GRAPHS
    reserve = active + outside + graphs
    inputs = (
        shown,
        (
            "activations: 1.00 GiB (the config lacks hidden_size, intermediate_size or vocab_size; a guess)"
            if guessed
            else f"activations {active / GIB:.2f} GiB: {tokens} batched tokens, {seqs} sequences (estimated)"
        ),
        f"outside PyTorch {outside / GIB:.2f} GiB (estimated{'; NCCL is set up before vLLM measures' if gpus > 1 else ''})",
        "CUDA graphs: none (enforce_eager)" if not graphs else f"CUDA graphs {graphs / GIB:.2f} GiB (estimated)",
    )
    return Memory(requested, weights, reserve, reserve // 2 + GIB // 2, False, inputs)
