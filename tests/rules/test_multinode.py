"""Roles larger than one node (rules/multinode.py, compose/shape.py), every release: a node's share of the GPUs
against `[hardware] gpus_per_node`, and the leader's ports beside the role's own."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.layers import RELEASES

MODEL = '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n'


def spread(sizes: str, per_node: int) -> str:
    return f"{MODEL}{sizes}\n[hardware]\ngpus_per_node = {per_node}\n"


@pytest.mark.parametrize("version", RELEASES)
def test_more_gpus_on_each_node_than_the_node_has(check: Check, version: str) -> None:
    text = spread("tensor_parallel_size = 8\npipeline_parallel_size = 2\nnnodes = 2", 4)
    found = check({"s.toml": text}, version=version, rule="multinode-gpus-per-node")
    assert messages(found) == [
        "role serve runs 16 GPUs (TP 8 x PP 2) over nnodes = 2: 8 GPUs on each node, and its nodes have "
        f"hardware.gpus_per_node = 4; with nnodes > 1 vLLM {version} starts 8 workers on each node without "
        "comparing them with the node's GPUs, and the workers past GPU 3 fail to start"
    ]
    assert found[0].fix == "set nnodes = 4 (16 GPUs over nodes of 4), or lower the parallel sizes"
    assert [loc.key for loc in found[0].locations] == [
        "hardware.gpus_per_node",
        "serve.tensor_parallel_size",
        "serve.pipeline_parallel_size",
        "serve.nnodes",
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_a_role_that_fills_its_nodes_passes(check: Check, version: str) -> None:
    text = spread("tensor_parallel_size = 8\npipeline_parallel_size = 2\nnnodes = 2", 8)
    assert check({"s.toml": text}, version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_data_parallel_ranks_over_nodes_count_on_each_node(check: Check, version: str) -> None:
    text = spread("tensor_parallel_size = 2\ndata_parallel_size = 8\nnnodes = 2", 4)
    found = check({"s.toml": text}, version=version, rule="multinode-gpus-per-node")
    assert messages(found)[0].startswith("role serve runs 16 GPUs (TP 2 x DP 8) over nnodes = 2: 8 GPUs on each node")
    assert (
        check({"s.toml": spread("tensor_parallel_size = 2\ndata_parallel_size = 8\nnnodes = 2", 8)}, version=version)
        == []
    )


def test_no_gpus_per_node_no_finding(check: Check) -> None:
    assert check({"s.toml": MODEL + "tensor_parallel_size = 16\nnnodes = 2\n"}, rule="multinode-gpus-per-node") == []


@pytest.mark.parametrize("version", RELEASES)
def test_the_leaders_master_port_beside_its_api_port(check: Check, version: str) -> None:
    text = spread("tensor_parallel_size = 16\nnnodes = 2\nport = 29501", 8)
    found = check({"s.toml": text}, version=version, rule="host-port-shared")
    assert messages(found) == [
        "role serve binds TCP port 29501 twice (serve serve.port = 29501, serve master_port = 29501 (vLLM default) on "
        'the leader of its 2 nodes); all but the first to start fail with "[Errno 98] Address already in use"'
    ]
    assert found[0].fix == "set serve.master_port = 29502 on serve: every process on a host needs its own ports"
    assert check({"s.toml": spread("tensor_parallel_size = 16\nnnodes = 2\nport = 8000", 8)}, version=version) == []


def test_the_data_parallel_rpc_port_counts_where_engines_run_on_other_nodes(check: Check) -> None:
    text = spread("data_parallel_size = 16\nnnodes = 2\nport = 8000\ndata_parallel_rpc_port = 8000", 8)
    found = check({"s.toml": text}, rule="host-port-shared")
    assert "data_parallel_rpc_port = 8000 on the leader of its 2 nodes" in messages(found)[0]


def test_one_node_too_small_names_the_nodes_to_spread_over(check: Check) -> None:
    text = spread("tensor_parallel_size = 8\npipeline_parallel_size = 2", 8)
    found = check({"s.toml": text}, rule="host-gpu-count")
    assert (
        found[0].fix == "run on nodes of 16 GPUs, or lower the parallel sizes (or spread them over nodes: nnodes = 2)"
    )
