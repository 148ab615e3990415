"""Model Runner V1 with a feature only V2 runs (rules/runner.py `model-runner-v1-unsupported`), and adaptive
verification with pipeline parallelism (rules/specvllm.py `speculative-adaptive-engine`).

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
V1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
NGRAM = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2, "prompt_lookup_max": 4}
V1_RULE = "model-runner-v1-unsupported"

# VllmConfig._validate_v1_model_runner (0.29.0 on)
DECIDED = [
    Case(
        "v1-pcp-batch-sharded",
        V1_RULE,
        LLAMA,
        {"prefill_context_parallel_size": 2, "enable_batch_sharded_sampling": True},
        env=V1,
        releases=">=0.29.0",
    ),
    Case("v1-batch-sharded", V1_RULE, LLAMA, {"enable_batch_sharded_sampling": True}, env=V1, releases=">=0.29.0"),
    Case("v1-alone", None, LLAMA, {}, env=V1, releases=">=0.29.0"),
    # n-gram drafting keeps 0.30.0-0.31.0 on V1, which has no adaptive verification
    Case(
        "ngram-adaptive-v1",
        V1_RULE,
        LLAMA,
        {"speculative_config": {**NGRAM, "enable_adaptive_verification": True}},
        releases=">=0.30.0,<0.32.0",
    ),
    Case(
        "v1-pp-async",
        V1_RULE,
        LLAMA,
        {"pipeline_parallel_size": 2, "async_scheduling": True},
        env=V1,
        releases=">=0.31.0,<0.33.0",
    ),
    Case("v1-pp", None, LLAMA, {"pipeline_parallel_size": 2}, env=V1, releases=">=0.31.0"),
]
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
    ("version", "case"), applicable(DECIDED), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(DECIDED)]
)
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message


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
