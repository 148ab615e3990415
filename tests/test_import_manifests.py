"""`import` of what teams deploy with (issue 29): Kubernetes manifests, docker compose files, systemd units, and a
P/D set of scripts as one layer with a role each.

The words each process gets are what its runtime hands it: the kubelet's `$(NAME)` expansion (checked against the
transcription of the kubelet's own in tests/test_k8s.py), compose's interpolation, systemd's splitting; then the
launch is read as a command line is.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from profilekit.importing.manifests import Process, _kubelet_expand
from tests.conftest import MakeRepo, Run
from tests.test_k8s import kubelet_expand

MODEL = "Qwen/Qwen3-0.6B"
DEPLOYMENT = f"""\
apiVersion: v1
kind: Service
metadata: {{name: qwen}}
spec: {{ports: [{{port: 8000}}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: qwen
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          env:
            - name: MODEL
              value: {MODEL}
            - name: HF_TOKEN
              valueFrom:
                secretKeyRef: {{name: hf, key: token}}
            - name: POD_IP
              valueFrom:
                fieldRef: {{fieldPath: status.podIP}}
            - name: VLLM_LOGGING_LEVEL
              value: DEBUG
          args: ["$(MODEL)", "--max-num-seqs", "32", "--served-model-name", "$$(MODEL)"]
          resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""
SH_C = f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: qwen}}
spec:
  template:
    spec:
      containers:
        - name: server
          image: python:3.12
          env:
            - {{name: PORT, value: "8100"}}
          command: ["/bin/bash", "-exc"]
          args:
            - |
              pip install vllm
              python3 -m vllm.entrypoints.openai.api_server --model {MODEL} --port ${{PORT}}
"""
COMPOSE = """\
services:
  prefill:
    image: vllm/vllm-openai:${TAG:-v0.33.0}
    command: >
      ${MODEL} --port 8100
      --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'
    environment:
      HF_TOKEN: ${HF_TOKEN}
      VLLM_NIXL_SIDE_CHANNEL_PORT: "5600"
      UCX_TLS: all
  decode:
    image: vllm/vllm-openai:${TAG:-v0.33.0}
    command: ["${MODEL}", "--port", "8200", "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}']
    environment:
      - VLLM_NIXL_SIDE_CHANNEL_PORT=5601
      - UCX_TLS=all
      - HF_TOKEN
  proxy:
    image: router:latest
    command: vllm-router --prefill http://prefill:8100 --decode http://decode:8200 --port 9000 --price $$5
"""
UNIT = f"""\
[Unit]
Description=vLLM

[Service]
Environment="MODEL={MODEL}" "ARGS=--max-num-seqs 16 --seed 3"
Environment=VLLM_LOGGING_LEVEL=INFO
ExecStart=-/opt/vllm/bin/vllm serve ${{MODEL}} $ARGS \\
    --port 8300
Restart=always

[Install]
WantedBy=multi-user.target
"""


def _import(make_repo: MakeRepo, run: Run, tmp_path: Path, files: dict[str, str], *args: str) -> tuple[Any, Any]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    repo = make_repo({})
    result = run("--repo", repo, "import", "--name", "imported", *args, cwd=tmp_path)
    layer = (repo / "profiles" / "imported.toml").read_text(encoding="utf-8") if result.code in (0, 1) else ""
    return result, tomllib.loads(layer) if layer else {}


def test_a_deployment_is_read_as_the_kubelet_hands_it_over(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    result, layer = _import(make_repo, run, tmp_path, {"deploy.yaml": DEPLOYMENT}, "deploy.yaml")
    assert result.code == 0, result
    assert layer["serve"] == {"model": MODEL, "max_num_seqs": 32, "served_model_name": ["$(MODEL)"]}
    assert layer["env"] == {"MODEL": MODEL, "HF_TOKEN": {"secret": True}, "VLLM_LOGGING_LEVEL": "DEBUG"}
    assert "POD_IP is set by Kubernetes at run time (fieldRef); not imported" in result.err
    assert "vllm/vllm-openai:v0.33.0 runs `vllm serve` with its args" in result.err


def test_a_containers_sh_c_string_sees_the_containers_env(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    result, layer = _import(make_repo, run, tmp_path, {"deploy.yaml": SH_C}, "deploy.yaml")
    assert result.code == 0, result
    assert layer["serve"] == {"model": MODEL, "port": 8100}
    assert "`pip install vllm` runs beside the launch and changes neither its argv nor its env" in result.err


@pytest.mark.parametrize(
    "text",
    ["$(A)", "$$(A)", "$(A)$(B)", "$(UNKNOWN)", "$$$(A)", "a$(A", "$(A)-$$-$(B)", "$$$$(A)", "$", "$(A.B)"],
)
def test_the_kubelet_expansion_is_the_kubelets(text: str) -> None:
    known = {"A": "x", "B": "$(A)"}
    assert _kubelet_expand(text, known, Process("c", [], 1)) == kubelet_expand(text, known)


def test_a_compose_file_is_one_layer_with_a_role_per_service(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    files = {"compose.yaml": COMPOSE, ".env": f"MODEL={MODEL}\n"}
    result, layer = _import(make_repo, run, tmp_path, files, "compose.yaml")
    assert result.code == 0, result
    assert layer["serve"] == {"model": MODEL}  # what both vLLM services share
    roles = layer["roles"]
    assert list(roles) == ["prefill", "decode", "proxy"]
    assert roles["prefill"]["serve"]["port"] == 8100
    assert roles["prefill"]["serve"]["kv_transfer_config"] == {
        "kv_connector": "NixlConnector",
        "kv_role": "kv_producer",
    }
    assert roles["prefill"]["env"] == {
        "HF_TOKEN": {"secret": True},
        "VLLM_NIXL_SIDE_CHANNEL_PORT": "5600",
        "UCX_TLS": "all",
    }
    assert roles["decode"]["env"] == {"VLLM_NIXL_SIDE_CHANNEL_PORT": "5601", "UCX_TLS": "all"}
    assert "service decode: HF_TOKEN passes on the environment compose runs in; not imported" in result.err
    # the router's URLs name the vLLM roles' ports: references, so they follow a moved port
    assert roles["proxy"] == {
        "kind": "command",
        "command": [
            "vllm-router", "--prefill", "http://prefill:${roles.prefill.serve.port}", "--decode",
            "http://decode:${roles.decode.serve.port}", "--port", "9000", "--price", "$5",
        ],
    }  # fmt: skip
    checked = run("--repo", tmp_path / "repo", "render", "imported", "--target", "k8s", "--out", tmp_path / "out")
    assert checked.code == 0, checked


def test_a_compose_variable_only_the_shell_knows_is_a_problem(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    result, _layer = _import(make_repo, run, tmp_path, {"compose.yaml": COMPOSE}, "compose.yaml")
    assert result.code == 2
    assert "service prefill: ${MODEL} is only known to the shell that runs compose" in result.err


def test_a_systemd_unit_is_split_and_expanded_as_systemd_does(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    result, layer = _import(make_repo, run, tmp_path, {"vllm.service": UNIT}, "vllm.service")
    assert result.code == 0, result
    assert layer["serve"] == {"model": MODEL, "max_num_seqs": 16, "seed": 3, "port": 8300}
    assert layer["env"] == {"MODEL": MODEL, "ARGS": "--max-num-seqs 16 --seed 3", "VLLM_LOGGING_LEVEL": "INFO"}


PREFILL = f"""#!/bin/bash
export UCX_TLS=all
export VLLM_NIXL_SIDE_CHANNEL_PORT=5600
vllm serve {MODEL} --port 8100 --gpu-memory-utilization 0.8 \\
  --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_producer"}}'
"""
DECODE = PREFILL.replace("5600", "5601").replace("8100", "8200").replace("kv_producer", "kv_consumer")
PROXY = """#!/bin/bash
export ROUTER_API_KEY=s3cr3t-router
python3 toy_proxy_server.py --port 8192 --prefiller-hosts localhost --prefiller-ports 8100 \\
  --decoder-hosts localhost --decoder-ports 8200
"""


def test_a_pd_set_of_scripts_is_one_stack(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    files = {"start_prefill.sh": PREFILL, "start_decode.sh": DECODE, "proxy.sh": PROXY}
    result, layer = _import(make_repo, run, tmp_path, files, "start_prefill.sh", "start_decode.sh", "proxy.sh")
    assert result.code == 0, result
    assert layer["serve"] == {"model": MODEL, "gpu_memory_utilization": 0.8}
    assert list(layer["roles"]) == ["prefill", "decode", "proxy"]
    assert layer["roles"]["proxy"]["command"][0] == "python3"
    assert layer["roles"]["proxy"]["env"] == {"ROUTER_API_KEY": {"secret": True}}  # a secret, as in a vLLM role
    assert "proxy.sh: imported as role proxy, a command (it starts no vLLM server)" in result.err
    # rendering each role gives back its launch
    out = tmp_path / "out"
    rendered = run("--repo", tmp_path / "repo", "render", "imported", "--out", out, "--print", "--role", "prefill")
    assert rendered.code == 0, rendered
    assert "--port 8100" in rendered.out and "--gpu-memory-utilization 0.8" in rendered.out


def test_roles_named_on_the_command_line(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    files = {"a.sh": PREFILL, "b.sh": DECODE}
    result, layer = _import(make_repo, run, tmp_path, files, "--role", "p=a.sh", "--role", "d=b.sh")
    assert result.code == 0, result
    assert list(layer["roles"]) == ["p", "d"]
    bad = run("--repo", tmp_path / "repo", "import", "--role", "x", cwd=tmp_path)
    assert bad.code == 2 and "--role x: write NAME=FILE" in bad.err


README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## Import what runs today: manifests, compose files, P/D scripts"


def test_the_readme_import_section_is_a_real_session(run: Run, tmp_path: Path) -> None:
    """Every command the README's import section shows prints, run in order in a fresh repository, what it shows."""
    from tests.test_guide import walk_guide

    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    assert run("init", str(tmp_path), "--vllm-version", "0.33.0").code == 0
    shown, printed = walk_guide(section, tmp_path)
    assert len(shown) == 7
    assert printed == shown
