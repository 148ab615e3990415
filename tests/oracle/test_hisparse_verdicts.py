"""HiSparse gives vLLM's verdict where the CPU oracle can judge it (rules/hisparse.py).

vLLM refuses HiSparse off NVIDIA CUDA at the top of its HiSparse block ("HiSparse currently requires NVIDIA
CUDA."), before the checks profilekit models there; only 0.33.0 asks for the model runner (and so refuses
VLLM_USE_V2_MODEL_RUNNER=0) before that block. So the oracle decides the runner check on 0.33.0, and for every
other case the test proves the limit: the oracle stops at the CUDA check while profilekit gives a GPU host's verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import LLAMA, Case
from tests.oracle.test_parallel_verdicts import _verdicts

EXPLICIT = {"attention_config": {"hisparse_config": {}}}
CONNECTOR = {"kv_transfer_config": {"kv_connector": "HiSparseConnector", "kv_role": "kv_both"}}
DSA = {"index_topk": 2048}
V1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
CPU_REFUSAL = "HiSparse currently requires NVIDIA CUDA."

DECIDED = [
    Case("hisparse-v1", "hisparse-model-runner-v1", LLAMA, EXPLICIT, env=V1, config=DSA, releases=">=0.33.0"),
    # without HiSparse, Model Runner V1 is accepted
    Case("v1-without-hisparse", None, LLAMA, {}, env=V1, config=DSA, releases=">=0.30.0"),
]

# (case, profilekit's verdict on a GPU host); the oracle answers CPU_REFUSAL for each
LIMITED = [
    Case("hisparse-v1-early", "hisparse-model-runner-v1", LLAMA, EXPLICIT, env=V1, config=DSA, releases="<0.33.0"),
    Case("connector-v1", "hisparse-model-runner-v1", LLAMA, CONNECTOR, env=V1, config=DSA),
    Case("hisparse-pp", "hisparse-unsupported", LLAMA, {**EXPLICIT, "pipeline_parallel_size": 2}, config=DSA),
    Case(
        "hisparse-dcp",
        "hisparse-unsupported",
        LLAMA,
        {**CONNECTOR, "tensor_parallel_size": 4, "decode_context_parallel_size": 2},
        config=DSA,
    ),
    Case(
        "hisparse-full-graphs",
        "hisparse-unsupported",
        LLAMA,
        {**EXPLICIT, "compilation_config": {"cudagraph_mode": "FULL"}},
        config=DSA,
        releases=">=0.32.0",
    ),
    Case(
        "hisparse-no-reserve",
        "hisparse-unsupported",
        LLAMA,
        {**EXPLICIT, "scheduler_reserve_full_isl": False},
        config=DSA,
        releases=">=0.31.0",
    ),
    Case(
        "hisparse-no-hma",
        "hisparse-hybrid-kv-cache-manager",
        LLAMA,
        {**EXPLICIT, "disable_hybrid_kv_cache_manager": True},
        config=DSA,
    ),
    Case("hisparse-alone", None, LLAMA, EXPLICIT, config=DSA),
    # the last check of the block: a model without index_topk (not a DSA model)
    Case("hisparse-not-dsa", "hisparse-unsupported", LLAMA, EXPLICIT),
    Case("connector-not-dsa", "hisparse-unsupported", LLAMA, CONNECTOR),
]


def _ids(cases: list[Case]) -> list[str]:
    return [f"vllm-{v}-{c.id}" for v, c in applicable(cases)]


def _from_030(cases: list[Case]) -> list[Case]:
    """HiSparse exists from 0.30.0 on."""
    return [
        Case(
            c.id,
            c.expect,
            c.arch,
            c.serve,
            env=c.env,
            config=c.config,
            releases=",".join(filter(None, [">=0.30.0", c.releases])),
        )
        for c in cases
    ]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(DECIDED), ids=_ids(DECIDED))
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(_from_030(LIMITED)), ids=_ids(_from_030(LIMITED)))
def test_the_cpu_oracle_refuses_hisparse_first(
    oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path
) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    assert predicted == case.expected(version)
    assert actual == "gpu-platform-unsupported"  # the CPU platform is not CUDA: vLLM's platform check, modelled
    assert message.splitlines()[0] == CPU_REFUSAL
