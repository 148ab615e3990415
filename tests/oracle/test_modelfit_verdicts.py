"""The rules against the model served give vLLM's verdict (rules/modelfit.py, the moonep model checks of
rules/moe_parallel.py): a triggering and an accepted case per rule, on the releases that have it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import KIMI, LLAMA, NEMOTRON, Case
from tests.oracle.test_parallel_verdicts import _verdicts

CASES = [
    # VllmConfig.validate_nvfp4_kv_cache_with_mla: Kimi Linear's full-attention layers are MLA
    Case("nvfp4-mla", "nvfp4-kv-cache-mla", KIMI, {"kv_cache_dtype": "nvfp4"}),
    Case("nvfp4-mla-disabled", None, KIMI, {"kv_cache_dtype": "nvfp4"}, env={"VLLM_MLA_DISABLE": "1"}),
    Case("nvfp4-not-mla", None, LLAMA, {"kv_cache_dtype": "nvfp4"}),
    Case("fp8-mla", None, KIMI, {"kv_cache_dtype": "fp8"}),
    Case(
        "nvfp4-4over6-mla",
        "nvfp4-kv-cache-mla",
        KIMI,
        {"kv_cache_dtype": "nvfp4_4over6"},
        releases=">=0.30.0",
    ),
    # ParallelConfig.__post_init__: VLLM_DP_SIZE without a data-parallel size in the options
    Case("offline-dp-dense", "offline-data-parallel-dense", LLAMA, {}, env={"VLLM_DP_SIZE": "2"}),
    Case("offline-dp-moe", None, NEMOTRON, {}, env={"VLLM_DP_SIZE": "2"}),
    Case("offline-dp-one", None, LLAMA, {}, env={"VLLM_DP_SIZE": "1"}),
    # VllmConfig.__post_init__: moonep needs an unquantized BF16 model
    Case(
        "moonep-fp16", "moonep-all2all", LLAMA, {"all2all_backend": "moonep", "dtype": "float16"}, releases=">=0.31.0"
    ),
    Case(
        "moonep-fp16-checkpoint",
        "moonep-all2all",
        LLAMA,
        {"all2all_backend": "moonep"},
        config={"torch_dtype": "float16"},
        releases=">=0.31.0",
    ),
    Case("moonep-bf16", None, LLAMA, {"all2all_backend": "moonep"}, releases=">=0.31.0"),
    Case(
        "moonep-float32-checkpoint",
        None,
        LLAMA,
        {"all2all_backend": "moonep"},
        config={"torch_dtype": "float32"},
        releases=">=0.31.0",
    ),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message
