"""tests/lws_schema.py: the LeaderWorkerSet checks accept a minimal vLLM LWS and name what is wrong in a broken one.

The LWS facts used here are kubernetes-sigs/lws v0.10.0's (api/leaderworkerset/v1/leaderworkerset_types.go):
`size` counts the leader, LWS injects LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and LWS_WORKER_INDEX into every
container, and labels the leader pod `leaderworkerset.sigs.k8s.io/worker-index: "0"`."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.lws_schema import (
    API_VERSION,
    KUBERNETES,
    SCHEMA_FILE,
    field_path,
    lws_errors,
    lws_schema,
    pod_template_errors,
)

SOURCE_MD = SCHEMA_FILE.parent / "SOURCE.md"


def _container(role: str) -> dict[str, Any]:
    head = (
        ["vllm", "serve", "Qwen/Qwen3-235B-A22B"]
        if role == "leader"
        else ["ray", "start", "--address=$(LWS_LEADER_ADDRESS):6379", "--block"]
    )
    return {
        "name": f"vllm-{role}",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": head[:1],
        "args": [
            *head[1:],
            *(["--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"] if role == "leader" else []),
        ],
        "env": [{"name": "VLLM_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "resources": {"limits": {"nvidia.com/gpu": 8}, "requests": {"nvidia.com/gpu": "8", "memory": "512Gi"}},
        "ports": [{"containerPort": 8000, "name": "http"}] if role == "leader" else [],
    }


def _template(role: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app.kubernetes.io/name": "qwen", "app.kubernetes.io/component": role}},
        "spec": {
            "containers": [_container(role)],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}],
        },
    }


def minimal_lws() -> dict[str, Any]:
    """A two-node vLLM group: the leader serves, the worker joins the leader's Ray head at $(LWS_LEADER_ADDRESS)."""
    leader, worker = _template("leader"), _template("worker")
    worker["spec"]["containers"][0]["env"].append({"name": "RAY_PORT", "value": "6379"})
    return {
        "apiVersion": API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "qwen-decode", "labels": {"app.kubernetes.io/managed-by": "profilekit"}},
        "spec": {
            "replicas": 1,
            "startupPolicy": "LeaderCreated",
            "networkConfig": {"subdomainPolicy": "Shared"},
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": "0%"},
            },
            "leaderWorkerTemplate": {
                "size": 2,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": leader,
                "workerTemplate": worker,
            },
        },
    }


def _worker_container(doc: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = doc["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    return container


def test_a_minimal_vllm_lws_passes_both_checks() -> None:
    doc = minimal_lws()
    assert "$(LWS_LEADER_ADDRESS)" in " ".join(_worker_container(doc)["args"])
    assert lws_errors(doc) == []
    assert pod_template_errors(doc) == []


def test_the_leader_template_is_optional_and_every_default_may_be_left_out() -> None:
    doc = minimal_lws()
    group = doc["spec"]["leaderWorkerTemplate"]
    del group["leaderTemplate"], group["size"], group["restartPolicy"]
    del (
        doc["spec"]["startupPolicy"],
        doc["spec"]["networkConfig"],
        doc["spec"]["rolloutStrategy"],
        doc["spec"]["replicas"],
    )
    assert lws_errors(doc) == []
    assert pod_template_errors(doc) == []


def test_a_misspelt_spec_field_is_named() -> None:
    doc = minimal_lws()
    doc["spec"]["leaderWorkerTemplate"]["sizee"] = doc["spec"]["leaderWorkerTemplate"].pop("size")
    assert lws_errors(doc) == ["spec.leaderWorkerTemplate.sizee: unknown field"]


def test_a_misspelt_field_deep_in_a_template_fails_the_crd_schema_too() -> None:
    doc = minimal_lws()
    _worker_container(doc)["imagee"] = "vllm/vllm-openai:v0.11.0"
    assert lws_errors(doc) == [
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].imagee: unknown field",
    ]


def test_a_size_of_the_wrong_type_fails() -> None:
    doc = minimal_lws()
    doc["spec"]["leaderWorkerTemplate"]["size"] = "two"
    assert lws_errors(doc) == ["spec.leaderWorkerTemplate.size: 'two' is not of type 'integer'"]


@pytest.mark.parametrize(
    ("where", "value", "expected"),
    [
        (
            ("spec", "leaderWorkerTemplate", "restartPolicy"),
            "Always",
            "spec.leaderWorkerTemplate.restartPolicy: 'Always'",
        ),
        (("spec", "startupPolicy"), "LeaderStarted", "spec.startupPolicy: 'LeaderStarted'"),
        (("spec", "networkConfig", "subdomainPolicy"), "Unique", "spec.networkConfig.subdomainPolicy: 'Unique'"),
        (
            ("spec", "leaderWorkerTemplate", "size"),
            0,
            "spec.leaderWorkerTemplate.size: 0 is less than the minimum of 1",
        ),
        (("spec", "replicas"), 2**31, "spec.replicas: 2147483648 is greater than the maximum of 1000000"),
        (("metadata", "name"), "Qwen.decode", "metadata.name: 'Qwen.decode' does not match"),
        (("apiVersion",), "leaderworkerset.x-k8s.io/v1beta1", "apiVersion: 'leaderworkerset.x-k8s.io/v1beta1'"),
        (("kind",), "LeaderWorkerSets", "kind: 'LeaderWorkerSets'"),
    ],
)
def test_values_lws_refuses(where: tuple[str, ...], value: object, expected: str) -> None:
    doc = minimal_lws()
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    errors = lws_errors(doc)
    assert len(errors) == 1, errors
    assert errors[0].startswith(expected), errors


def test_an_int_or_string_field_takes_either_and_nothing_else() -> None:
    doc = minimal_lws()
    config = doc["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]
    config["maxUnavailable"], config["maxSurge"] = "25%", 1
    assert lws_errors(doc) == []
    config["maxSurge"] = [1]
    assert lws_errors(doc) == [
        "spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge: [1] is not valid under any of the given schemas"
    ]


def test_metadata_is_an_objects_metadata() -> None:
    doc = minimal_lws()
    doc["metadata"]["nmae"] = "x"
    doc["metadata"]["labels"]["profilekit.dev/role"] = "decode/leader"
    assert lws_errors(doc) == [
        "metadata.labels[profilekit.dev/role]: 'decode/leader' is not a valid label value",
        "metadata.nmae: unknown field",
    ]
    del doc["metadata"]
    assert lws_errors(doc) == ["(document): 'metadata' is a required property"]


def test_the_api_servers_duplicate_checks_of_list_maps_and_sets() -> None:
    doc = minimal_lws()
    container = _worker_container(doc)
    container["env"].append({"name": "VLLM_HOST_IP", "value": "10.0.0.1"})
    container["ports"] = [{"containerPort": 8000}, {"containerPort": 8000, "protocol": "TCP"}]
    errors = lws_errors(doc)
    assert [error.split(":")[0] for error in errors] == [
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].env",
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].ports",
    ], errors
    assert "duplicate item [1] (containerPort=8000, protocol='TCP'), as item [0]" in errors[1]


def test_a_misspelt_container_field_in_the_worker_template_fails_kubernetes_validate() -> None:
    doc = minimal_lws()
    _worker_container(doc)["volumeMount"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert pod_template_errors(doc) == [
        f"spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].volumeMount: unknown field (Kubernetes {KUBERNETES})"
    ]


def test_kubernetes_validate_sees_what_the_template_gets_wrong_for_its_kubernetes() -> None:
    doc = minimal_lws()
    leader = doc["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    leader["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = [8]
    leader["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] = 0
    errors = pod_template_errors(doc)
    assert len(errors) == 2, errors
    assert errors[0].startswith(
        "spec.leaderWorkerTemplate.leaderTemplate.metadata.labels[leaderworkerset.sigs.k8s.io/worker-index]"
    )
    assert errors[1].startswith(
        "spec.leaderWorkerTemplate.leaderTemplate.metadata.labels[leaderworkerset.sigs.k8s.io/worker-index]"
    )
    leader["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] = "0"
    (error,) = pod_template_errors(doc)
    assert error.startswith(
        "spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].resources.limits[nvidia.com/gpu]:"
    )


def test_the_schema_is_closed_everywhere_but_maps() -> None:
    """Every object the CRD describes field by field takes no other field once loaded; the file is left open."""
    open_objects: list[str] = []

    def walk(node: dict[str, Any], path: list[str | int]) -> None:
        if "properties" in node and node.get("additionalProperties") is not False:
            open_objects.append(field_path(path))
        for name, sub in node.get("properties", {}).items():
            walk(sub, [*path, name])
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                walk(node[key], [*path, 0 if key == "items" else "*"])

    walk(lws_schema(), [])
    assert open_objects == []
    published = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert "additionalProperties" not in published["properties"]["spec"]
    assert published["properties"]["metadata"] == {"type": "object"}


def test_the_kubernetes_version_is_the_k8s_tests() -> None:
    from tests import test_k8s

    assert KUBERNETES == test_k8s.KUBERNETES


def test_the_vendored_schema_is_the_one_source_md_names() -> None:
    """SOURCE.md holds the file's sha256; tools/vendor_lws_schema.py gives the same bytes from the CRD."""
    digest = hashlib.sha256(SCHEMA_FILE.read_bytes()).hexdigest()
    assert f"`{digest}`" in SOURCE_MD.read_text(encoding="utf-8")
    tool = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "vendor_lws_schema.py"), "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert tool.returncode == 0, tool.stderr


def test_description_stripping_keeps_a_field_called_description() -> None:
    sys.path.insert(0, str(REPO_ROOT / "tools"))
    try:
        import vendor_lws_schema
    finally:
        sys.path.remove(str(REPO_ROOT / "tools"))
    schema = {"description": "x", "properties": {"description": {"type": "string", "description": "y"}}}
    assert vendor_lws_schema.strip_descriptions(copy.deepcopy(schema)) == {
        "properties": {"description": {"type": "string"}}
    }
