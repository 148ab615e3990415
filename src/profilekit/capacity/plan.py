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
from profilekit.hardware import Gpu
from profilekit.records import record


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

    @property
    def complete(self) -> bool:
        return not any(isinstance(part, str) for part in (self.weights, self.kv, self.memory)) and bool(
            self.max_model_len
        )

    def needed(self) -> int | None:
        """KV cache bytes one request of max_model_len needs on one GPU (vLLM's check)."""
        if isinstance(self.kv, str) or not self.max_model_len:
            return None
        return self.kv.needed_bytes(self.max_model_len)


def gib(value: int | float) -> str:
    """Bytes as vLLM prints GiB (`format_gib`: two decimals)."""
    return f"{value / GIB:.2f}"


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
) -> Plan:
    """The capacity of one role (see the module's docstring for what each part needs)."""
    tp = _positive(serve.get("tensor_parallel_size"))
    pp = _positive(serve.get("pipeline_parallel_size"))
    kv: KvLayout | str
    if config is None:
        kv = "no config.json for the model: the KV cache's layers, heads and head size are unknown"
    else:
        kv = kv_layout(_text(config), version=version, serve=serve, gpu=gpu)
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
    return Plan(role, gpu, tp * pp, max_model_len, weights, kv, mem)


def _text(config: Mapping[str, Any]) -> dict[str, Any]:
    return dict(config)


def _positive(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1
