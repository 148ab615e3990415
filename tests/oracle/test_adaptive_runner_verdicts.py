"""Adaptive verification with pipeline parallelism (rules/specvllm.py `speculative-adaptive-engine`).

vLLM checks pipeline parallelism only once the CUDA graphs are full, and the oracle's CPU platform has no static
graph mode (`support_static_graph_mode()` is False, so `VllmConfig.__post_init__` sets `cudagraph_mode` to NONE).
The oracle therefore refuses every adaptive case with the full-graphs message; the test proves that limit (a GPU
host keeps FULL_AND_PIECEWISE and reaches the pipeline check, tests/rules/test_specvllm.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import LLAMA, Case
from tests.oracle.test_parallel_verdicts import _verdicts
from tests.oracle.test_postinit_verdicts import MIMO, MTP

ADAPTIVE = {**MTP, "enable_adaptive_verification": True}
CPU_REFUSAL = (
    "Adaptive verification requires full CUDA graphs. Use cudagraph mode FULL, FULL_DECODE_ONLY, or "
    "FULL_AND_PIECEWISE, or disable adaptive verification."
)

# (case, profilekit's verdict on a GPU host); the oracle answers CPU_REFUSAL for each (0.30.0 on, with an MTP
# method, which keeps Model Runner V2)
LIMITED = [
    Case(
        "adaptive-pp",
        "speculative-adaptive-engine",
        LLAMA,
        {"speculative_config": ADAPTIVE, "pipeline_parallel_size": 2},
        config=MIMO,
        releases=">=0.30.0",
    ),
    Case("adaptive-no-pp", None, LLAMA, {"speculative_config": ADAPTIVE}, config=MIMO, releases=">=0.30.0"),
]


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("version", "case"), applicable(LIMITED), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(LIMITED)]
)
def test_the_cpu_oracle_has_no_full_cuda_graphs(
    oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path
) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    assert predicted == case.expected(version)
    assert actual == "speculative-adaptive-engine"
    assert message.splitlines()[0] == CPU_REFUSAL
