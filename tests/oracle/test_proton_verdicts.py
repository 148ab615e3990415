"""The CPU oracle refuses the Proton profiler before its CUDA graph checks (rules/proton.py).

vLLM asks `current_platform.is_cuda()` first ("The Proton profiler currently supports NVIDIA CUDA only"), so on
the oracle's CPU platform no Proton case reaches the checks profilekit models; the test proves that limit: the
oracle stops there while profilekit gives a GPU host's verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import LLAMA, Case
from tests.oracle.test_parallel_verdicts import _verdicts

PROTON = {"profiler": "proton", "proton_profiler_dir": "/tmp/proton"}
CPU_REFUSAL = "The Proton profiler currently supports NVIDIA CUDA only"

LIMITED = [
    Case("proton-graphs", "proton-cuda-graphs", LLAMA, {"profiler_config": PROTON}, releases=">=0.28.0"),
    Case(
        "proton-pc-sampling",
        "proton-cuda-graphs",
        LLAMA,
        {"profiler_config": {**PROTON, "proton_mode": "pcsampling"}},
        releases=">=0.30.0",
    ),
    Case("proton-eager", None, LLAMA, {"profiler_config": PROTON, "enforce_eager": True}, releases=">=0.28.0"),
]


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("version", "case"), applicable(LIMITED), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(LIMITED)]
)
def test_the_cpu_oracle_refuses_proton_first(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    assert predicted == case.expected(version)
    assert actual == "gpu-platform-unsupported"  # the CPU platform is not CUDA: vLLM's platform check, modelled
    assert message.splitlines()[0] == CPU_REFUSAL
