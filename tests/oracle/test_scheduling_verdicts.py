"""Async scheduling, the speculative token budget and Engram microbatching give vLLM's verdict (rules/scheduling.py).

The machinery of tests/oracle/test_parallel_verdicts.py: profilekit's `vllm_verdict` must equal the oracle's
`create_engine_config()` verdict, and both the verdict the case expects, so no case agrees vacuously. Not here:
async-scheduling-executor (the oracle pins leave out Ray, whose import fails first) and
cudagraph-capture-size-mismatch (`_set_cudagraph_sizes` runs only where static CUDA graphs are supported, which the
oracle's CPU platform says they are not); tests/rules/test_scheduling.py covers both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import LLAMA, Case
from tests.oracle.test_parallel_verdicts import _verdicts

MTP = {"method": "mtp", "num_speculative_tokens": 2}
MIMO = {"architectures": ["MiMoForCausalLM"], "num_nextn_predict_layers": 1}
NGRAM = {"method": "ngram", "num_speculative_tokens": 1, "prompt_lookup_max": 3}
V1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
ENGRAM = {"architectures": ["DeepseekV41ForCausalLM"], "engram_layer_ids": [0]}
BUDGET = "speculative-scheduled-tokens"
PARALLEL_MTP = {**MTP, "num_speculative_tokens": 5, "parallel_drafting": True}


CASES = [
    Case(
        "async-v1-ngram",
        "async-scheduling-v1-runner",
        LLAMA,
        {"async_scheduling": True, "speculative_config": NGRAM},
        env=V1,
        releases=">=0.33.0",
    ),
    Case(
        "async-v1-pipeline",
        "async-scheduling-v1-runner",
        LLAMA,
        {"async_scheduling": True, "pipeline_parallel_size": 2},
        env=V1,
        releases=">=0.33.0",
    ),
    # 0.31.0-0.32.0 refuse it in _validate_v1_model_runner ("pipeline parallelism with async scheduling")
    Case(
        "async-v1-pipeline-early",
        None,
        LLAMA,
        {"async_scheduling": True, "pipeline_parallel_size": 2},
        env=V1,
        releases="<0.31.0",
    ),
    Case("async-v2-ngram", None, LLAMA, {"async_scheduling": True, "speculative_config": NGRAM}, releases=">=0.33.0"),
    Case("v1-ngram-default-async", None, LLAMA, {"speculative_config": NGRAM}, env=V1),
    Case(
        "mtp-budget-2",
        lambda v: BUDGET if v >= "0.33.0" else None,
        LLAMA,
        {"max_num_batched_tokens": 2, "max_num_seqs": 2, "speculative_config": MTP},
        config=MIMO,
    ),
    Case(
        "mtp-budget-3",
        None,
        LLAMA,
        {"max_num_batched_tokens": 3, "max_num_seqs": 2, "speculative_config": MTP},
        config=MIMO,
    ),
    Case(
        "parallel-mtp-budget-4",
        BUDGET,
        LLAMA,
        {"max_num_batched_tokens": 4, "max_num_seqs": 4, "speculative_config": PARALLEL_MTP},
        config=MIMO,
    ),
    Case(
        "parallel-mtp-budget-64",
        None,
        LLAMA,
        {"max_num_batched_tokens": 64, "max_num_seqs": 4, "speculative_config": PARALLEL_MTP},
        config=MIMO,
    ),
    Case(
        "scheduled-tokens-full-budget",
        lambda v: BUDGET if v < "0.28.0" else None,
        LLAMA,
        {
            "max_num_batched_tokens": 64,
            "max_num_seqs": 4,
            "max_num_scheduled_tokens": 64,
            "speculative_config": {**MTP, "num_speculative_tokens": 3, "parallel_drafting": True},
        },
        config=MIMO,
    ),
    Case(
        "scheduled-tokens-zero",
        lambda v: BUDGET if v < "0.32.0" else "invalid-value",  # the field is ge=1 from 0.32.0
        LLAMA,
        {"max_num_scheduled_tokens": 0, "speculative_config": MTP},
        config=MIMO,
    ),
    Case(
        "engram-dbo",
        "engram-microbatching",
        LLAMA,
        {"enable_dbo": True, "enable_expert_parallel": True, "all2all_backend": "deepep_low_latency"},
        config=ENGRAM,
        releases=">=0.30.0",
    ),
    Case(
        "engram-no-layers-dbo",
        "expert-parallel-dense-model",  # without Engram layers the next check (a dense model) refuses it
        LLAMA,
        {"enable_dbo": True, "enable_expert_parallel": True},
        config={**ENGRAM, "engram_layer_ids": []},
        releases=">=0.30.0",
    ),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message
