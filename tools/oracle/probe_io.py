"""What every oracle probe (kv_probe.py, weights_probe.py, worker.py) does before vLLM is imported, and its loop.

Import it first: it keeps the real stdout for the answers (vLLM's logs, and anything else printed, go to stderr)
and makes vLLM pick its CPU platform offline. `cpu_as_gpu_host()` then has that platform take a configuration as a
GPU host does (its `check_and_update_config` a no-op, bfloat16 supported), and `serve(answer)` answers JSON lines.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TextIO

ANSWERS: TextIO = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

# A CPU-only machine: vLLM must pick its CPU platform
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("VLLM_DO_NOT_TRACK", "1")


def cpu_as_gpu_host() -> Any:
    """vLLM's CPU platform, made current (0.27.x detects it only from a "cpu" version string, so it is set before
    any module binds it), taking the configuration as written and bfloat16, float16 and float32 as an Ampere or
    newer GPU does; the platform class."""
    import torch
    import vllm.platforms
    from vllm.platforms import cpu as cpu_platform_module

    platform: Any = cpu_platform_module.CpuPlatform
    vllm.platforms._current_platform = platform()  # type: ignore[attr-defined]
    platform.check_and_update_config = classmethod(lambda cls, vllm_config: None)
    platform.supported_dtypes = property(lambda self: [torch.bfloat16, torch.float16, torch.float32])
    return platform


def serve(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
    """Answer each JSON line of stdin with one JSON line ({"ok": false, "error": "probe failure: ..."} when the
    probe itself fails)."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = answer(json.loads(line))
        except Exception:
            reply = {"ok": False, "error": "probe failure: " + traceback.format_exc()}
        with contextlib.suppress(BrokenPipeError):
            ANSWERS.write(json.dumps(reply) + "\n")
    return 0
