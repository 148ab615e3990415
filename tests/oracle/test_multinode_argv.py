"""Every node of a multi-node role gets the command vLLM expects for its rank: vLLM's own parser and
`create_engine_config` (with `headless=True` for a `--headless` node, as `vllm serve` builds it) judge each one, on
a worker that answers as a node of eight H100s.

For each selected release: a role spread over two nodes (TP 8 x PP 2, and TP 2 x DP 8) is rendered for k8s, each
pod's args expanded as the kubelet expands them (LWS's `$(LWS_LEADER_ADDRESS)`, `$(LWS_WORKER_INDEX)`), and for
slurm, where the job runs on the two-node test cluster (tests/test_slurm.py) and the stub `vllm` records what
each node received. Every node's argv must be accepted, with its node rank, `--headless` on the workers only, and
the leader's address as the master address; a worker given a rank outside the role is refused, so the check is
not vacuous.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import MakeRepo, Run
from tests.oracle.conftest import GpuOraclePool, selected_versions
from tests.oracle.models import config_json
from tests.oracle.oracle_client import OracleWorker
from tests.test_k8s import kubelet_expand
from tests.test_slurm import NODE_ADDRESS, NODES, slurm, stubs, submit  # noqa: F401 - fixtures

GPU = "H100-SXM-80GB"
LEADER = "decode-0.decode.default"  # what LWS_LEADER_ADDRESS holds: <lws>-<group>.<subdomain>.<namespace>
SHAPES = {
    "tp8-pp2": "tensor_parallel_size = 8\npipeline_parallel_size = 2\n",
    "tp2-dp8": "tensor_parallel_size = 2\ndata_parallel_size = 8\n",
}


def _config() -> dict[str, Any]:
    """A tiny Llama whose heads and layers split over TP 8 and PP 2."""
    config = config_json("LlamaForCausalLM")
    config.update(num_attention_heads=16, num_key_value_heads=8, hidden_size=256, num_hidden_layers=4)
    return config


def _repo(make_repo: MakeRepo, version: str, shape: str) -> Path:
    layer = f"""[model]
config = "models/dummy/config.json"

[hardware]
gpu = "{GPU}"
gpus_per_node = 8

[roles.decode]
kind = "vllm"

[roles.decode.serve]
model = "dummy/LlamaForCausalLM"
port = 8200
nnodes = 2
{SHAPES[shape]}"""
    root = make_repo({"s.toml": layer}, config=f'[vllm]\nversion = "{version}"\n')
    (root / "models" / "dummy").mkdir(parents=True)
    (root / "models" / "dummy" / "config.json").write_text(json.dumps(_config()), encoding="utf-8")
    return root


def _judge(worker: OracleWorker, argv: list[str], rank: int, leader: str) -> None:
    """vLLM accepts `argv` (after `vllm serve`) as node `rank` of two, led from `leader`."""
    answer = worker.validate(argv, config_json=_config())
    assert answer["ok"] is True, (argv, answer)
    parsed = worker.parse(argv)["namespace"]
    assert (parsed["nnodes"], parsed["node_rank"], parsed["master_addr"]) == (2, rank, leader)
    assert parsed["headless"] is (rank > 0)


def _refused_beyond_the_role(worker: OracleWorker, argv: list[str]) -> None:
    wrong = [*argv]
    wrong[wrong.index("--node-rank") + 1] = "2"
    answer = worker.validate(wrong, config_json=_config())
    assert answer["ok"] is False and "`--node-rank` must be between 0 and 1" in answer["error"], answer


Render = Callable[[str, str, str], Path]  # (version, shape, target) -> the output folder


@pytest.fixture
def render(make_repo: MakeRepo, run: Run, tmp_path: Path) -> Render:
    """Render the two-node stack of a shape for a release and a target; the folder it was written to."""

    def go(version: str, shape: str, target: str) -> Path:
        out = tmp_path / f"out-{target}"
        result = run("--repo", _repo(make_repo, version, shape), "render", "s", "--out", out, "--target", target)
        assert result.code == 0, result
        return out

    return go


Submit = Callable[[Path], tuple[Any, str, dict[tuple[str, str], dict[str, Any]]]]


@pytest.fixture
def run_job(slurm: dict[str, str], stubs: Path) -> Submit:  # noqa: F811 - the fixtures of tests/test_slurm.py
    """Submit a job as written (two nodes of eight GPUs); the leader's stub answers /health once, ending the job."""

    def go(job: Path) -> tuple[Any, str, dict[tuple[str, str], dict[str, Any]]]:
        return submit(job, slurm, stubs, env={"STUB_STOP_AFTER_HEALTH": "1"})

    return go


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("version", selected_versions())
def test_each_pod_of_the_leaderworkerset_gets_its_ranks_argv(
    gpu_oracle_pool: GpuOraclePool, render: Render, version: str, shape: str
) -> None:
    worker = gpu_oracle_pool.get(version, GPU)
    out = render(version, shape, "k8s")
    lws = next(yaml.safe_load_all((out / "decode.k8s.yaml").read_text(encoding="utf-8")))
    template = lws["spec"]["leaderWorkerTemplate"]
    for name, rank in (("leaderTemplate", 0), ("workerTemplate", 1)):
        container = template[name]["spec"]["containers"][0]
        env = {"LWS_LEADER_ADDRESS": LEADER, "LWS_WORKER_INDEX": str(rank)}  # set by LWS in every pod
        args = [kubelet_expand(word, env) for word in container["args"]]
        assert args[0] == "serve"
        _judge(worker, args[1:], rank, LEADER)
        if rank:
            _refused_beyond_the_role(worker, args[1:])


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("version", selected_versions())
def test_each_node_of_the_slurm_job_gets_its_ranks_argv(
    gpu_oracle_pool: GpuOraclePool, render: Render, run_job: Submit, version: str, shape: str
) -> None:
    worker = gpu_oracle_pool.get(version, GPU)
    out = render(version, shape, "slurm")
    proc, output, records = run_job(out / "job.sbatch")
    assert proc.returncode == 0, output
    assert "job.sbatch: decode[node 0] is healthy on 127.0.0.1:8200" in output
    assert sorted(records) == [("decode", node) for node in NODES], output
    for rank, node in enumerate(NODES):
        record = records[("decode", node)]
        assert record["env"]["SLURMD_NODENAME"] == node
        assert record["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"  # the node's eight GPUs, numbered on it
        assert record["argv"][1] == "serve"
        _judge(worker, record["argv"][2:], rank, NODE_ADDRESS)
