"""`render --target k8s`: manifests validated against the Kubernetes 1.33 schemas (kubernetes-validate, strict),
a golden copy of the example P/D stack, secrets, GPU limits, label names, the kustomization, one-host findings."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from profilekit import __version__
from profilekit.render.k8s import dns_name, label_value
from tests.conftest import REPO_ROOT, MakeRepo, Run

GOLDEN = Path(__file__).resolve().parent / "golden" / "k8s-qwen-disaggregated"
KUBERNETES = "1.33"  # the schema version the manifests are checked against (kubernetes-validate ships it offline)
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _documents(out: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        path.name: list(yaml.safe_load_all(path.read_text(encoding="utf-8"))) for path in sorted(out.glob("*.yaml"))
    }


def _validate_all(out: Path) -> list[dict[str, Any]]:
    """Every Kubernetes object written to `out`, each one valid for Kubernetes 1.33 in strict mode."""
    objects = [doc for name, docs in _documents(out).items() if name != "kustomization.yaml" for doc in docs]
    for doc in objects:
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    return objects


def _render(run: Run, repo: Path, stack: str, out: Path, *extra: str) -> None:
    result = run("--repo", repo, "render", stack, "--out", out, "--target", "k8s", *extra)
    assert result.code == 0, result


def test_the_example_pd_stack_renders_the_golden_manifests(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", out, "--target", "k8s")
    assert result.code == 0, result
    written = sorted(p.name for p in out.iterdir())
    assert written == ["decode.k8s.yaml", "kustomization.yaml", "manifest.json", "prefill.k8s.yaml", "proxy.k8s.yaml"]
    manifests = [name for name in written if name != "manifest.json"]
    for name in manifests:
        golden = GOLDEN / name
        # the golden files hold no profilekit version: a release does not change them
        text = (out / name).read_text(encoding="utf-8").replace(f"profilekit {__version__}:", "profilekit VERSION:")
        if os.environ.get("PROFILEKIT_UPDATE_GOLDEN") == "1":
            golden.parent.mkdir(exist_ok=True)
            golden.write_text(text, encoding="utf-8")
        assert text == golden.read_text(encoding="utf-8"), name
    assert sorted(p.name for p in GOLDEN.iterdir()) == manifests
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [item["path"] for item in manifest["files"]] == manifests
    objects = _validate_all(out)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Deployment", "qwen-disaggregated-decode"),
        ("Service", "qwen-disaggregated-decode"),
        ("Deployment", "qwen-disaggregated-prefill"),
        ("Service", "qwen-disaggregated-prefill"),
        ("Deployment", "qwen-disaggregated-proxy"),
        ("Service", "qwen-disaggregated-proxy"),
    ]


def test_the_proxy_reaches_prefill_and_decode_through_their_services(run: Run, tmp_path: Path) -> None:
    _render(run, REPO_ROOT, "qwen-disaggregated", tmp_path)
    (proxy, service) = _documents(tmp_path)["proxy.k8s.yaml"]
    container = proxy["spec"]["template"]["spec"]["containers"][0]
    assert [*container["command"], *container["args"]] == [
        "vllm-router",
        "--policy",
        "round_robin",
        "--vllm-pd-disaggregation",
        "--prefill",
        "http://qwen-disaggregated-prefill:8100",
        "--decode",
        "http://qwen-disaggregated-decode:8200",
        "--host",
        "0.0.0.0",
        "--port",
        "8192",
    ]
    assert "resources" not in container  # a command role asks for no GPU
    assert "readinessProbe" not in container
    assert service["spec"]["ports"] == [{"name": "http", "port": 8192, "targetPort": "http", "protocol": "TCP"}]
    services = {
        doc["metadata"]["name"]: doc["spec"]["ports"][0]["port"]
        for docs in _documents(tmp_path).values()
        for doc in docs
        if doc.get("kind") == "Service"
    }
    assert services["qwen-disaggregated-prefill"] == 8100
    assert services["qwen-disaggregated-decode"] == 8200


def test_a_pd_role_advertises_its_pod_ip_and_leaves_out_the_host_gpu_numbering(run: Run, tmp_path: Path) -> None:
    _render(run, REPO_ROOT, "qwen-disaggregated", tmp_path)
    deployment = _documents(tmp_path)["decode.k8s.yaml"][0]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {item["name"]: item for item in container["env"]}
    assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == {
        "name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
    }
    assert env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": "5601"}
    assert "CUDA_VISIBLE_DEVICES" not in env
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    health = {"path": "/health", "port": "http", "scheme": "HTTP"}
    assert container["readinessProbe"]["httpGet"] == health
    assert container["livenessProbe"]["httpGet"] == health
    assert container["ports"] == [
        {"name": "http", "containerPort": 8200, "protocol": "TCP"},
        {"name": "nixl", "containerPort": 5601, "protocol": "TCP"},
    ]
    assert container["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert deployment["spec"]["template"]["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}  # the new pod needs the old one's GPU
    assert (
        deployment["spec"]["template"]["spec"]["enableServiceLinks"] is False
    )  # no VLLM_PORT=tcp://... from a Service
    assert container["image"] == "vllm/vllm-openai:v0.33.0"
    assert container["command"] == ["vllm"]
    assert container["args"][:2] == ["serve", "Qwen/Qwen3-0.6B"]


def test_strict_validation_rejects_a_field_kubernetes_does_not_know(run: Run, tmp_path: Path) -> None:
    """The schema check is real: a misspelt field fails it."""
    _render(run, REPO_ROOT, "qwen-disaggregated", tmp_path)
    deployment = _documents(tmp_path)["prefill.k8s.yaml"][0]
    deployment["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)


SECRET_LAYERS = {
    "app.toml": """
        [serve]
        model = "Qwen/Qwen3-0.6B"
        tensor_parallel_size = 2
        pipeline_parallel_size = 2

        [env]
        HF_TOKEN = { secret = true }
        API_KEY = { secret = true }
        PLAIN = "shown"
    """,
}


def test_secrets_are_secret_key_refs_and_their_values_appear_nowhere(
    make_repo: MakeRepo, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = (
        '[vllm]\nversion = "0.33.0"\n\n[render.k8s]\nsecret_name = "team-llm"\n'
        'secret_keys = { HF_TOKEN = "hf-token" }\nimage = "registry.example/vllm:pinned"\n'
    )
    repo = make_repo(SECRET_LAYERS, config=config)
    monkeypatch.setenv("HF_TOKEN", "hf_TopSecretValue123")
    monkeypatch.setenv("API_KEY", "sk-another-secret-value")
    out = tmp_path / "out"
    _render(run, repo, "app", out)
    (deployment, _service) = _validate_all(out)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "team-llm", "key": "hf-token"}}},
        {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "team-llm", "key": "API_KEY"}}},
        {"name": "PLAIN", "value": "shown"},
    ]
    assert container["image"] == "registry.example/vllm:pinned"
    for path in out.iterdir():
        text = path.read_text(encoding="utf-8")
        assert "hf_TopSecretValue123" not in text and "sk-another-secret-value" not in text, path.name


def test_the_secret_name_defaults_to_the_stack(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    _render(run, make_repo(SECRET_LAYERS), "app", tmp_path)
    container = _documents(tmp_path)["serve.k8s.yaml"][0]["spec"]["template"]["spec"]["containers"][0]
    assert container["env"][0] == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "app-secrets", "key": "HF_TOKEN"}},
    }


def test_a_secret_name_kubernetes_refuses_is_a_config_error(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo(SECRET_LAYERS, config='[render.k8s]\nsecret_name = "Team_Secrets"\n')
    result = run("--repo", repo, "render", "app", "--out", tmp_path, "--target", "k8s")
    assert result.code == 1, result
    assert result.err == (
        "profilekit.toml:2:1: error invalid-config render.k8s.secret_name: 'Team_Secrets' is not a Kubernetes "
        "Secret name: lowercase letters, digits, '-' and '.', at most 253\n1 error, 0 warnings\n"
    )
    assert not tmp_path.joinpath("serve.k8s.yaml").exists()


def test_the_gpu_limit_is_tensor_times_pipeline_parallel_size(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    _render(run, make_repo(SECRET_LAYERS), "app", tmp_path)
    (deployment, _service) = _validate_all(tmp_path)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 4}}
    assert container["args"][-4:] == ["--tensor-parallel-size", "2", "--pipeline-parallel-size", "2"]


def test_odd_stack_names_become_valid_distinct_labels_and_names() -> None:
    assert label_value("qwen-disaggregated") == "qwen-disaggregated"  # a valid value is kept as written
    assert dns_name("qwen-disaggregated-prefill") == "qwen-disaggregated-prefill"
    odd = [
        "nemotron-replayssm+site/h100",
        "nemotron-replayssm+site_h100",
        "nemotron-replayssm/site+h100",
        "Qwen_Big.",
        "0start",
        "é-ü-中文",
        "+",
        "a" * 70,
        "a" * 71,
    ]
    labels = [label_value(text) for text in odd]
    names = [dns_name(text) for text in odd]
    for value in labels:
        assert len(value) <= 63 and LABEL_VALUE.match(value), value
    for value in names:
        assert len(value) <= 63 and DNS_1035.match(value), value
    assert len(set(labels)) == len(odd) and len(set(names)) == len(odd)  # separators alone keep them apart
    assert [label_value(text) for text in odd] == labels  # the same stack always gets the same label
    assert labels[0] == "nemotron-replayssm-site-h100-" + labels[0][-8:]


def test_a_layered_stack_name_renders_valid_manifests(run: Run, tmp_path: Path) -> None:
    _render(run, REPO_ROOT, "nemotron-replayssm+site/h100", tmp_path)
    (deployment, service) = _validate_all(tmp_path)
    labels = deployment["metadata"]["labels"]
    assert labels["app.kubernetes.io/part-of"] == label_value("nemotron-replayssm+site/h100")
    assert labels["app.kubernetes.io/component"] == "serve"
    assert deployment["metadata"]["annotations"] == {"profilekit/stack": "nemotron-replayssm+site/h100"}
    assert deployment["spec"]["selector"]["matchLabels"] == labels == service["spec"]["selector"]
    assert deployment["metadata"]["name"] == dns_name("nemotron-replayssm+site/h100-serve")


def test_the_kustomization_lists_exactly_the_manifests_written(run: Run, tmp_path: Path) -> None:
    _render(run, REPO_ROOT, "qwen-disaggregated", tmp_path)
    kustomization = _documents(tmp_path)["kustomization.yaml"]
    assert kustomization == [
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": ["decode.k8s.yaml", "prefill.k8s.yaml", "proxy.k8s.yaml"],
        }
    ]
    written = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".k8s.yaml"))
    assert kustomization[0]["resources"] == written


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (with its built-in kustomize) is not installed")
def test_kustomize_builds_every_object_of_the_stack(run: Run, tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    _render(run, REPO_ROOT, "qwen-disaggregated", tmp_path)
    built = subprocess.run([kubectl, "kustomize", str(tmp_path)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    kinds = sorted((doc["kind"], doc["metadata"]["name"]) for doc in yaml.safe_load_all(built.stdout))
    assert kinds == sorted(
        (kind, f"qwen-disaggregated-{role}")
        for kind in ("Deployment", "Service")
        for role in ("decode", "prefill", "proxy")
    )


def test_one_role_renders_its_manifest_and_keeps_the_kustomization(run: Run, tmp_path: Path) -> None:
    _render(run, REPO_ROOT, "qwen-disaggregated", tmp_path)
    before = (tmp_path / "kustomization.yaml").read_text(encoding="utf-8")
    result = run(
        "--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", tmp_path, "--target", "k8s", "--role", "decode"
    )
    assert result.code == 0, result
    assert result.out.splitlines() == [f"{tmp_path}/decode.k8s.yaml", f"{tmp_path}/manifest.json"]
    assert (tmp_path / "kustomization.yaml").read_text(encoding="utf-8") == before
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert [item["path"] for item in manifest["files"]] == [
        "decode.k8s.yaml",
        "kustomization.yaml",
        "prefill.k8s.yaml",
        "proxy.k8s.yaml",
    ]


ONE_HOST_LAYERS = {
    "pd.toml": """
        [serve]
        model = "Qwen/Qwen3-0.6B"

        [roles.prefill.serve]
        kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_producer" }

        [roles.decode.serve]
        kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_consumer" }

        [roles.decode]
        kind = "vllm"

        [roles.prefill]
        kind = "vllm"
    """,
}


def test_one_host_findings_stop_the_script_target_but_not_k8s(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    """Both roles take port 8000 and side channel 5600: a clash on one host, fine in two pods."""
    repo = make_repo(ONE_HOST_LAYERS)
    checked = run("--repo", repo, "check", "pd")
    assert checked.code == 1, checked
    assert {"host-port-shared", "pd-side-channel-port"} <= set(re.findall(r" error (\S+) ", checked.out))
    script = run("--repo", repo, "render", "pd", "--out", tmp_path / "script", "--target", "script")
    assert script.code == 1, script
    assert not (tmp_path / "script").exists()
    both = run("--repo", repo, "render", "pd", "--out", tmp_path / "both", "--target", "script,k8s")
    assert both.code == 1, both
    result = run("--repo", repo, "render", "pd", "--out", tmp_path / "k8s", "--target", "k8s")
    assert result.code == 0, result
    assert result.err == (
        "note: 2 findings (host-port-shared, pd-side-channel-port) not applied to --target k8s: each role runs "
        "in its own pod and no shell reads its env; `check` reports them for the script and env targets\n"
    )
    objects = _validate_all(tmp_path / "k8s")
    assert [o["spec"]["ports"][0]["port"] for o in objects if o["kind"] == "Service"] == [8000, 8000]


def kubelet_expand(text: str, env: dict[str, str]) -> str:
    """What the kubelet makes of a value, command word or arg: `$(NAME)` from the container's env, `$$` a `$`.

    A transcription of kubernetes/kubernetes third_party/forked/golang/expansion/expand.go (`Expand`).
    """
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = text.find(")", i + 2)
                if end != -1:
                    name = text[i + 2 : end]
                    out.append(env.get(name, f"$({name})"))
                    i = end + 1
                    continue
                out.append("$(")
                i += 2
                continue
            out.append("$" + nxt)
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


HOSTILE_ENV = "it's $HOME $(HF_TOKEN) $$ $(UNSET) $( $"


def test_values_reach_the_process_unexpanded(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    """A value no env file can hold goes to k8s as is; the kubelet's `$(NAME)` expansion leaves it as composed."""
    layer = f"""
        [serve]
        model = "Qwen/Qwen3-0.6B"
        served_model_name = {json.dumps(HOSTILE_ENV)}

        [env]
        HF_TOKEN = {{ secret = true }}
        GREETING = {json.dumps(HOSTILE_ENV)}
    """
    repo = make_repo({"app.toml": layer})
    script = run("--repo", repo, "render", "app", "--out", tmp_path / "script")
    assert script.code == 1, script
    assert "env-unrepresentable" in script.out
    _render(run, repo, "app", tmp_path / "k8s")
    (deployment, _service) = _validate_all(tmp_path / "k8s")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    seen = {"HF_TOKEN": "hf_from_the_secret"}
    for item in container["env"]:
        if "value" in item:
            seen[item["name"]] = kubelet_expand(item["value"], seen)
    assert seen["GREETING"] == HOSTILE_ENV
    args = [kubelet_expand(word, seen) for word in container["args"]]
    assert args[args.index("--served-model-name") + 1] == HOSTILE_ENV


def test_an_unknown_target_names_the_closest(run: Run, tmp_path: Path) -> None:
    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", tmp_path, "--target", "k8")
    assert result.code == 2
    assert result.err == (
        "profilekit: error: unknown render target 'k8'\n  hint: did you mean 'k8s'? targets: script, env, vllm-config, "
        "k8s, slurm\n"
    )


EDGE_LAYERS = {
    "edge.toml": """
        [serve]
        model = "Qwen/Qwen3-0.6B"

        [roles.local.serve]
        host = "127.0.0.1"
        port = 8300

        [roles.socket.serve]
        uds = "/tmp/vllm.sock"

        [roles.worker]
        kind = "command"
        command = ["python", "-m", "worker", "--target", "http://localhost:8300/v1"]

        [roles.local]
        kind = "vllm"

        [roles.socket]
        kind = "vllm"
    """,
}


def test_roles_without_a_tcp_port_get_no_service_and_loopback_binds_open(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    _render(run, make_repo(EDGE_LAYERS), "edge", tmp_path)
    docs = _documents(tmp_path)
    assert [doc["kind"] for doc in docs["socket.k8s.yaml"]] == ["Deployment"]
    assert [doc["kind"] for doc in docs["worker.k8s.yaml"]] == ["Deployment"]
    socket = docs["socket.k8s.yaml"][0]["spec"]["template"]["spec"]["containers"][0]
    assert "readinessProbe" not in socket and "ports" not in socket
    local = docs["local.k8s.yaml"][0]["spec"]["template"]["spec"]["containers"][0]
    assert local["args"][local["args"].index("--host") + 1] == "0.0.0.0"
    worker = docs["worker.k8s.yaml"][0]["spec"]["template"]["spec"]["containers"][0]
    assert worker["args"] == ["-m", "worker", "--target", "http://edge-local:8300/v1"]
    header = (tmp_path / "worker.k8s.yaml").read_text(encoding="utf-8").split("---", 1)[0]
    assert header.splitlines()[1] == "# Layers, in merge order: edge (profiles/edge.toml)."
    assert header.splitlines()[3:] == [
        "# no Service: the command names no --port",
        "# --target http://localhost:8300/v1: localhost written as edge-local, the Service of role local",
        "# the vLLM image runs this command: set images.worker in [render.k8s] for another",
    ]
    _validate_all(tmp_path)


def test_k8s_and_script_targets_render_together(run: Run, tmp_path: Path) -> None:
    _render(run, REPO_ROOT, "qwen-offload", tmp_path, "--target", "script")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "kustomization.yaml",
        "manifest.json",
        "serve.k8s.yaml",
        "serve.sh",
    ]


def test_a_misspelt_role_or_secret_in_the_k8s_table_is_named(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    config = (
        '[vllm]\nversion = "0.33.0"\n\n[render.k8s]\nimages = { serv = "mine:1", other = "theirs:1" }\n'
        'secret_keys = { HF_TOKN = "hf", API_KEY = "api" }\n'
    )
    result = run(
        "--repo", make_repo(SECRET_LAYERS, config=config), "render", "app", "--out", tmp_path, "--target", "k8s"
    )
    assert result.code == 0, result
    assert result.err.splitlines(keepends=True)[-2:] == [
        "note: profilekit.toml: [render.k8s] images.serv names no role of stack app; did you mean serve?\n",
        "note: profilekit.toml: [render.k8s] secret_keys.HF_TOKN names no secret of stack app; did you mean HF_TOKEN?\n",
    ]  # before them: the stack's warning that profilekit has no config.json for the model
    container = _documents(tmp_path)["serve.k8s.yaml"][0]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "vllm/vllm-openai:v0.33.0"


def test_one_role_binding_a_port_twice_stops_k8s_too(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    """prefill's HTTP port is its own side channel: that clash is inside one pod."""
    layer = """
        [serve]
        model = "Qwen/Qwen3-0.6B"

        [roles.prefill.serve]
        port = 5600
        kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_producer" }

        [roles.decode.serve]
        kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_consumer" }

        [roles.decode.env]
        VLLM_NIXL_SIDE_CHANNEL_PORT = "5700"

        [roles.decode]
        kind = "vllm"

        [roles.prefill]
        kind = "vllm"
    """
    out = tmp_path / "out"
    result = run("--repo", make_repo({"pd.toml": layer}), "render", "pd", "--out", out, "--target", "k8s")
    assert result.code == 1, result
    assert "error host-port-shared role prefill binds TCP port 5600 twice" in result.out
    assert not out.exists()


def test_local_data_parallel_ranks_multiply_the_gpu_limit(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    """vLLM starts data_parallel_size ranks of TP x PP GPUs each on the host (the pod), as host-gpu-count counts."""
    layer = '[serve]\nmodel = "Qwen/Qwen3-0.6B"\ntensor_parallel_size = 2\ndata_parallel_size = 3\n'
    _render(run, make_repo({"dp.toml": layer}), "dp", tmp_path)
    container = _documents(tmp_path)["serve.k8s.yaml"][0]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 6}}


def test_a_written_side_channel_host_becomes_the_pod_ip(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    layer = (
        ONE_HOST_LAYERS["pd.toml"]
        + """
        [roles.prefill.env]
        VLLM_NIXL_SIDE_CHANNEL_HOST = "10.0.0.1"
    """
    )
    _render(run, make_repo({"pd.toml": layer}), "pd", tmp_path)
    text = (tmp_path / "prefill.k8s.yaml").read_text(encoding="utf-8")
    assert "10.0.0.1" not in text.split("---", 1)[1]
    assert "# VLLM_NIXL_SIDE_CHANNEL_HOST written as the pod's IP (status.podIP): each role is its own pod\n" in text
    container = next(yaml.safe_load_all(text))["spec"]["template"]["spec"]["containers"][0]
    assert [item for item in container["env"] if item["name"] == "VLLM_NIXL_SIDE_CHANNEL_HOST"] == [
        {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    ]
