"""Data-parallel launch options (rules/dataparallel.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.conftest import Check, messages, no_config, not_checked
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least

KIMI = "KimiLinearForCausalLM"  # a mixture-of-experts model
INVALID = "Invalid data-parallel launch options: "


@pytest.mark.parametrize(
    ("serve", "what", "message"),
    [
        (
            {"data_parallel_size": 2, "data_parallel_hybrid_lb": True, "data_parallel_external_lb": True},
            "data_parallel_hybrid_lb = true with data_parallel_external_lb = true",
            INVALID + "`--data-parallel-hybrid-lb` and `--data-parallel-external-lb` cannot be enabled together. "
            "Enable only one load-balancing mode.",
        ),
        (
            {"nnodes": 2, "data_parallel_backend": "ray"},
            "nnodes = 2 with data_parallel_backend = 'ray'",
            INVALID + "`--nnodes 2` requires `--data-parallel-backend mp`; got `--data-parallel-backend ray`. Use "
            "the MP backend or set `--nnodes 1`.",
        ),
        (
            {"nnodes": 2, "node_rank": 2, "data_parallel_size": 2},
            "node_rank = 2 with nnodes = 2",
            INVALID + "`--node-rank` must be between 0 and 1; got `--node-rank 2`. Set it to this node's zero-based "
            "index.",
        ),
        (
            {"data_parallel_external_lb": True},
            "data_parallel_external_lb = true without data_parallel_rank",
            INVALID + "`--data-parallel-external-lb` requires a data-parallel rank. Set `--data-parallel-rank`, or "
            "set `--data-parallel-size` greater than 1 and use `--nnodes` with `--node-rank` so the rank can be "
            "inferred.",
        ),
        (
            {"data_parallel_size": 4, "data_parallel_rank": 1, "data_parallel_size_local": 2},
            "an external data-parallel rank with data_parallel_size_local = 2",
            INVALID + "an external data-parallel rank requires `--data-parallel-size-local 1`; got 2. Set it to 1 "
            "or omit it.",
        ),
        (
            {"data_parallel_size": 2, "data_parallel_hybrid_lb": True},
            "data_parallel_hybrid_lb = true without data_parallel_size_local",
            INVALID + "`--data-parallel-hybrid-lb` requires `--data-parallel-size-local`. Set it to the number of "
            "data-parallel ranks on this node.",
        ),
        (
            {"enable_fault_tolerance": True},
            "enable_fault_tolerance = true without an external load balancer",
            "Fault tolerance requires external load balancer mode (--data-parallel-external-lb or "
            "--data-parallel-rank). Internal LB mode is not supported.",
        ),
    ],
)
def test_launch_options_that_contradict_each_other(
    check: Check, serve: dict[str, Any], what: str, message: str
) -> None:
    found = check(files(KIMI, **serve), rule="data-parallel-launch")
    assert messages(found) == [refuses("0.33.0", what, message)]


@pytest.mark.parametrize("version", RELEASES)
def test_nodes_must_divide_the_world_size(check: Check, version: str) -> None:
    found = check(files(KIMI, nnodes=2, data_parallel_size=3), version=version, rule="data-parallel-launch")
    if at_least(version, "0.30.0"):
        what = "nnodes = 2 does not divide the world size 3 (data x pipeline x tensor x prefill-context parallel sizes)"
        tail = "`--tensor-parallel-size`, or `--prefill-context-parallel-size`."
    else:
        what = "nnodes = 2 does not divide the world size 3 (data x pipeline x tensor parallel sizes)"
        tail = "or `--tensor-parallel-size`."
    assert messages(found) == [
        refuses(
            version,
            what,
            INVALID + "`--nnodes 2` must evenly divide the total world size (3). Adjust `--nnodes`, "
            "`--data-parallel-size`, `--pipeline-parallel-size`, " + tail,
        )
    ]
    assert check(files(KIMI, nnodes=2, data_parallel_size=4), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_external_ranks_inferred_from_node_ranks_need_divisible_nodes(check: Check, version: str) -> None:
    serve = {"nnodes": 3, "data_parallel_size": 3, "tensor_parallel_size": 2, "data_parallel_external_lb": True}
    found = check(files(KIMI, **serve), version=version, rule="data-parallel-launch")
    assert found == []  # 3 nodes, 3 ranks
    serve.update(nnodes=2, data_parallel_size=4, tensor_parallel_size=1)
    found = check(files(KIMI, **serve), version=version, rule="data-parallel-launch")
    if at_least(version, "0.31.0"):
        assert messages(found) == [
            refuses(
                version,
                "data_parallel_external_lb = true with nnodes = 2, data_parallel_size = 4 and no data_parallel_rank",
                INVALID + "`--node-rank` cannot unambiguously identify external data-parallel ranks when `--nnodes` "
                "is not divisible by `--data-parallel-size`. Set a unique `--data-parallel-rank` for each "
                "external-LB process.",
            )
        ]
    else:
        assert found == []


def test_a_local_size_above_the_size(check: Check) -> None:
    found = check(files(data_parallel_size_local=2))
    assert messages(found) == [
        refuses(
            "0.33.0",
            "data_parallel_size_local = 2 is more than data_parallel_size = 1",
            "data_parallel_size_local (2) must be <= data_parallel_size (1)",
        )
    ]
    assert found[0].rule == "data-parallel-size-local"
    assert check(files(data_parallel_size=2, data_parallel_size_local=2)) == []


def test_an_external_rank_without_data_parallelism(check: Check) -> None:
    found = check(files(data_parallel_rank=0))
    assert messages(found) == [
        refuses(
            "0.33.0",
            "an external data-parallel load balancer (data_parallel_external_lb or data_parallel_rank) with "
            "data_parallel_size = 1",
            "data_parallel_external_lb can only be set when data_parallel_size > 1",
        )
    ]
    assert found[0].rule == "data-parallel-external-lb"


def test_a_start_rank_outside_the_data_parallel_ranks(check: Check) -> None:
    serve = {"data_parallel_size": 2, "data_parallel_size_local": 1, "data_parallel_start_rank": 5}
    found = check(files(**serve))
    assert messages(found) == [
        refuses(
            "0.33.0",
            "data_parallel_rank 5 with data_parallel_size = 2",
            "data_parallel_rank (5) must be in the range [0, 2)",
        )
    ]
    assert found[0].rule == "data-parallel-rank"
    serve["data_parallel_start_rank"] = 1
    assert check(files(**serve)) == []


START_EXTERNAL = (
    "data_parallel_start_rank with data_parallel_size_local = 1 (vLLM infers hybrid load balancing from the start "
    "rank and switches it to an external load balancer for one local rank) with data_parallel_size = 1"
)


@pytest.mark.parametrize("version", RELEASES)
def test_a_start_rank_with_one_local_rank_is_an_external_load_balancer(check: Check, version: str) -> None:
    """A start rank infers hybrid LB, which one local rank turns into external LB (0.27.x: a non-zero start rank)."""
    found = check(files(KIMI, data_parallel_start_rank=0, data_parallel_size_local=1), version=version)
    if at_least(version, "0.28.0"):
        assert messages(found) == [
            refuses(version, START_EXTERNAL, "data_parallel_external_lb can only be set when data_parallel_size > 1")
        ]
        assert found[0].rule == "data-parallel-external-lb"
    else:
        assert found == []
    found = check(files(KIMI, data_parallel_start_rank=1, data_parallel_size_local=1), version=version)
    assert [f.rule for f in found] == ["data-parallel-external-lb"]
    # with data parallelism an external rank is fine; so is a headless node, which infers no hybrid LB
    external = files(KIMI, data_parallel_size=2, data_parallel_start_rank=1, data_parallel_size_local=1)
    assert check(external, version=version) == []
    headless = files(KIMI, headless=True, data_parallel_start_rank=1, data_parallel_size_local=1)
    assert check(headless, version=version) == []


def test_elastic_ep_sees_the_load_balancer_a_start_rank_infers(check: Check) -> None:
    serve = {"enable_elastic_ep": True, "enable_eplb": True, "data_parallel_size": 4, "data_parallel_start_rank": 0}
    hybrid = check(files(KIMI, **serve, data_parallel_size_local=2), rule="elastic-expert-parallel")
    assert messages(hybrid) == [
        refuses(
            "0.33.0",
            "enable_elastic_ep = true with data_parallel_hybrid_lb = true",
            "Elastic EP is not compatible with data_parallel_hybrid_lb. Elastic EP supports a single API "
            "server/core client path or data_parallel_external_lb, but not hybrid load balancing.",
        )
    ]
    # one local rank is external LB, which 0.33.0 allows; four local ranks of four are one node's internal LB
    assert check(files(KIMI, **serve, data_parallel_size_local=1), rule="elastic-expert-parallel") == []
    assert check(files(KIMI, **serve, data_parallel_size_local=4), rule="elastic-expert-parallel") == []


def test_external_data_parallelism_needs_a_mixture_of_experts_model(check: Check) -> None:
    found = check(files(data_parallel_size=2, data_parallel_rank=1))
    assert messages(found) == [
        refuses(
            "0.33.0",
            "data_parallel_size = 2 with an external data-parallel rank for a dense (non-MoE) model (config.json)",
            "Non-MoE models do not support external data parallel mode. For external load balancing, launch "
            "independent vLLM instances without --data-parallel-* arguments.",
        )
    ]
    assert found[0].rule == "data-parallel-dense-model"
    assert check(files(KIMI, data_parallel_size=2, data_parallel_rank=1)) == []
    unknown = check(files(with_config=False, data_parallel_size=2, data_parallel_rank=1))
    assert [f.message for f in unknown] == [no_config("dummy/LlamaForCausalLM")]
    assert not_checked(unknown) == ["an external data-parallel rank against whether the model is a mixture of experts"]
