"""Issue 25, item 3: k8s and slurm point every loopback form by which a role reaches another at that role's host.

In a pod or on a node of its own, loopback is the role itself: an address left on 127.0.0.1 reaches nothing. The
forms are those rules/wiring.py reads (a URL, `host:port`, the host word of a `--X-host`/`--X-port` pair, an env
value); each rewrite is a note of the rendered file, and an address no target can point anywhere stops the target.
The k8s manifests are read back with PyYAML and the job script with bash's own word splitting (`set --`), so what is
checked is what the kubelet and srun are given. tests/test_slurm.py runs such a job under real SLURM.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.test_wiring import PD

LOOPBACK = re.compile(r"(127\.0\.0\.1|localhost|\[::1\])")
PAIR_PROXY = (
    '["my-proxy", "--port", "8192", "--prefiller-host", "127.0.0.1", "--prefiller-port", '
    '"${roles.prefill.serve.port}", "--decoder-host", "localhost", "--decoder-port", "${roles.decode.serve.port}"]'
)
ENV = 'DECODE_URL = "http://127.0.0.1:${roles.decode.serve.port}/v1"'


def _containers(out: Path) -> dict[str, dict[str, Any]]:
    """Each role's container, as Kubernetes reads the manifests."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(out.glob("*.k8s.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc["kind"] == "Deployment":
                found[path.name.removesuffix(".k8s.yaml")] = doc["spec"]["template"]["spec"]["containers"][0]
    return found


def _words(container: dict[str, Any]) -> list[str]:
    values = [item["value"] for item in container.get("env", []) if "value" in item]
    return [*container["command"], *container["args"], *values]


def _srun_words(job: Path) -> list[list[str]]:
    """The words of every `srun` command of the job, as bash splits them (variables left unexpanded)."""
    text = job.read_text(encoding="utf-8")
    commands = re.findall(r"^\s*srun .*?(?<!\\)$", text, flags=re.MULTILINE | re.DOTALL)
    out: list[list[str]] = []
    for command in commands:
        # bash splits and unquotes the words; `address` is an array the job fills at run time: keep it visible
        words = command.replace("\\\n", " ").rstrip().removesuffix("&")  # the job starts each step in the background
        script = "address=(NODE0 NODE1 NODE2 NODE3)\nset -- " + words + '\nprintf "%s\\0" "$@"'
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
        out.append(done.stdout.split("\0")[:-1])
    return out


def test_the_example_pd_stack_has_no_loopback_address_of_another_role_on_k8s(run: Run, tmp_path: Path) -> None:
    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", tmp_path, "--target", "k8s")
    assert result.code == 0, result
    containers = _containers(tmp_path)
    assert sorted(containers) == ["decode", "prefill", "proxy"]
    for role, container in containers.items():
        assert [word for word in _words(container) if LOOPBACK.search(word)] == [], role
    assert "http://qwen-disaggregated-decode:8200" in containers["proxy"]["args"]
    head = (tmp_path / "proxy.k8s.yaml").read_text(encoding="utf-8")
    assert (
        "# --prefill http://127.0.0.1:8100: 127.0.0.1 written as qwen-disaggregated-prefill, the Service of role "
        "prefill\n# --decode http://127.0.0.1:8200: 127.0.0.1 written as qwen-disaggregated-decode, the Service of "
        "role decode\n"
    ) in head


def test_the_example_pd_stack_has_no_loopback_address_of_another_role_in_the_slurm_job(
    run: Run, tmp_path: Path
) -> None:
    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", tmp_path, "--target", "slurm")
    assert result.code == 0, result
    commands = _srun_words(tmp_path / "job.sbatch")
    assert len(commands) == 3
    for words in commands:
        assert [word for word in words if LOOPBACK.search(word)] == [], words
    proxy = commands[2]
    assert proxy[proxy.index("--prefill") + 1] == "http://NODE0:8100"
    assert proxy[proxy.index("--decode") + 1] == "http://NODE1:8200"


def test_vllms_proxy_style_pairs_and_env_values_name_the_services(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    repo = make_repo({"pd.toml": PD + f"command = {PAIR_PROXY}\n\n[roles.proxy.env]\n{ENV}\n"})
    out = tmp_path / "out"
    result = run("--repo", repo, "render", "pd", "--out", out, "--target", "k8s")
    assert result.code == 0, result
    proxy = _containers(out)["proxy"]
    assert proxy["args"] == [
        "--port",
        "8192",
        "--prefiller-host",
        "pd-prefill",
        "--prefiller-port",
        "8100",
        "--decoder-host",
        "pd-decode",
        "--decoder-port",
        "8200",
    ]
    assert proxy["env"] == [{"name": "DECODE_URL", "value": "http://pd-decode:8200/v1"}]
    head = (out / "proxy.k8s.yaml").read_text(encoding="utf-8")
    for line in (
        "# --prefiller-host 127.0.0.1 --prefiller-port 8100: 127.0.0.1 written as pd-prefill, the Service of role "
        "prefill",
        "# --decoder-host localhost --decoder-port 8200: localhost written as pd-decode, the Service of role decode",
        "# DECODE_URL=http://127.0.0.1:8200/v1: 127.0.0.1 written as pd-decode, the Service of role decode",
    ):
        assert line + "\n" in head


def test_vllms_proxy_style_pairs_and_env_values_reach_the_nodes_in_the_slurm_job(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    repo = make_repo({"pd.toml": PD + f"command = {PAIR_PROXY}\n\n[roles.proxy.env]\n{ENV}\n"})
    result = run("--repo", repo, "render", "pd", "--out", tmp_path / "out", "--target", "slurm")
    assert result.code == 0, result
    proxy = _srun_words(tmp_path / "out" / "job.sbatch")[2]
    assert "DECODE_URL=http://NODE1:8200/v1" in proxy
    start = proxy.index("my-proxy")
    assert proxy[start:] == [
        "my-proxy",
        "--port",
        "8192",
        "--prefiller-host",
        "NODE0",
        "--prefiller-port",
        "8100",
        "--decoder-host",
        "NODE1",
        "--decoder-port",
        "8200",
    ]


def test_two_roles_on_one_port_are_told_apart_by_the_kv_role_the_option_asks_for(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    """Each pod has its own ports, so prefill and decode may both keep vLLM's 8000; --prefill and --decode say
    which one each address means."""
    text = PD.replace("port = 8100\n", "").replace("port = 8200\n", "")
    command = (
        '["vllm-router", "--port", "8192", "--prefill", "http://127.0.0.1:8000", "--decode", "http://127.0.0.1:8000"]'
    )
    repo = make_repo({"pd.toml": text + f"command = {command}\n"})
    result = run("--repo", repo, "render", "pd", "--out", tmp_path, "--target", "k8s")
    assert result.code == 0, result
    assert _containers(tmp_path)["proxy"]["args"] == [
        "--port",
        "8192",
        "--prefill",
        "http://pd-prefill:8000",
        "--decode",
        "http://pd-decode:8000",
    ]


def test_a_loopback_address_no_target_can_point_anywhere_stops_that_target(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    """A local service on loopback serves the script target; in a pod nothing listens there, so k8s refuses."""
    command = (
        '["vllm-router", "--port", "8192", "--prefill", "http://127.0.0.1:${roles.prefill.serve.port}", "--decode", '
        '"http://127.0.0.1:${roles.decode.serve.port}"]'
    )
    repo = make_repo(
        {"pd.toml": PD + f'command = {command}\n\n[roles.proxy.env]\nMOONCAKE_MASTER = "127.0.0.1:50051"\n'},
        config='[vllm]\nversion = "0.33.0"\n\n[services]\nmooncake-master = 50051\n',
    )
    assert run("--repo", repo, "render", "pd", "--out", tmp_path / "script").code == 0
    for target in ("k8s", "slurm"):
        out = tmp_path / target
        result = run("--repo", repo, "render", "pd", "--out", out, "--target", target)
        assert (result.code, result.out) == (
            1,
            f"profiles/pd.toml:29:1: error loopback-unrewritable role proxy reaches MOONCAKE_MASTER=127.0.0.1:50051 "
            f"on loopback, which --target {target} cannot point at another role's host (each role has a host of its "
            "own there, and loopback is the role itself): no role of the stack listens on port 50051\n"
            "    in stack pd, role proxy\n"
            "    fix: point it at a role's port (${roles.NAME.serve.port}); a service outside the stack needs its "
            f"address on the cluster, written in a layer the {target} stacks use\n"
            "1 error, 0 warnings\n",
        ), result
        assert not out.exists()
