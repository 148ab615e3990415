"""The `k8s` render target: per role a Deployment and a Service (`R.k8s.yaml`), and a `kustomization.yaml`.

Each role runs in its own pod, so what ties a stack to one host in the script target changes here (README,
"Kubernetes manifests"):
- the pod's GPUs come from the `nvidia.com/gpu` limit (the GPUs vLLM starts on one host, as rules/host.py counts
  them: tensor x pipeline parallel size, times the prefill context parallel size and the local data-parallel
  ranks when set), so `CUDA_VISIBLE_DEVICES` is left out;
- a NIXL role advertises its pod's IP as `VLLM_NIXL_SIDE_CHANNEL_HOST` (`fieldRef status.podIP`);
- every loopback address (`127.0.0.1`, `localhost`, `[::1]`) by which a role reaches another (a URL, `host:port`, the
  host word of a `--X-host`/`--X-port` pair, an env value) names that role's Service, and a loopback bind (`--host 127.0.0.1`) becomes `0.0.0.0`: in a pod, loopback is the pod itself.
Secrets are `secretKeyRef`s to one Secret (`[render.k8s]` in profilekit.toml); their values never exist here.
Every `$` of a value is written `$$`, so the kubelet's `$(NAME)` expansion hands the process the value as composed.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import re
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from profilekit import __version__
from profilekit.compose.shape import Shape, role_shape
from profilekit.output import Rendered
from profilekit.quoting import comment_text
from profilekit.records import record
from profilekit.render import team
from profilekit.render.context import header_layers, health_probe, stack_context, template_context
from profilekit.render.gpus import node_selector, resource, unknown_gpu_names
from profilekit.render.hosts import (
    SIDE_CHANNEL_HOST,
    bind_every_address,
    gpu_count,
    note,
    rewrites,
    side_channel_ports,
    spliced,
)
from profilekit.render.nodes import base_argv, node_words, overridden
from profilekit.render.templating import to_yaml
from profilekit.rules.host import DEVICES, option_word

if TYPE_CHECKING:
    from pathlib import Path

    from profilekit.compose.model import RoleConfig, Stack
    from profilekit.hardware import Gpu
    from profilekit.load.layerdata import K8sSection
    from profilekit.render.templating import Sandbox
    from profilekit.vllm.catalogue import Catalogue

KUSTOMIZATION = "kustomization.yaml"
PART_OF = "app.kubernetes.io/part-of"
COMPONENT = "app.kubernetes.io/component"
MANAGED_BY = "app.kubernetes.io/managed-by"
STACK_ANNOTATION = "profilekit/stack"
_LIMIT = 63  # a DNS label, and a label value, hold at most 63 characters
_NOT_DNS = re.compile(r"[^a-z0-9-]+")
_DNS = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")  # DNS-1035: Service names start with a letter
_NOT_LABEL = re.compile(r"[^A-Za-z0-9._-]+")
_LABEL = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_STARTUP_SECONDS = 1800  # model download and load: the liveness probe waits this long for the first /health


def file_name(role: str) -> str:
    return f"{role}.k8s.yaml"


def _fit(text: str, *, bad: re.Pattern[str], good: re.Pattern[str], lower: bool) -> str:
    """`text` when it is already valid, else its valid characters plus a hash of `text`: deterministic, and two
    texts that differ only in what was replaced (`a+b`, `a/b`) still get different names."""
    if len(text) <= _LIMIT and good.match(text):
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    base = bad.sub("-", text.lower() if lower else text).strip("-._")
    base = base[: _LIMIT - len(digest) - 1].rstrip("-._")
    if lower and not base[:1].isalpha():
        base = ("x-" + base).rstrip("-")[: _LIMIT - len(digest) - 1].rstrip("-")
    return f"{base}-{digest}" if base else f"x{digest}" if lower else digest


def dns_name(text: str) -> str:
    """`text` as a DNS-1035 label (the strictest name a Deployment, Service or container takes)."""
    return _fit(text, bad=_NOT_DNS, good=_DNS, lower=True)


def label_value(text: str) -> str:
    """`text` as a Kubernetes label value: at most 63 of `[A-Za-z0-9._-]`, starting and ending alphanumeric."""
    return _fit(text, bad=_NOT_LABEL, good=_LABEL, lower=False)


@record(slots=True)
class _Pod:
    """What one role's manifests are built from."""

    role: RoleConfig
    name: str  # the Deployment's and the Service's
    labels: dict[str, str]
    argv: list[str]
    port: int | None  # the TCP port of its HTTP server (vLLM) or of its command's --port
    scheme: str = "HTTP"
    side_channel: list[int] = field(default_factory=list)  # NIXL side-channel ports (one per data-parallel rank)
    notes: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # env values whose loopback addresses name another Service
    gpu: Gpu | None = None  # the GPU it declares ([hardware] gpu)
    shape: Shape | None = None  # set when the role spans several nodes: a LeaderWorkerSet of `shape.nodes` pods


def render_k8s(
    stack: Stack,
    chosen: list[RoleConfig],
    *,
    version: str,
    catalogue: Catalogue | None,
    settings: K8sSection,
    root: Path | None,
    templates: Sandbox | None = None,
) -> dict[str, Rendered]:
    """`R.k8s.yaml` per chosen role, and `kustomization.yaml` when every role of the stack is chosen.

    A team's `k8s.yaml.j2` and `kustomization.yaml.j2` (targets/team.py) replace them, given what is computed here.
    """
    pods = {
        role.name: _pod(stack, role, version=version, catalogue=catalogue, root=root) for role in stack.roles.values()
    }
    _point_at_services(stack, pods, version=version, root=root)
    files: dict[str, Rendered] = {}
    for role in chosen:
        pod = pods[role.name]
        docs = _documents(stack, pod, version=version, settings=settings)
        header = _header(stack, pod, version)
        text = header + _dump(docs)
        if templates is not None and team.team_template(templates, team.K8S):
            text = team.render_yaml(templates, team.K8S, _pod_context(stack, pod, docs, header, version), k8s=True)
        files[file_name(role.name)] = Rendered(text)
    if len(chosen) == len(stack.roles):
        kustomization = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [file_name(name) for name in sorted(stack.roles)],
        }
        head = (
            f"# profilekit {__version__}: the manifests of stack {comment_text(stack.spec)} (vLLM {version}); "
            "overlay them here\n"
            f"# Layers, in merge order: {header_layers(stack)}.\n"
        )
        text = head + _dump([kustomization])
        if templates is not None and team.team_template(templates, team.KUSTOMIZATION):
            context = {
                **stack_context(stack, version),
                "header": head,
                "resources": list(kustomization["resources"]),
                "document": copy.deepcopy(kustomization),
                "yaml": _dump([kustomization]),
            }
            text = team.render_yaml(templates, team.KUSTOMIZATION, context, k8s=True)
        files[KUSTOMIZATION] = Rendered(text)
    return files


def _pod_context(stack: Stack, pod: _Pod, docs: list[dict[str, Any]], header: str, version: str) -> dict[str, Any]:
    """What `k8s.yaml.j2` is given for one role: its parts, and the documents written without it (and as YAML)."""
    spec = docs[0]["spec"]
    template = spec["leaderWorkerTemplate"]["leaderTemplate"] if pod.shape is not None else spec["template"]
    container = template["spec"]["containers"][0]
    return {
        **template_context(stack, pod.role, version),
        "header": header,
        "name": pod.name,
        "labels": dict(pod.labels),
        "argv": list(pod.argv),
        "env": copy.deepcopy(container.get("env", [])),
        "image": container["image"],
        "gpus": gpu_count(pod.role),
        "nodes": pod.shape.nodes if pod.shape is not None else 1,
        "gpu": pod.gpu.name if pod.gpu is not None else None,
        "gpu_resource": resource(pod.gpu),
        "port": pod.port,
        "side_channel_ports": list(pod.side_channel),
        "documents": copy.deepcopy(docs),
        "yaml": _dump(docs),
    }


def misspelt_settings(stack: Stack, settings: K8sSection) -> list[str]:
    """`[render.k8s]` keys that name no role (images) or secret (secret_keys) of the stack but one close to it.

    The table serves every stack of the repository, so a name another stack has is not reported; only a near
    miss of this stack's names, which is most likely a typo.
    """
    secrets = {name for role in stack.roles.values() for name, value in role.env.items() if isinstance(value, dict)}
    notes: list[str] = []
    for table, names, what in (("images", set(stack.roles), "role"), ("secret_keys", secrets, "secret")):
        for key in getattr(settings, table):
            close = difflib.get_close_matches(key, sorted(names), n=1)
            if key not in names and close:
                notes.append(
                    f"profilekit.toml: [render.k8s] {table}.{key} names no {what} of stack {stack.spec}; "
                    f"did you mean {close[0]}?"
                )
    return notes + unknown_gpu_names("render.k8s.node_selectors", list(settings.node_selectors), sorted(stack.gpus))


def _dump(docs: list[dict[str, Any]]) -> str:
    return "".join("---\n" + to_yaml(doc) for doc in docs)


def _header(stack: Stack, pod: _Pod, version: str) -> str:
    lines = [
        f"# profilekit {__version__}: role {comment_text(pod.role.name)} of stack {comment_text(stack.spec)} "
        f"(vLLM {version})",
        f"# Layers, in merge order: {header_layers(stack)}.",
        f"# regenerate with `profilekit render {comment_text(stack.spec)} --target k8s`; change it with a kustomize "
        "overlay, not by hand",
        *(f"# {comment_text(note)}" for note in pod.notes),
    ]
    return "\n".join(lines) + "\n"


def _pod(stack: Stack, role: RoleConfig, *, version: str, catalogue: Catalogue | None, root: Path | None) -> _Pod:
    stack_label = label_value(stack.spec)
    labels = {PART_OF: stack_label, COMPONENT: label_value(role.name), MANAGED_BY: "profilekit"}
    pod = _Pod(role, dns_name(f"{stack.spec}-{role.name}"), labels, base_argv(role, catalogue), None)
    pod.gpu = stack.gpu(role.name)
    pod.shape = role_shape(role)
    if pod.shape is not None:
        pod.notes.append(
            f"{pod.shape.describe()}: a LeaderWorkerSet of {pod.shape.nodes} pods; the leader (node rank 0) serves the "
            "API, each worker runs --headless with its node rank from LWS_WORKER_INDEX; --master-addr is the "
            "leader's address (LWS_LEADER_ADDRESS)"
        )
        pod.notes += overridden(role)
    if role.is_vllm:
        kind, _address, port = health_probe(role, catalogue)
        if kind == "unix":
            pod.notes.append("no Service and no probes: serve.uds puts the API server on a Unix socket")
        else:
            pod.port, pod.scheme = int(port), kind.upper()
        pod.side_channel = side_channel_ports(role, version, root)
        if pod.side_channel and SIDE_CHANNEL_HOST in role.env:
            pod.notes.append(f"{SIDE_CHANNEL_HOST} written as the pod's IP (status.podIP): each role is its own pod")
    else:
        found = option_word(pod.argv, "--port")
        if found is not None and found[1].isdigit():
            pod.port = int(found[1])
        else:
            pod.notes.append("no Service: the command names no --port")
    bind_every_address(pod.argv, pod.notes, "the Service reaches the pod")
    if DEVICES in role.env:
        pod.notes.append(f"{DEVICES} left out: the pod gets its GPUs from the {resource(pod.gpu)} limit")
    return pod


def _point_at_services(stack: Stack, pods: dict[str, _Pod], *, version: str, root: Path | None) -> None:
    """Every loopback address a role uses to reach another role (a URL, `host:port`, a `--X-host` word, an env value)
    names that role's Service instead; each rewrite is a note of the manifest (render/hosts.py `rewrites`)."""
    items = list(pods.values())
    plans = rewrites(
        stack,
        [pod.role for pod in items],
        [{*([pod.port] if pod.port is not None else []), *pod.side_channel} for pod in items],
        [pod.argv for pod in items],
        target="k8s",
        version=version,
        root=root,
    )
    for pod, plan in zip(items, plans, strict=True):

        def service(index: int) -> str:
            return items[index].name

        for at, word in enumerate(pod.argv):
            here = [rewrite for rewrite in plan if not rewrite.endpoint.env and rewrite.endpoint.host_at == at]
            if here:
                pod.argv[at] = spliced(word, here, service, str)
        for name, value in pod.role.env.items():
            here = [rewrite for rewrite in plan if rewrite.endpoint.env == name]
            if here and isinstance(value, str):
                pod.env[name] = spliced(value, here, service, str)
        pod.notes += [
            note(rewrite, f"{service(rewrite.index)}, the Service of role {items[rewrite.index].role.name}")
            for rewrite in plan
        ]


def literal(text: str) -> str:
    """`text` as Kubernetes must be given it to pass it on unchanged: the kubelet expands `$(NAME)` in env values,
    command and args, and reads `$$` as `$`, so every `$` is doubled."""
    return text.replace("$", "$$")


def _env(pod: _Pod, secret: str, keys: dict[str, str]) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = []
    for name, value in pod.role.env.items():
        if name == DEVICES or (pod.side_channel and name == SIDE_CHANNEL_HOST):
            continue
        if isinstance(value, dict):  # { secret = true }
            env.append({"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": keys.get(name, name)}}})
        else:
            env.append({"name": name, "value": literal(pod.env.get(name, value))})
    if pod.side_channel:
        env.append({"name": SIDE_CHANNEL_HOST, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    return env


LWS_LEADER = "$(LWS_LEADER_ADDRESS)"  # LWS sets it in every pod of a group: the leader pod's address
LWS_INDEX = "$(LWS_WORKER_INDEX)"  # 0 in the leader, 1..size-1 in the workers
# the labels LWS sets on the pods of a set (lws v0.10.0 api/leaderworkerset/v1/leaderworkerset_types.go): the
# leader is the pod of worker index "0", as LWS's own leader selectors select it
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_LEADER_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


def _container(pod: _Pod, *, image: str, secret: str, keys: dict[str, str], node: str = "") -> dict[str, Any]:
    """The role's container; `node` is "leader" or "worker" for a pod of a LeaderWorkerSet ("" for a Deployment's).

    A node's own words (render/nodes.py) reach the process through the kubelet's `$(NAME)` expansion, so they are
    written as they are; every other word is `literal`."""
    worker = node == "worker"
    own = node_words(LWS_INDEX if worker else "0", LWS_LEADER, headless=worker) if node else []
    container: dict[str, Any] = {
        "name": dns_name(pod.role.name),
        "image": image,
        "command": [literal(word) for word in pod.argv[:1]],
        "args": [*(literal(word) for word in pod.argv[1:]), *own],
    }
    env = _env(pod, secret, keys)
    if env:
        container["env"] = env
    serves = pod.port is not None and not worker  # a headless worker serves no API
    ports = [{"name": "http", "containerPort": pod.port, "protocol": "TCP"}] if serves and pod.port is not None else []
    for rank, port in enumerate(pod.side_channel[: _local_ranks(pod)]):
        ports.append({"name": "nixl" if rank == 0 else f"nixl-{rank}", "containerPort": port, "protocol": "TCP"})
    if ports:
        container["ports"] = ports
    gpus = gpu_count(pod.role)
    if gpus:
        container["resources"] = {"limits": {resource(pod.gpu): gpus}}
    if pod.role.is_vllm and pod.port is not None and serves:
        get = {"path": "/health", "port": "http", "scheme": pod.scheme}
        container["startupProbe"] = {"httpGet": get, "periodSeconds": 10, "failureThreshold": _STARTUP_SECONDS // 10}
        container["readinessProbe"] = {"httpGet": get, "periodSeconds": 5, "failureThreshold": 3}
        container["livenessProbe"] = {"httpGet": get, "periodSeconds": 10, "failureThreshold": 3}
    container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return container


def _local_ranks(pod: _Pod) -> int:
    """How many data-parallel ranks (NIXL side channels) one pod runs: all of them, or a node's share."""
    shape = pod.shape
    if shape is None:
        return len(pod.side_channel)
    return max(shape.gpus_per_node // shape.world, 1) if shape.dp > 1 else 1


def _node_selector(pod: _Pod, settings: K8sSection) -> dict[str, str]:
    """The nodes a GPU role's pod may run on, from the GPU it declares; a note says which and why."""
    count = gpu_count(pod.role)
    if not count:
        return {}
    if pod.gpu is None:
        pod.notes.append(f"{count} {resource(None)} on any node: no GPU declared ([hardware] gpu), so no node selector")
        return {}
    labels, origin = node_selector(pod.gpu, settings.node_selectors)
    chosen = ", ".join(f"{key}={value}" for key, value in labels.items())
    where = f"node selector {chosen} ({origin})" if labels else f"node selector {origin}"
    pod.notes.append(f"{count} x {pod.gpu.name} ({resource(pod.gpu)}); {where}")
    return labels


def _documents(stack: Stack, pod: _Pod, *, version: str, settings: K8sSection) -> list[dict[str, Any]]:
    image = settings.images.get(pod.role.name) or settings.image or f"vllm/vllm-openai:v{version}"
    if not pod.role.is_vllm and pod.role.name not in settings.images:
        pod.notes.append(f"the vLLM image runs this command: set images.{pod.role.name} in [render.k8s] for another")
    secret = settings.secret_name or dns_name(f"{stack.spec}-secrets")
    selector = _node_selector(pod, settings)
    metadata = {"name": pod.name, "labels": pod.labels, "annotations": {STACK_ANNOTATION: stack.spec}}

    def pod_spec(node: str = "") -> dict[str, Any]:
        return {
            # Service links put `<SERVICE>_PORT=tcp://...` into the env: a Service named `vllm` sets
            # VLLM_PORT, which vLLM reads (vllm/envs.py get_vllm_port refuses a URI); the DNS names suffice
            "enableServiceLinks": False,
            **({"nodeSelector": selector} if selector else {}),
            "containers": [_container(pod, image=image, secret=secret, keys=settings.secret_keys, node=node)],
            # vLLM's workers share tensors through /dev/shm; a container's default is 64 MiB
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        }

    workload = _workload(pod, metadata, pod_spec)
    if pod.port is None:
        return [workload]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            # a LeaderWorkerSet's Service reaches its leader only: the workers serve no API
            "selector": {**pod.labels, LWS_NAME_LABEL: pod.name, LWS_LEADER_LABEL: "0"} if pod.shape else pod.labels,
            "ports": [{"name": "http", "port": pod.port, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    return [workload, service]


def _workload(pod: _Pod, metadata: dict[str, Any], pod_spec: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """A Deployment of one pod, or for a role that spans nodes a LeaderWorkerSet of one group of `nodes` pods."""
    if pod.shape is None:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": metadata,
            "spec": {
                "replicas": 1,
                # a rolling update starts the new pod first, and it would wait for GPUs the old one holds
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": pod.labels},
                "template": {"metadata": {"labels": pod.labels}, "spec": pod_spec("")},
            },
        }
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": metadata,
        "spec": {
            "replicas": 1,
            # the workers start with the leader, not after it is ready: the leader waits for them to load
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": pod.shape.nodes,
                # one lost pod breaks the torch.distributed group: the whole group starts again
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {"metadata": {"labels": pod.labels}, "spec": pod_spec("leader")},
                "workerTemplate": {"metadata": {"labels": pod.labels}, "spec": pod_spec("worker")},
            },
        },
    }
