"""Roles larger than one node (issue 28): a role's shape, a LeaderWorkerSet on Kubernetes, one srun per node on
SLURM, and the one-host targets refusing. The example stack `deepseek-two-nodes` spreads DeepSeek-V3's decode
role over two 8-GPU H100 nodes (TP 8 x PP 2, nnodes = 2).

The LeaderWorkerSet is checked against the LWS CRD's own OpenAPI schema (tests/data/k8s, vendored with its source)
and its pod templates with kubernetes-validate; tests/oracle/test_multinode_argv.py hands every node's command to
vLLM's own parser, and tests/test_slurm.py runs the job on the two-node test cluster.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.lws_schema import lws_errors, pod_template_errors
from tests.test_k8s import KUBERNETES

EXAMPLE = "deepseek-two-nodes"
LEADER_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
NODE_WORDS = ["--node-rank", "0", "--master-addr", "$(LWS_LEADER_ADDRESS)"]
WORKER_WORDS = ["--node-rank", "$(LWS_WORKER_INDEX)", "--master-addr", "$(LWS_LEADER_ADDRESS)", "--headless"]


def _manifests(run: Run, repo: Path, stack: str, out: Path) -> dict[str, list[dict[str, Any]]]:
    result = run("--repo", repo, "render", stack, "--out", out, "--target", "k8s")
    assert result.code == 0, result
    return {p.name: list(yaml.safe_load_all(p.read_text(encoding="utf-8"))) for p in sorted(out.glob("*.k8s.yaml"))}


def _container(lws: dict[str, Any], template: str) -> dict[str, Any]:
    container: dict[str, Any] = lws["spec"]["leaderWorkerTemplate"][template]["spec"]["containers"][0]
    return container


def test_the_example_renders_a_schema_valid_leaderworkerset_and_a_service_for_its_leader(
    run: Run, tmp_path: Path
) -> None:
    docs = _manifests(run, REPO_ROOT, EXAMPLE, tmp_path / "out")
    assert list(docs) == ["decode.k8s.yaml"]
    lws, service = docs["decode.k8s.yaml"]
    assert (lws["apiVersion"], lws["kind"]) == ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
    assert lws_errors(lws) == []
    assert pod_template_errors(lws) == []
    kubernetes_validate.validate(service, KUBERNETES, strict=True)
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2  # LWS counts the leader
    assert template["restartPolicy"] == "RecreateGroupOnPodRestart"
    leader, worker = _container(lws, "leaderTemplate"), _container(lws, "workerTemplate")
    common = [
        "serve",
        "deepseek-ai/DeepSeek-V3",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--gpu-memory-utilization",
        "0.9",
        "--max-num-seqs",
        "64",
        "--trust-remote-code",
        "--tensor-parallel-size",
        "8",
        "--pipeline-parallel-size",
        "2",
        "--nnodes",
        "2",
        "--max-model-len",
        "32768",
    ]
    assert leader["args"] == [*common, *NODE_WORDS]
    assert worker["args"] == [*common, *WORKER_WORDS]
    # each pod asks for one node's share, on the declared GPU's nodes
    for container in (leader, worker):
        assert container["resources"] == {"limits": {"nvidia.com/gpu": 8}}
    spec = template["workerTemplate"]["spec"]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    # the leader serves the API and is probed; a headless worker serves none
    assert leader["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert "startupProbe" in leader and "readinessProbe" in leader
    assert "ports" not in worker and "startupProbe" not in worker and "readinessProbe" not in worker
    # the Service reaches the leader pod only (LWS labels it worker-index "0")
    assert service["spec"]["selector"][LEADER_LABEL] == "0"
    assert service["spec"]["selector"][NAME_LABEL] == lws["metadata"]["name"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (with its built-in kustomize) is not installed")
def test_kustomize_builds_the_leaderworkerset(run: Run, tmp_path: Path) -> None:
    _manifests(run, REPO_ROOT, EXAMPLE, tmp_path)
    built = subprocess.run(["kubectl", "kustomize", str(tmp_path)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    kinds = [doc["kind"] for doc in yaml.safe_load_all(built.stdout)]
    assert sorted(kinds) == ["LeaderWorkerSet", "Service"]


def test_the_header_says_the_shape(run: Run, tmp_path: Path) -> None:
    _manifests(run, REPO_ROOT, EXAMPLE, tmp_path)
    text = (tmp_path / "decode.k8s.yaml").read_text(encoding="utf-8")
    assert "# 2 nodes x 8 GPUs, TP 8 x PP 2: a LeaderWorkerSet of 2 pods; the leader (node rank 0) serves" in text


def test_the_script_target_refuses_a_multi_node_role_and_writes_nothing(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("--repo", REPO_ROOT, "render", EXAMPLE, "--out", out)
    assert result.code == 1
    assert (
        "profiles/deepseek-two-nodes.toml:15:1: error multinode-unrenderable role decode spans 2 nodes x 8 GPUs, "
        "TP 8 x PP 2, and the script target starts a role on one host: its other nodes would never start"
    ) in result.out
    assert "fix: render it with --target k8s (a LeaderWorkerSet) or --target slurm (one job over 2 nodes)" in (
        result.out
    )
    assert not out.exists()
    refused = run("--repo", REPO_ROOT, "render", EXAMPLE, "--out", out, "--target", "vllm-config")
    assert refused.code == 1 and "the vllm-config target starts a role on one host" in refused.out
    assert not out.exists()


def test_the_env_target_alone_writes_the_env_file(run: Run, tmp_path: Path) -> None:
    result = run("--repo", REPO_ROOT, "render", EXAMPLE, "--out", tmp_path, "--target", "env")
    assert result.code == 0, result
    assert (tmp_path / "decode.env").exists()


ONE_ROLE = '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n'


def test_data_parallel_ranks_spread_without_nnodes_are_refused_with_the_nnodes_form(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    text = ONE_ROLE + "data_parallel_size = 4\ndata_parallel_size_local = 2\n[hardware]\ngpus_per_node = 8\n"
    repo = make_repo({"s.toml": text})
    result = run("--repo", repo, "render", "s", "--out", tmp_path / "out", "--target", "k8s")
    assert result.code == 1
    assert (
        "error multinode-unrenderable role serve spans 2 nodes x 2 GPUs, TP 1 x DP 4 (data_parallel_size_local): its "
        "4 data-parallel ranks are spread 2 a node with data_parallel_size_local"
    ) in result.out
    assert "fix: write nnodes = 2 and remove data_parallel_size_local" in result.out
    assert not (tmp_path / "out").exists()


def test_a_ray_world_larger_than_a_node_is_refused(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    text = ONE_ROLE + 'tensor_parallel_size = 16\ndistributed_executor_backend = "ray"\n[hardware]\ngpus_per_node = 8\n'
    repo = make_repo({"s.toml": text})
    result = run("--repo", repo, "render", "s", "--out", tmp_path / "out", "--target", "slurm")
    assert result.code == 1
    assert 'with distributed_executor_backend = "ray" its world of 16 GPUs is placed by a Ray cluster' in (result.out)
    assert "fix: spread it with nnodes = 2" in result.out


def test_data_parallel_over_nodes_gives_each_pod_its_share(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    text = ONE_ROLE + "tensor_parallel_size = 2\ndata_parallel_size = 8\nnnodes = 2\n[hardware]\ngpus_per_node = 8\n"
    docs = _manifests(run, make_repo({"s.toml": text}), "s", tmp_path)
    lws = docs["serve.k8s.yaml"][0]
    assert lws_errors(lws) == [] and pod_template_errors(lws) == []
    assert _container(lws, "workerTemplate")["resources"] == {"limits": {"nvidia.com/gpu": 8}}


def test_single_node_roles_stay_deployments(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    text = ONE_ROLE + "tensor_parallel_size = 8\n[hardware]\ngpus_per_node = 8\n"
    docs = _manifests(run, make_repo({"s.toml": text}), "s", tmp_path)
    assert [doc["kind"] for doc in docs["serve.k8s.yaml"]] == ["Deployment", "Service"]


def test_a_node_option_a_layer_writes_is_written_per_node_with_a_note(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    text = ONE_ROLE + 'tensor_parallel_size = 16\nnnodes = 2\nnode_rank = 1\nmaster_addr = "10.0.0.1"\n'
    docs = _manifests(run, make_repo({"s.toml": text}), "s", tmp_path)
    leader = _container(docs["serve.k8s.yaml"][0], "leaderTemplate")
    assert "10.0.0.1" not in leader["args"] and leader["args"][-4:] == NODE_WORDS
    text = (tmp_path / "serve.k8s.yaml").read_text(encoding="utf-8")
    assert "# serve.master_addr = '10.0.0.1' written per node instead" in text


def test_show_and_explain_say_how_the_role_is_spread(run: Run) -> None:
    shown = run("--repo", REPO_ROOT, "show", EXAMPLE, "--format", "json")
    assert shown.code == 0, shown
    assert '"shape": "2 nodes x 8 GPUs, TP 8 x PP 2"' in shown.out
    explained = run("--repo", REPO_ROOT, "explain", EXAMPLE, "nnodes")
    assert explained.code == 0, explained
    assert "[decode] spans 2 nodes x 8 GPUs, TP 8 x PP 2: node rank 0, the leader, serves the API" in explained.out
    single = run("--repo", REPO_ROOT, "show", "qwen-disaggregated", "--format", "json")
    assert '"shape"' not in single.out


def test_the_slurm_job_has_one_srun_per_node(run: Run, tmp_path: Path) -> None:
    result = run("--repo", REPO_ROOT, "render", EXAMPLE, "--out", tmp_path, "--target", "slurm")
    assert result.code == 0, result
    text = (tmp_path / "job.sbatch").read_text(encoding="utf-8")
    head = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    assert head[1:4] == ["#SBATCH --nodes=2", "#SBATCH --ntasks=2", "#SBATCH --gres=gpu:nvidia_h100_80gb_hbm3:8"]
    assert text.count("srun --nodes=1 --ntasks=1 --exact") == 2
    assert '  --node-rank 0 \\\n  --master-addr "${address[0]}" &\n' in text
    assert '  --node-rank 1 \\\n  --master-addr "${address[0]}" \\\n  --headless &\n' in text
    assert "probe_ports[0]=8000" in text and "probe_ports[1]" not in text
    assert "sbatch --nodes=1" not in text  # a role that spans nodes cannot be packed onto one
