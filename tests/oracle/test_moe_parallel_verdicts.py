"""Experts, Engram tables and P/D auxiliary outputs against the parallel launch give vLLM's verdict (rules/moe_parallel.py,
rules/configs.py).

The machinery of tests/oracle/test_parallel_verdicts.py: profilekit's `vllm_verdict` must equal the oracle's
`create_engine_config()` verdict, and both the verdict the case expects, so no case agrees vacuously.

The Engram cases serve the dummy Llama config.json renamed to `DeepseekV41ForCausalLM` with `engram_layer_ids`, which
is all `EngramConfig.verify_model_config` reads; 0.30.0 and 0.31.0 also ask for a CUDA platform there, which the
oracle is not, so those releases' cases are left to the unit tests. Two rules of rules/moe_parallel.py have no case
here because the oracle cannot show them: `fault-tolerance-api-servers` (the API server count is set by
`vllm serve`'s launcher, vllm/entrypoints/cli/serve.py, not by `create_engine_config`) and
`object-storage-load-format` (the oracle serves a local folder, never an s3:// URL).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import LLAMA, NEMOTRON, Case
from tests.oracle.test_parallel_verdicts import _verdicts

EP = {"enable_expert_parallel": True, "tensor_parallel_size": 2}
ENGRAM_MODEL = {"architectures": ["DeepseekV41ForCausalLM"], "engram_layer_ids": [0]}
ELASTIC = {
    "enable_elastic_ep": True,
    "data_parallel_size": 2,
    "enable_expert_parallel": True,
    "enable_eplb": True,
    "eplb_config": {"use_async": False},  # async EPLB with elastic EP needs the NIXL package first
}
NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
MULTI = {
    "kv_connector": "MultiConnector",
    "kv_role": "kv_both",
    "kv_connector_extra_config": {
        "connectors": [
            {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"},
            {"kv_connector": "MooncakeConnector", "kv_role": "kv_both"},
        ]
    },
}
FLASHINFER_EP = "flashinfer_moe_ep_cutedsl"

CASES = [
    Case(
        "moonep-eplb",
        "moonep-all2all",
        NEMOTRON,
        {"all2all_backend": "moonep", "enable_eplb": True, **EP},
        releases=">=0.31.0",
    ),
    Case(
        "moonep-round-robin",
        "moonep-all2all",
        NEMOTRON,
        {"all2all_backend": "moonep", "expert_placement_strategy": "round_robin", **EP},
        releases=">=0.31.0",
    ),
    Case("moonep-linear", None, NEMOTRON, {"all2all_backend": "moonep", **EP}, releases=">=0.31.0"),
    Case(
        "flashinfer-ep-deepep",
        "moe-backend-all2all",
        NEMOTRON,
        {"moe_backend": FLASHINFER_EP, "all2all_backend": "deepep_low_latency", **EP},
        releases=">=0.32.0",
    ),
    Case("flashinfer-ep-default-a2a", None, NEMOTRON, {"moe_backend": FLASHINFER_EP, **EP}, releases=">=0.32.0"),
    Case(
        "engram-shared-dp1",
        "engram-parallel",
        LLAMA,
        {"engram_config": {"dp_shared_memory": True}},
        config=ENGRAM_MODEL,
        releases=">=0.32.0",
    ),
    Case(
        "engram-shared-dp2",
        None,
        LLAMA,
        {"engram_config": {"dp_shared_memory": True}, "data_parallel_size": 2},
        config=ENGRAM_MODEL,
        releases=">=0.32.0",
    ),
    Case(
        "engram-shared-elastic",
        "engram-parallel",
        LLAMA,
        {"engram_config": {"dp_shared_memory": True}, **ELASTIC},
        config=ENGRAM_MODEL,
        releases=">=0.32.0",
    ),
    Case(
        "engram-across-dp-elastic",
        "engram-parallel",
        LLAMA,
        {"engram_config": {"embedding_across_dp": True}, **ELASTIC},
        config=ENGRAM_MODEL,
        releases=">=0.32.0",
    ),
    Case(
        "routed-experts-nixl",
        "aux-output-compatibility",
        NEMOTRON,
        {"enable_return_routed_experts": True, "kv_transfer_config": NIXL},
        releases=">=0.31.0",
    ),
    Case(
        "routed-experts-multi-mooncake",
        "aux-output-compatibility",
        NEMOTRON,
        {"enable_return_routed_experts": True, "kv_transfer_config": MULTI},
        releases=">=0.31.0",
    ),
    Case("routed-experts-no-connector", None, NEMOTRON, {"enable_return_routed_experts": True}, releases=">=0.31.0"),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message
