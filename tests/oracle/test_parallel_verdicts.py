"""Parallelism, data parallelism, experts, microbatching, NUMA and offloading: profilekit's verdict is vLLM's.

The same machinery as tests/oracle/test_crossfield.py (one layer with `[model] config` pointing at the
dummy config.json the oracle serves): profilekit's `vllm_verdict` must equal the oracle's
`create_engine_config()` verdict, and both the verdict the case expects, so no case agrees vacuously.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from profilekit.compose.index import LayerIndex
from profilekit.compose.merge import compose
from profilekit.rules import vllm_verdict
from profilekit.vllm.argv import render_argv
from profilekit.vllm.catalogue import load_catalogue
from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.oracle_client import OracleWorker
from tests.oracle.test_crossfield import KIMI, LLAMA, NEMOTRON, Case, _before, _config, _layer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from verdict_corpus import rule_for_message

DEEPEP = {"all2all_backend": "deepep_low_latency"}
ELASTIC = {
    "enable_elastic_ep": True,
    "enable_eplb": True,
    "enable_expert_parallel": True,
    "data_parallel_size": 2,
    "eplb_config": {"use_async": False},  # 0.33.0: async EPLB with elastic EP needs the NIXL package
}

CASES = [
    # VllmConfig.__post_init__: microbatching needs a DeepEP or NIXL-EP all2all backend
    Case("dbo-default-backend", "microbatching-all2all-backend", LLAMA, {"enable_dbo": True}),
    Case(
        "dbo-removed-backend", "microbatching-all2all-backend", LLAMA, {"enable_dbo": True, "all2all_backend": "pplx"}
    ),
    Case("ubatch-deepep", None, LLAMA, {"ubatch_size": 2, **DEEPEP}),
    Case("ubatch-one", None, LLAMA, {"ubatch_size": 1}),
    # ParallelConfig._verify_args (0.30.0 and later): a token per microbatch
    Case(
        "ubatch-above-thresholds",
        lambda v: None if _before(v, "0.30.0") else "microbatching-thresholds",
        LLAMA,
        {"ubatch_size": 64, **DEEPEP},
    ),
    Case("ubatch-thresholds-raised", None, LLAMA, {"ubatch_size": 64, "dbo_decode_token_threshold": 64, **DEEPEP}),
    # ParallelConfig's field validators run before its model validators (numa-bind)
    # ParallelConfig.__post_init__: nnodes > 1 needs the mp, uni or external_launcher executor
    Case(
        "nnodes-ray",
        "nnodes-executor-backend",
        LLAMA,
        {"nnodes": 2, "tensor_parallel_size": 2, "distributed_executor_backend": "ray"},
    ),
    Case(
        "nnodes-custom-executor",
        "nnodes-executor-backend",
        LLAMA,
        {"nnodes": 2, "tensor_parallel_size": 2, "distributed_executor_backend": "my.module.Executor"},
    ),
    Case("nnodes-mp", None, LLAMA, {"nnodes": 2, "tensor_parallel_size": 2, "distributed_executor_backend": "mp"}),
    Case("nnodes-default-executor", None, LLAMA, {"nnodes": 2, "tensor_parallel_size": 2}),
    Case("numa-cpus-syntax", "invalid-value", LLAMA, {"numa_bind_cpus": ["bogus"]}),
    Case("numa-cpus-descending", "invalid-value", LLAMA, {"numa_bind": True, "numa_bind_cpus": ["3-1"]}),
    Case("numa-nodes-negative", "invalid-value", LLAMA, {"numa_bind_nodes": [-1]}),
    Case("numa-cpus-ok", None, LLAMA, {"numa_bind": True, "numa_bind_cpus": ["0-3", "0,2,4-7"]}),
    # the data-parallel values the launch block passes to ParallelConfig
    Case("dp-rank-negative", "invalid-value", LLAMA, {"data_parallel_rank": -1}),
    Case("dp-local-negative", "invalid-value", LLAMA, {"data_parallel_size_local": -1}),
    Case(
        "dp-rpc-port-zero",
        lambda v: None if _before(v, "0.28.0") else "invalid-value",
        LLAMA,
        {"data_parallel_rpc_port": 0},
    ),
    Case("dp-rpc-port-ok", None, LLAMA, {"data_parallel_rpc_port": 65535}),
    # OffloadConfig.validate_offload_config
    Case("offload-prefetch-empty-group", "offload-prefetch-group", LLAMA, {"offload_backend": "prefetch"}),
    Case(
        "offload-prefetch-no-step",
        "offload-prefetch-group",
        LLAMA,
        {"offload_group_size": 2, "offload_prefetch_step": 0},
    ),
    Case("offload-prefetch-ok", None, LLAMA, {"offload_backend": "prefetch", "offload_group_size": 2}),
    # EPLB, judged as a CUDA host judges it (tools/oracle/worker.py judge_as_gpu_host)
    Case("eplb-without-ep", "expert-parallel-load-balancing", KIMI, {"enable_eplb": True}),
    Case(
        "eplb-without-parallelism",
        "expert-parallel-load-balancing",
        KIMI,
        {"enable_eplb": True, "enable_expert_parallel": True},
    ),
    Case("eplb-with-tp", None, KIMI, {"enable_eplb": True, "enable_expert_parallel": True, "tensor_parallel_size": 2}),
    Case("eplb-nccl-async", "eplb-async-communicator", KIMI, {"eplb_config": {"communicator": "pynccl"}}),
    Case("eplb-nccl-sync", None, KIMI, {"eplb_config": {"communicator": "pynccl", "use_async": False}}),
    Case(
        "elastic-max-dp-below-dp",
        "elastic-expert-parallel",
        KIMI,
        {**ELASTIC, "elastic_ep_max_dp_size": 1},
        releases=">=0.30.0",  # the option is new in 0.30.0
    ),
    Case("elastic-max-dp-ok", None, KIMI, {**ELASTIC, "elastic_ep_max_dp_size": 4}, releases=">=0.30.0"),
    # Nemotron-H is a mixture of experts as vLLM reads its config (transformers' n_routed_experts = 8)
    Case("ep-nemotron-h", None, NEMOTRON, {"enable_expert_parallel": True}),
    Case(
        "ep-nemotron-h-no-experts",
        "expert-parallel-dense-model",
        NEMOTRON,
        {"enable_expert_parallel": True},
        config={"n_routed_experts": 0},
    ),
    # Executor.get_class
    Case("executor-bogus", "invalid-value", LLAMA, {"distributed_executor_backend": "bogus"}),
    Case("executor-uni", None, LLAMA, {"distributed_executor_backend": "uni"}),
]


def _verdicts(case: Case, version: str, oracle: OracleWorker, root: Path) -> tuple[str | None, str | None, str]:
    """(profilekit's verdict, vLLM's verdict, vLLM's message); vLLM's message includes argparse's detail (stderr)
    and pydantic's full text, where a JSON-valued option's validator (EPLBConfig) says what it refuses."""
    (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
    (root / "profiles").mkdir()
    (root / "profiles" / "s.toml").write_text(_layer(case), encoding="utf-8")
    config = _config(case)
    (root / "models" / "dummy").mkdir(parents=True)
    (root / "models" / "dummy" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    catalogue = load_catalogue(version)
    stack = compose(LayerIndex(root, catalogue), "s")
    predicted = vllm_verdict(stack, "serve", version=version, catalogue=catalogue, root=root)
    answer = oracle.validate(render_argv(stack.roles["serve"].serve, catalogue), env=dict(case.env), config_json=config)
    assert not answer.get("undecidable"), answer
    message = "\n".join(str(answer.get(k, "")) for k in ("error", "stderr", "raw_error"))
    actual = None if answer.get("ok") else (rule_for_message(message) or f"unmapped: {message[:300]}")
    return (None if predicted.accepted else predicted.rule), actual, message


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message


def test_every_rule_of_these_families_has_a_triggering_and_an_accepted_case() -> None:
    from profilekit.rules import RULES

    triggered = {c.expected(v) for c in CASES for v in ("0.27.0", "0.31.0", "0.33.0")}
    new = {
        "microbatching-all2all-backend",
        "microbatching-thresholds",
        "offload-prefetch-group",
        "expert-parallel-load-balancing",
        "eplb-async-communicator",
        "expert-parallel-dense-model",
        "elastic-expert-parallel",
        "nnodes-executor-backend",
    }
    assert new <= set(RULES)
    assert triggered == {*new, "invalid-value", None}
