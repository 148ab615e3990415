"""Option pairs `VllmConfig.__post_init__` refuses give vLLM's verdict (rules/postinit.py).

The machinery of tests/oracle/test_parallel_verdicts.py: profilekit's `vllm_verdict` must equal the oracle's
`create_engine_config()` verdict, and both the verdict the case expects, so no case agrees vacuously.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import LLAMA, Case
from tests.oracle.test_parallel_verdicts import _verdicts

MTP = {"method": "mtp", "num_speculative_tokens": 1}
MIMO = {"architectures": ["MiMoForCausalLM"], "num_nextn_predict_layers": 1}
NGRAM = {"method": "ngram", "num_speculative_tokens": 1}
RULE = "kv-sharing-fast-prefill-eagle"

CASES = [
    Case("fast-prefill-mtp", RULE, LLAMA, {"kv_sharing_fast_prefill": True, "speculative_config": MTP}, config=MIMO),
    Case(
        "fast-prefill-mimo-mtp-alias",
        RULE,
        LLAMA,
        {"kv_sharing_fast_prefill": True, "speculative_config": {**MTP, "method": "mimo_mtp"}},
        config=MIMO,
    ),
    Case(
        "fast-prefill-mtp-eager",
        RULE,
        LLAMA,
        {"kv_sharing_fast_prefill": True, "enforce_eager": True, "speculative_config": MTP},
        config=MIMO,
    ),
    Case("fast-prefill-ngram", None, LLAMA, {"kv_sharing_fast_prefill": True, "speculative_config": NGRAM}),
    Case("mtp-without-fast-prefill", None, LLAMA, {"speculative_config": MTP}, config=MIMO),
    Case(
        "trace-replay-v1",
        "trace-replay-v1",
        LLAMA,
        {"enable_trace_replay": True},
        env={"VLLM_USE_V2_MODEL_RUNNER": "0"},
        releases=">=0.29.0",
    ),
    Case("trace-replay-v2", None, LLAMA, {"enable_trace_replay": True}, releases=">=0.29.0"),
    Case(
        "async-ngram",
        "async-scheduling-speculative",
        LLAMA,
        {"async_scheduling": True, "speculative_config": NGRAM},
        releases="<0.33.0",
    ),
    Case(
        "async-unpadded-mtp",
        "async-scheduling-speculative",
        LLAMA,
        {"async_scheduling": True, "speculative_config": {**MTP, "disable_padded_drafter_batch": True}},
        config=MIMO,
        releases="<0.33.0",
    ),
    Case("async-mtp", None, LLAMA, {"async_scheduling": True, "speculative_config": MTP}, config=MIMO),
    Case("ngram-default-async", None, LLAMA, {"speculative_config": NGRAM}),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message
