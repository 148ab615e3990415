"""Manifests and units that start vLLM: Kubernetes objects, docker compose services and systemd units.

Each container, service or unit is one process: its words as its runtime hands them to the process, its
environment, and where it is written. The launch reader (launch.py) then reads the words as it reads a command
line: a `vllm serve` launch (also behind `sh -c` or a launcher) is a vLLM role, anything else a command role.

- **Kubernetes** (every document of the file): the pod template of a Pod, Deployment, StatefulSet, ReplicaSet,
  DaemonSet, Job, CronJob or LeaderWorkerSet (its leader's); each container's `command` + `args` (without a
  `command`, vLLM's image runs `vllm serve` with the args), expanded as the kubelet expands `$(NAME)` from the
  container's literal `env` values (`$$` is `$`). `valueFrom: secretKeyRef` is a secret (`{ secret = true }`);
  other `valueFrom` and `envFrom` are set at run time by Kubernetes: noted, and a problem where the words use them.
- **docker compose** (`services:`): `entrypoint` + `command` (a string split as compose splits it), vLLM's image
  running `vllm serve` without an entrypoint; `environment` (a map or `NAME=VALUE` list); compose's own
  interpolation of `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?message}` and `$$` from the `.env`
  file beside it, else the defaults (a name with neither is a problem: only the shell that runs compose knows it).
- **systemd** (`[Service]`): `ExecStart=` (its `-@:+!` prefixes dropped), split and expanded as systemd does
  (`${NAME}` one word, `$NAME` split at spaces) from `Environment=` lines; `EnvironmentFile=` and `%`
  specifiers are the unit's run time: noted, and a problem where the words use them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml

from profilekit.records import record
from profilekit.redact import is_secret_name

LINE_KEY = "__line__"  # the line a mapping of a YAML file starts on, attached by `_LineLoader`
_KIND_PODS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "LeaderWorkerSet": ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"),
}
_KUBELET = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_COMPOSE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_SYSTEMD_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_VLLM_IMAGE = re.compile(r"(^|/)[^/:]*vllm[^/:]*(:|$)")
_PASSED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")  # `NAME: ${NAME}`: compose's env


@record(slots=True)
class Process:
    """One container, service or unit: what its runtime starts."""

    name: str  # the container's, service's or unit's: the role's name
    words: list[str]
    line: int  # where its command is written (1-based)
    env: dict[str, Any] = field(default_factory=dict)  # text, or {"secret": True}
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    image: str = ""


class ManifestError(ValueError):
    """A file that looks like a manifest but cannot be read (YAML syntax); the message names the line."""


class _LineLoader(yaml.SafeLoader):
    """PyYAML's safe loader, with each mapping's first line under LINE_KEY."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep=deep)
        mapping[LINE_KEY] = node.start_mark.line + 1
        return mapping


def form_of(path: Path, text: str) -> str | None:
    """ "k8s", "compose" or "systemd" for a manifest or unit, None for a script."""
    suffix = path.suffix.lower()
    if suffix in (".service", ".socket") or re.search(r"^\[Service\]\s*$", text, re.MULTILINE):
        return "systemd"
    if suffix not in (".yaml", ".yml", ".json") and not re.match(r"\s*(apiVersion|services|version)\s*:", text):
        return None
    if re.search(r"^services\s*:", text, re.MULTILINE):
        return "compose"
    return "k8s"


def _load_all(text: str) -> list[Any]:
    try:
        return [doc for doc in yaml.load_all(text, Loader=_LineLoader) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ManifestError(f"{where}not valid YAML: {getattr(exc, 'problem', None) or exc}") from None


def _dig(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def _strings(value: Any) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(item, (str, int, float)) for item in value):
        return [str(item) for item in value]
    return None


def is_vllm_image(image: str) -> bool:
    """vLLM's image (`vllm/vllm-openai:TAG`, or a derived one named for it), whose entrypoint is `vllm serve`."""
    return bool(_VLLM_IMAGE.search(image.split("@", 1)[0]))


# ---- Kubernetes ----------------------------------------------------------------------------------------------


def read_k8s(text: str) -> list[Process]:
    processes: list[Process] = []
    for doc in _load_all(text):
        if not isinstance(doc, dict):
            continue
        kind = doc.get("kind")
        pod = _dig(doc, _KIND_PODS[kind]) if isinstance(kind, str) and kind in _KIND_PODS else None
        if kind == "LeaderWorkerSet" and pod is None:
            pod = _dig(doc, ("spec", "leaderWorkerTemplate", "workerTemplate", "spec"))
        if not isinstance(pod, dict):
            continue
        for container in pod.get("containers") or []:
            if isinstance(container, dict):
                processes.append(_container(container, str(kind)))
    return processes


def _container(container: dict[str, Any], kind: str) -> Process:
    name = str(container.get("name", "serve"))
    image = str(container.get("image", ""))
    process = Process(name, [], int(container.get(LINE_KEY, 0)), image=image)
    literal: dict[str, str] = {}
    for entry in container.get("env") or []:
        if isinstance(entry, dict):
            _k8s_env(entry, process, literal)
    if container.get("envFrom"):
        process.notes.append(f"{kind} container {name}: envFrom sets variables at run time; not imported")
    command, args = _strings(container.get("command")), _strings(container.get("args"))
    if command is None or args is None:
        process.problems.append(f"line {process.line}: container {name}: command and args must be lists of strings")
        return process
    if not command:
        if not is_vllm_image(image):
            process.notes.append(f"container {name} runs the entrypoint of {image}, which profilekit does not know")
            return process
        command = ["vllm", "serve"]
        process.notes.append(f"container {name}: {image} runs `vllm serve` with its args")
    process.words = [_kubelet_expand(word, literal, process) for word in [*command, *args]]
    return process


def _k8s_env(entry: dict[str, Any], process: Process, literal: dict[str, str]) -> None:
    name = str(entry.get("name", ""))
    source = entry.get("valueFrom")
    if isinstance(source, dict) and "secretKeyRef" in source:
        process.env[name] = {"secret": True}
        process.notes.append(f"{name} comes from a Secret (secretKeyRef): written as {{ secret = true }}")
    elif isinstance(source, dict):
        what = next(iter(k for k in source if k != LINE_KEY), "valueFrom")
        process.notes.append(f"{name} is set by Kubernetes at run time ({what}); not imported")
    elif "value" in entry:
        value = "" if entry["value"] is None else str(entry["value"])
        literal[name] = _kubelet_expand(value, literal, process)
        process.env[name] = literal[name]


def _kubelet_expand(text: str, known: dict[str, str], process: Process) -> str:
    """`$(NAME)` as the kubelet expands it from the container's env defined before (an unknown name stays as
    written: the kubelet leaves it); `$$` is `$`. A name set at run time (valueFrom) is a problem."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        if name in known:
            return known[name]
        if name in process.env:
            process.problems.append(
                f"line {process.line}: $({name}) in container {process.name}'s command is set at run time; write "
                "the value"
            )
        return match.group(0)

    return _KUBELET.sub(one, text)


# ---- docker compose ------------------------------------------------------------------------------------------


def read_compose(text: str, folder: Path) -> list[Process]:
    docs = _load_all(text)
    services = docs[0].get("services") if docs and isinstance(docs[0], dict) else None
    if not isinstance(services, dict):
        return []
    known = _dotenv(folder / ".env")
    processes: list[Process] = []
    for name, service in services.items():
        if name == LINE_KEY or not isinstance(service, dict):
            continue
        processes.append(_service(str(name), service, known))
    return processes


def _dotenv(path: Path) -> dict[str, str]:
    """The `.env` file compose reads beside the compose file (python-dotenv reads it as compose does)."""
    if not path.is_file():
        return {}
    from dotenv import dotenv_values  # noqa: PLC0415 - only a compose import with a .env reads it

    return {key: value for key, value in dotenv_values(path).items() if value is not None}


def _service(name: str, service: dict[str, Any], known: dict[str, str]) -> Process:
    process = Process(name, [], int(service.get(LINE_KEY, 0)))
    expand = _Interpolation(known, process)
    image = process.image = expand(str(service.get("image", "")))
    environment = service.get("environment") or {}
    pairs = (
        [(k, v) for k, v in environment.items() if k != LINE_KEY]
        if isinstance(environment, dict)
        else [tuple(str(item).split("=", 1)) if "=" in str(item) else (str(item), None) for item in environment]
    )
    for key, value in pairs:
        text = None if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        passed = _PASSED.fullmatch(text or "")
        if is_secret_name(str(key)) and text is not None:
            # taken from the launching environment, as `{ secret = true }` is: its value is never written
            process.env[str(key)] = {"secret": True}
        elif text is None or (passed is not None and (passed.group(1) or passed.group(2)) not in known):
            process.notes.append(f"service {name}: {key} passes on the environment compose runs in; not imported")
        else:
            process.env[str(key)] = expand(text)
    if service.get("env_file"):
        process.notes.append(f"service {name}: env_file sets variables from a file at run time; not imported")
    entrypoint = _compose_words(service.get("entrypoint"), expand)
    command = _compose_words(service.get("command"), expand)
    if entrypoint is None or command is None:
        process.problems.append(f"line {process.line}: service {name}: entrypoint and command must be strings or lists")
        return process
    if not entrypoint:
        if not is_vllm_image(image):
            if command:
                process.words = command
            else:
                process.notes.append(f"service {name} runs the entrypoint of {image}, which profilekit does not know")
            return process
        entrypoint = ["vllm", "serve"]
        process.notes.append(f"service {name}: {image} runs `vllm serve` with its command")
    process.words = [*entrypoint, *command]
    return process


def _compose_words(value: Any, expand: _Interpolation) -> list[str] | None:
    """A compose `command`/`entrypoint`: a list as given, a string split as compose splits it (shlex)."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            return shlex.split(expand(value))
        except ValueError:
            return None
    words = _strings(value)
    return None if words is None else [expand(word) for word in words]


class _Interpolation:
    """compose's interpolation of the file's values: `${NAME}`, `${NAME:-default}`, `${NAME-default}`,
    `${NAME:?message}`, `$NAME` and `$$`, from the `.env` file; else the default; else a problem."""

    def __init__(self, known: dict[str, str], process: Process) -> None:
        self.known, self.process = known, process

    def __call__(self, text: str) -> str:
        return _COMPOSE.sub(self._one, text)

    def _one(self, match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(4)
        operator, default = match.group(2), match.group(3) or ""
        value = self.known.get(name)
        if value is not None and (value or operator != ":-"):
            return value
        if operator in (":-", "-"):
            self.process.notes.append(f"service {self.process.name}: ${{{name}}} took its default {default!r}")
            return default
        self.process.problems.append(
            f"line {self.process.line}: service {self.process.name}: ${{{name}}} is only known to the shell that runs "
            "compose (no .env file sets it, and it has no default); write the value"
        )
        return match.group(0)


# ---- systemd -------------------------------------------------------------------------------------------------


def read_systemd(text: str, name: str) -> list[Process]:
    env: dict[str, str] = {}
    process = Process(name, [], 0)
    for line_no, key, value in _unit_lines(text):
        if key == "Environment":
            for word in _systemd_split(value):
                var, eq, val = word.partition("=")
                if eq:
                    env[var] = val
        elif key == "EnvironmentFile":
            process.notes.append(f"line {line_no}: EnvironmentFile={value} sets variables at run time; not imported")
        elif key == "ExecStart":
            process.line = line_no
            process.words = _exec_start(value, env, process)
    process.env = dict(env)
    return [process] if process.words else []


def _unit_lines(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, key, value) of the [Service] section, continuation lines (a trailing `\\`) joined."""
    section = ""
    pending: tuple[int, str, str] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if pending is not None:
            start, key, value = pending
            value += " " + line.removesuffix("\\").strip()
            pending = (start, key, value) if line.endswith("\\") else None
            if pending is None:
                yield start, key, value
            continue
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, eq, value = line.partition("=")
        if section != "Service" or not eq:
            continue
        if value.endswith("\\"):
            pending = (number, key.strip(), value.removesuffix("\\").strip())
        else:
            yield number, key.strip(), value.strip()


def _systemd_split(value: str) -> list[str]:
    try:
        return shlex.split(value)
    except ValueError:
        return value.split()


def _exec_start(value: str, env: dict[str, str], process: Process) -> list[str]:
    """ExecStart's words: prefixes dropped, `${NAME}` one word and `$NAME` split, as systemd.exec(5) says."""
    value = value.lstrip("-@:+!")
    if re.search(r"%[a-zA-Z]", value):
        process.problems.append(f"line {process.line}: `%` specifiers are the unit's run time; write the value")
    words: list[str] = []
    for word in _systemd_split(value):
        whole = _SYSTEMD_VAR.fullmatch(word)
        if whole is not None and whole.group(2) is not None:  # `$NAME` alone: split at whitespace
            words += env.get(whole.group(2), "").split() if whole.group(2) in env else [word]
            continue
        words.append(_SYSTEMD_VAR.sub(lambda m: _systemd_value(m, env, process), word))
    return words


def _systemd_value(match: re.Match[str], env: dict[str, str], process: Process) -> str:
    name = match.group(1) or match.group(2)
    if name in env:
        return env[name]
    process.problems.append(
        f"line {process.line}: ${{{name}}} is not set by an Environment= line of the unit; write the value"
    )
    return match.group(0)
