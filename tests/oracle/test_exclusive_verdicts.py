"""A top-level flag and the config key it feeds, both written, give vLLM's verdict (rules/exclusive.py).

Each case's expected verdict is written down, and profilekit's (`vllm_verdict`) and the oracle's (vLLM's message
mapped by tools/verdict_common.py `vllm_rule`) must both equal it, so a case cannot agree vacuously.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.conftest import OraclePool, applicable, verdicts

LLAMA = "LlamaForCausalLM"
RULE = "flag-and-config-key"


@dataclass(frozen=True)
class Case:
    id: str
    expect: str | None
    serve: dict[str, Any]
    releases: str = ""


CASES = [
    Case("attention-twice", RULE, {"attention_backend": "FLASH_ATTN", "attention_config": {"backend": "TRITON_ATTN"}}),
    Case("attention-once", None, {"attention_backend": "TRITON_ATTN", "attention_config": {"flash_attn_version": 3}}),
    Case(
        "autotune-twice-false",
        RULE,
        {"enable_flashinfer_autotune": False, "kernel_config": {"enable_flashinfer_autotune": False}},
    ),
    Case("autotune-once", None, {"kernel_config": {"enable_flashinfer_autotune": False}}),
    Case(
        "ir-op-twice",
        RULE,
        {"ir_op_priority": {"rms_norm": ["native"]}, "kernel_config": {"ir_op_priority": {"rms_norm": "native"}}},
    ),
    Case(
        "ir-op-other-ops",
        None,
        {
            "ir_op_priority": {"rms_norm": ["native"]},
            "kernel_config": {"ir_op_priority": {"fused_add_rms_norm": ["native"]}},
        },
    ),
    Case(
        "capture-sizes-twice",
        RULE,
        {"cudagraph_capture_sizes": [1, 2], "compilation_config": {"cudagraph_capture_sizes": [1, 2]}},
    ),
    Case(
        "max-capture-size-twice",
        RULE,
        {"max_cudagraph_capture_size": 4, "compilation_config": {"max_cudagraph_capture_size": 4}},
    ),
    Case(
        "capture-split",
        None,
        {"cudagraph_capture_sizes": [1, 2], "compilation_config": {"max_cudagraph_capture_size": 2}},
    ),
    # SchedulerConfig is built (and refuses a negative max_num_seqs) before the flags are copied
    Case(
        "scheduler-first",
        "invalid-value",
        {"max_num_seqs": -1, "attention_backend": "FLASH_ATTN", "attention_config": {"backend": "FLASH_ATTN"}},
    ),
    Case(
        "attention-before-capture-sizes",
        RULE,
        {
            "attention_backend": "FLASH_ATTN",
            "attention_config": {"backend": "FLASH_ATTN"},
            "max_cudagraph_capture_size": 4,
            "compilation_config": {"max_cudagraph_capture_size": 4},
        },
    ),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    oracle = oracle_pool.get(version)
    predicted, actual, message = verdicts(oracle, version, tmp_path, arch=LLAMA, serve=case.serve)
    assert (predicted, actual) == (case.expect, case.expect), message
