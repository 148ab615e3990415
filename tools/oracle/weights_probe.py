"""The weights one vLLM release allocates for a model, for profilekit's weight oracle (tests/oracle/test_weights_vllm.py).

Run with an oracle environment's python and PYTHONPATH (`build_env.OracleEnv.worker_environ()`); JSON lines in on
stdin, one answer a line on stdout (vLLM's logs go to stderr). A request:

    {"config": {config.json}, "serve": {dest: value}}

For each, the probe builds vLLM's `VllmConfig` from `EngineArgs(**serve)` on the CPU (the CPU platform's
`check_and_update_config` replaced by a no-op, bfloat16 supported, as on a GPU host), a one-rank distributed
environment, and then the model class the registry resolves, `cls(vllm_config=..., prefix="")`, under
`torch.device("meta")` with the model's dtype as the default: every parameter vLLM would allocate on the GPU, with
its shape and dtype, and no memory. The answer:

    {"ok": true, "params": N, "bytes": B}    (B: the sum of numel x element size, what "Model loading took" counts)

or {"ok": false, "error": "..."}. Tensor parallelism 1 only: the other ranks' shards are profilekit's arithmetic.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from probe_io import cpu_as_gpu_host, serve

cpu_as_gpu_host()

import torch  # noqa: E402
from vllm.config import set_current_vllm_config  # noqa: E402
from vllm.distributed import (  # noqa: E402
    destroy_model_parallel,
    init_distributed_environment,
    initialize_model_parallel,
)
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.model_executor.models import ModelRegistry  # noqa: E402

_STATE = {"distributed": False}


def _one_rank(vllm_config: Any) -> None:
    """A one-rank process group, as a worker of tensor_parallel_size 1 has; its model-parallel groups made anew for
    each model (`initialize_model_parallel` creates the expert-parallel group only for a mixture of experts)."""
    with set_current_vllm_config(vllm_config):
        if not _STATE["distributed"]:
            init_distributed_environment(
                world_size=1, rank=0, local_rank=0, distributed_init_method="tcp://127.0.0.1:29561", backend="gloo"
            )
            _STATE["distributed"] = True
        else:
            destroy_model_parallel()
        initialize_model_parallel(1, 1)


class _NoKernels:
    """`torch.ops._C` of a vLLM with no compiled kernels (this CPU copy): layers of 0.27.0-0.30.0 take a handle to
    their kernel when built (`SiluAndMul.__init__`: `torch.ops._C.silu_and_mul`); nothing here runs one, so a
    handle that is never called lets them be built. Parameters are allocated as on any platform."""

    def __getattr__(self, name: str) -> Any:
        def never_called(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"the weights probe runs no kernel (torch.ops._C.{name})")

        return never_called


@contextlib.contextmanager
def _kernel_handles() -> Iterator[None]:
    """While the model is built: `_NoKernels` where this copy has no compiled `torch.ops._C`."""
    try:
        torch.ops._C.silu_and_mul  # noqa: B018 - a compiled vLLM has it
        yield
        return
    except (AttributeError, RuntimeError):
        pass
    saved = torch.ops.__dict__.get("_C")
    torch.ops.__dict__["_C"] = _NoKernels()
    try:
        yield
    finally:
        if saved is None:
            torch.ops.__dict__.pop("_C", None)
        else:
            torch.ops.__dict__["_C"] = saved


def answer(request: dict[str, Any]) -> dict[str, Any]:
    model_dir = tempfile.mkdtemp(prefix="profilekit-weights-probe-")
    try:
        with open(os.path.join(model_dir, "config.json"), "w") as handle:
            json.dump(request["config"], handle)
        try:
            args = EngineArgs(model=model_dir, skip_tokenizer_init=True, **(request.get("serve") or {}))
            vllm_config = args.create_engine_config()
        except Exception as exc:  # vLLM refuses the case itself
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        _one_rank(vllm_config)
        mc = vllm_config.model_config
        model_cls, _ = ModelRegistry.resolve_model_cls(mc.architecture, model_config=mc)
        previous = torch.get_default_dtype()
        try:
            torch.set_default_dtype(mc.dtype)
            with set_current_vllm_config(vllm_config), torch.device("meta"), _kernel_handles():
                model = model_cls(vllm_config=vllm_config, prefix="")
        finally:
            torch.set_default_dtype(previous)
        params = list(model.parameters())
        return {
            "ok": True,
            "params": sum(p.numel() for p in params),
            "bytes": sum(p.numel() * p.element_size() for p in params),
        }
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(serve(answer))
