"""Microbatching, the values ParallelConfig validates, prefetch offloading and the EPLB communicator.

rules/microbatch.py, the field checks of rules/parallel.py (`numa_bind_*`) and rules/dataparallel.py (the
rewritten data-parallel options), rules/cache.py `offload-prefetch-group`, rules/experts.py
`eplb-async-communicator`; whole messages, per release where the wording or the check differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from profilekit.rules import vllm_verdict
from profilekit.session import Session
from tests.conftest import MakeRepo
from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least

KIMI = "KimiLinearForCausalLM"
NEMOTRON = "NemotronHForCausalLM"


def _verdict(make_repo: MakeRepo, version: str, arch: str = "LlamaForCausalLM", **serve: Any) -> str | None:
    root: Path = make_repo(files(arch, **serve), config=f'[vllm]\nversion = "{version}"\n')
    session = Session.open(repo=root, vllm_version=None)
    verdict = vllm_verdict(session.stack("s"), "serve", version=version, catalogue=session.catalogue, root=root)
    return None if verdict.accepted else verdict.rule


# ---- microbatching -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_dual_batch_overlap_needs_a_deepep_or_nixl_backend(check: Check, version: str) -> None:
    found = check(files(enable_dbo=True), version=version, rule="microbatching-all2all-backend")
    if at_least(version, "0.33.0"):
        said = (
            "Microbatching currently only supports the deepep_low_latency, deepep_high_throughput, nixl_ep all2all "
            "backends on this platform. allgather_reducescatter is not supported. To fix use one of "
            "--all2all-backend=deepep_low_latency, --all2all-backend=deepep_high_throughput, "
            "--all2all-backend=nixl_ep and install the matching kernels."
        )
    else:
        said = (
            "Microbatching currently only supports the deepep_low_latency, deepep_high_throughput, and nixl_ep "
            "all2all backends. allgather_reducescatter is not supported. To fix use "
            "--all2all-backend=deepep_low_latency, --all2all-backend=deepep_high_throughput, or "
            "--all2all-backend=nixl_ep and install the matching kernels."
        )
    assert messages(found) == [
        refuses(version, "enable_dbo = true with the default 'allgather_reducescatter' all2all backend", said)
    ]
    assert found[0].fix == (
        "set all2all_backend to one of deepep_low_latency, deepep_high_throughput, nixl_ep (and install its "
        "kernels), or turn microbatching off (enable_dbo = false, ubatch_size at most 1)"
    )
    assert check(files(enable_dbo=True, all2all_backend="deepep_low_latency"), version=version) == []


def test_a_removed_backend_is_judged_as_the_one_vllm_falls_back_to(check: Check) -> None:
    found = check(files(ubatch_size=2, all2all_backend="pplx"), rule="microbatching-all2all-backend")
    assert found[0].message.startswith(
        "ubatch_size = 2 with all2all_backend = 'pplx' all2all backend; vLLM 0.33.0 refuses to start: "
        '"Microbatching currently only supports the deepep_low_latency, deepep_high_throughput, nixl_ep all2all '
        "backends on this platform. allgather_reducescatter is not supported."
    )
    assert check(files(ubatch_size=1), rule="microbatching-all2all-backend") == []  # one microbatch is none


@pytest.mark.parametrize("version", RELEASES)
def test_dbo_thresholds_must_hold_a_token_per_microbatch(check: Check, version: str) -> None:
    serve = {"ubatch_size": 64, "all2all_backend": "deepep_low_latency"}
    found = check(files(**serve), version=version, rule="microbatching-thresholds")
    if not at_least(version, "0.30.0"):
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            "ubatch_size = 64 (64 microbatches) with dbo_decode_token_threshold unset (32), "
            "dbo_prefill_token_threshold unset (512)",
            "dbo_decode_token_threshold and dbo_prefill_token_threshold must be at least the number of "
            "microbatches (64).",
        )
    ]
    assert check(files(**serve, dbo_decode_token_threshold=64), version=version) == []


def test_the_thresholds_fail_in_parallel_config_before_the_backend_assertion(make_repo: MakeRepo) -> None:
    assert _verdict(make_repo, "0.33.0", ubatch_size=2147483647) == "microbatching-thresholds"
    assert _verdict(make_repo, "0.29.0", ubatch_size=2147483647) == "microbatching-all2all-backend"


# ---- values ParallelConfig validates ------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_numa_cpu_lists_use_numactl_syntax(check: Check, version: str) -> None:
    found = check(files(numa_bind=True, numa_bind_cpus=["bogus"]), version=version)
    assert [(f.rule, f.message) for f in found] == [
        (
            "invalid-value",
            f'serve.numa_bind_cpus: vLLM {version} refuses ["bogus"]: "1 validation error for ParallelConfig / '
            "numa_bind_cpus / Value error, numa_bind_cpus entries must use numactl CPU list syntax, for example "
            "'0-3' or '0,2,4-7'.\"",
        )
    ]
    descending = check(files(numa_bind=True, numa_bind_cpus=["0-3", "7-4"]), version=version)
    assert descending[0].message.endswith("numa_bind_cpus ranges must be ascending, but got '7-4'.\"")
    assert check(files(numa_bind=True, numa_bind_cpus=["0-3", "0,2,4-7"]), version=version) == []


def test_a_bad_numa_value_is_reported_before_the_missing_numa_bind(make_repo: MakeRepo, check: Check) -> None:
    found = check(files(numa_bind_nodes=[-1]))
    assert [f.rule for f in found] == ["invalid-value", "numa-bind"]
    assert found[0].message == (
        'serve.numa_bind_nodes: vLLM 0.33.0 refuses [-1]: "1 validation error for ParallelConfig / '
        'numa_bind_nodes / Value error, numa_bind_nodes must contain non-negative integers."'
    )
    assert _verdict(make_repo, "0.33.0", numa_bind_nodes=[-1]) == "invalid-value"
    assert _verdict(make_repo, "0.33.0", numa_bind_nodes=[1]) == "numa-bind"


@pytest.mark.parametrize("version", RELEASES)
def test_a_negative_data_parallel_rank_fails_parallel_configs_field_first(
    make_repo: MakeRepo, check: Check, version: str
) -> None:
    found = check(files(data_parallel_rank=-1), version=version, rule="invalid-value")
    assert messages(found) == [
        refuses(
            version,
            "data_parallel_rank = -1",
            "1 validation error for ParallelConfig / data_parallel_rank / Input should be greater than or equal to 0",
        )
    ]
    assert _verdict(make_repo, version, data_parallel_rank=-1) == "invalid-value"
    assert _verdict(make_repo, version, data_parallel_rank=0) == "data-parallel-external-lb"


@pytest.mark.parametrize("version", RELEASES)
def test_the_rpc_port_is_bounded_from_0_28(check: Check, version: str) -> None:
    found = check(files(data_parallel_rpc_port=70000), version=version, rule="invalid-value")
    if not at_least(version, "0.28.0"):
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            "data_parallel_rpc_port = 70000",
            "1 validation error for ParallelConfig / data_parallel_rpc_port / Input should be less than or equal "
            "to 65535",
        )
    ]
    assert check(files(data_parallel_rpc_port=29550), version=version) == []


def test_a_negative_local_size_is_judged_on_the_value_vllm_passes(check: Check) -> None:
    found = check(files(data_parallel_size_local=-1), rule="invalid-value")
    assert found[0].message.startswith('data_parallel_size_local = -1; vLLM 0.33.0 refuses to start: "1 validation')
    # an external rank makes vLLM refuse any local size but 1 before it builds ParallelConfig
    external = check(files(KIMI, data_parallel_size=2, data_parallel_rank=1, data_parallel_size_local=-1))
    assert [f.rule for f in external] == ["data-parallel-launch"]


# ---- prefetch offloading, the EPLB communicator, Nemotron-H's experts --------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_prefetch_offloading_needs_a_group_larger_than_what_it_offloads(check: Check, version: str) -> None:
    found = check(files(offload_backend="prefetch"), version=version)
    assert messages(found) == [
        refuses(
            version,
            'offload_backend = "prefetch" with offload_num_in_group unset, 1 and offload_group_size unset, 0',
            "offload_num_in_group (1) must be <= offload_group_size (0)",
        )
    ]
    assert found[0].rule == "offload-prefetch-group"
    assert check(files(offload_backend="prefetch", offload_group_size=4), version=version) == []


def test_prefetch_offloading_must_prefetch(check: Check) -> None:
    found = check(files(offload_group_size=2, offload_prefetch_step=0))
    assert messages(found) == [
        refuses(
            "0.33.0",
            "offload_group_size = 2 with offload_prefetch_step = 0",
            "offload_prefetch_step (0) must be >= 1 when prefetch offloading is enabled (offload_group_size > 0)",
        )
    ]
    assert check(files(offload_prefetch_step=0)) == []  # no prefetch offloading: nothing to check


@pytest.mark.parametrize("version", RELEASES)
def test_async_eplb_refuses_an_nccl_communicator(check: Check, version: str) -> None:
    found = check(files(KIMI, eplb_config={"communicator": "pynccl"}), version=version)
    assert messages(found) == [
        refuses(
            version,
            "eplb_config.communicator = 'pynccl' with asynchronous EPLB (use_async defaults to true)",
            "pynccl communicator is incompatible with async EPLB due to NCCL multi-stream conflicts. Use "
            "'torch_gloo' or 'nixl' instead, or leave communicator unset for automatic selection.",
        )
    ]
    assert check(files(KIMI, eplb_config={"communicator": "pynccl", "use_async": False}), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_nemotron_h_counts_as_a_mixture_of_experts(check: Check, version: str) -> None:
    # transformers' NemotronHConfig gives n_routed_experts = 8 when the config.json leaves it out
    assert check(files(NEMOTRON, enable_expert_parallel=True), version=version) == []
    found = check(files(NEMOTRON, config={"n_routed_experts": 0}, enable_expert_parallel=True), version=version)
    assert [f.rule for f in found] == ["expert-parallel-dense-model"]


def test_an_unknown_eplb_key_fails_before_the_communicator(check: Check) -> None:
    found = check(files(KIMI, eplb_config={"communicator": "pynccl", "bogus": 1}))
    assert [f.rule for f in found] == ["unknown-option"]


@pytest.mark.parametrize("version", RELEASES)
def test_elastic_ep_cannot_start_above_its_largest_data_parallel_size(check: Check, version: str) -> None:
    elastic = {"enable_elastic_ep": True, "enable_eplb": True, "enable_expert_parallel": True}
    found = check(
        files(KIMI, **elastic, data_parallel_size=2, elastic_ep_max_dp_size=1),
        version=version,
        rule="elastic-expert-parallel",
    )
    if not at_least(version, "0.30.0"):
        assert [f.rule for f in found] == []
        return
    assert messages(found) == [
        refuses(
            version,
            "enable_elastic_ep = true with elastic_ep_max_dp_size = 1 below data_parallel_size = 2",
            "--elastic-ep-max-dp-size must be greater than or equal to the initial data_parallel_size (2).",
        )
    ]
    assert check(files(KIMI, **elastic, data_parallel_size=2, elastic_ep_max_dp_size=2), version=version) == []
