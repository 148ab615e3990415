"""One vLLM role's capacity on its declared GPU: weights, KV cache memory, tokens and concurrency, in vLLM's words.

Everything here is computed from plain inputs (the config.json as a dict, the role's options by vLLM dest, the
declared GPU); rules/capacity.py and `profilekit capacity` gather them from a composed stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profilekit.capacity.kv import KvLayout, kv_layout
from profilekit.capacity.memory import GIB, Memory, memory
from profilekit.capacity.weights import Weights
from profilekit.errors import Location
from profilekit.hardware import Gpu
from profilekit.records import record

FITS = "fits"
TIGHT = "tight"  # fits only within the reserve's uncertainty: kv-cache-too-small as a warning
KV_REFUSED = "refused"  # one max_model_len request does not fit even with no reserve: kv-cache-too-small
WEIGHTS_EXCEED = "weights"  # the weights alone exceed total x gpu_memory_utilization: weights-exceed-gpu
UNKNOWN = "unknown"  # a part is missing (Plan.missing says which)


@record(frozen=True, slots=True)
class Verdict:
    state: str  # one of the five above
    why: str

    @property
    def refused(self) -> bool:
        return self.state in (KV_REFUSED, WEIGHTS_EXCEED)


@record(frozen=True, slots=True)
class Offload:
    """The KV cache a role offloads to CPU memory, on one node (rules/capacity.py `offload_on_node`)."""

    per_engine: int  # bytes one engine pins
    engines: int  # the role's engines on the node (data parallel ranks)
    source: str  # what sets the buffer
    host_gib: float | None  # [hardware] host_memory_gib, if declared
    places: tuple[Location, ...] = ()

    @property
    def pinned(self) -> int:
        return self.per_engine * self.engines

    @property
    def exceeds(self) -> bool:
        """More than the node's declared host memory (False when none is declared)."""
        return self.host_gib is not None and self.pinned > self.host_gib * GIB


@record(frozen=True, slots=True)
class Plan:
    """What `profilekit capacity` reports for one role; a str in place of a part says why it is missing."""

    role: str
    gpu: Gpu | None
    gpus: int  # GPUs the role's weights are sharded over (TP x PP)
    max_model_len: int | None
    weights: Weights | str
    kv: KvLayout | str
    memory: Memory | str
    # max_num_seqs where vLLM checks a hybrid model's Mamba cache blocks against it (full CUDA graphs on a CUDA GPU
    # of capability 8.0 or newer: `mamba_blocks`); None where it does not
    graph_seqs: int | None = None
    offload: Offload | None = None  # the KV cache offloaded to CPU memory (kv-offload-exceeds-host-memory)

    @property
    def complete(self) -> bool:
        return not any(isinstance(part, str) for part in (self.weights, self.kv, self.memory)) and bool(
            self.max_model_len
        )

    def verdict(self) -> Verdict:
        """What vLLM would make of this plan; the one reading `profilekit capacity` and rules/capacity.py share."""
        if (
            not isinstance(self.weights, str)
            and not isinstance(self.memory, str)
            and self.weights.per_gpu > self.memory.requested
        ):
            return Verdict(WEIGHTS_EXCEED, "the weights alone exceed the memory vLLM may use (weights-exceed-gpu)")
        if not self.complete or isinstance(self.kv, str) or isinstance(self.memory, str) or not self.max_model_len:
            return Verdict(UNKNOWN, "; ".join(self.missing()))
        mem, mml = self.memory, self.max_model_len
        sure = mem.without_reserve  # with kv_cache_memory_bytes (no reserve) that is the figure given
        if sure <= 0 or not self.kv.fits(sure, mml):
            return Verdict(
                KV_REFUSED, "one max_model_len request does not fit even with no activations (kv-cache-too-small)"
            )
        doubt = mem.available - mem.uncertainty
        if doubt <= 0 or not self.kv.fits(doubt, mml):
            return Verdict(
                TIGHT, "fits only if the estimated reserve is smaller than estimated (kv-cache-too-small, a warning)"
            )
        return Verdict(FITS, "one max_model_len request fits, with the reserve's uncertainty to spare")

    def mamba_blocks(self) -> tuple[Verdict, int, int] | None:
        """vLLM's check before it captures full CUDA graphs of a hybrid model (`CompilationConfig.
        resolve_cudagraph_mode_and_sizes`, every release 0.27.0-0.33.0): each decode sequence needs one Mamba cache
        block, so max_num_seqs above the pool's blocks is refused. The verdict (as `verdict`'s states), the blocks
        vLLM would have by the estimate and the blocks it has even if the reserve is at the top of its uncertainty;
        None when the plan has no Mamba layers or never gets that far."""
        kv, mem, max_num_seqs = self.kv, self.memory, self.graph_seqs
        if max_num_seqs is None or isinstance(kv, str) or isinstance(mem, str):
            return None
        if not any(s.kind == "mamba" for s in kv.specs):
            return None
        if self.verdict().state not in (FITS, TIGHT):
            return None  # vLLM stops before: the weights or the KV cache (their own rules say so)
        estimated = kv.num_blocks(max(mem.available, 0))
        safe = kv.num_blocks(max(mem.available - mem.uncertainty, 0))
        if kv.num_blocks(mem.without_reserve) < max_num_seqs:
            verdict = Verdict(KV_REFUSED, "fewer Mamba cache blocks than max_num_seqs even with no reserve")
        elif safe < max_num_seqs:
            verdict = Verdict(TIGHT, "fewer Mamba cache blocks than max_num_seqs unless the reserve is smaller")
        else:
            verdict = Verdict(FITS, "a Mamba cache block for every sequence, with the reserve's uncertainty to spare")
        return verdict, estimated, safe

    def missing(self) -> list[str]:
        """Why a part of the plan is unknown, each reason once."""
        parts = [part for part in (self.weights, self.kv, self.memory) if isinstance(part, str)]
        if not self.max_model_len:
            parts.append("max_model_len is unknown (no config.json, and none written)")
        return list(dict.fromkeys(parts))

    def needed(self) -> int | None:
        """KV cache bytes one request of max_model_len needs on one GPU (vLLM's check)."""
        if isinstance(self.kv, str) or not self.max_model_len:
            return None
        return self.kv.needed_bytes(self.max_model_len)


def plan(
    *,
    role: str,
    gpu: Gpu | None,
    version: str,
    config: Mapping[str, Any] | None,
    serve: Mapping[str, Any],
    weights: Weights | str,
    max_model_len: int | None,
    tokens: int,
    seqs: int,
    mamba_mode: str | None = None,
    graph_seqs: int | None = None,
    offload: Offload | None = None,
) -> Plan:
    """The capacity of one role (see the module's docstring for what each part needs)."""
    tp = _positive(serve.get("tensor_parallel_size"))
    pp = _positive(serve.get("pipeline_parallel_size"))
    kv: KvLayout | str
    if config is None:
        kv = "no config.json for the model: the KV cache's layers, heads and head size are unknown"
    else:
        kv = kv_layout(
            _text(config), version=version, serve=serve, gpu=gpu, mamba_mode=mamba_mode, max_model_len=max_model_len
        )
    mem: Memory | str
    if gpu is None:
        mem = "no GPU declared ([hardware] gpu): its memory is unknown"
    elif isinstance(weights, str):
        mem = "needs the weights"
    else:
        mem = memory(
            total=gpu.memory_bytes,
            serve=serve,
            weights=weights.per_gpu,
            config=config,
            tokens=tokens,
            seqs=seqs,
            gpus=tp * pp,
        )
    return Plan(role, gpu, tp * pp, max_model_len, weights, kv, mem, graph_seqs, offload)


def _text(config: Mapping[str, Any]) -> dict[str, Any]:
    return dict(config)


def _positive(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1
