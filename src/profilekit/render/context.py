"""What every render target shares: the target names, each role's full command, the context every template is
given, how a vLLM role is asked for `/health`, and whether the roles need several hosts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from profilekit import __version__
from profilekit.compose.model import RoleConfig, Stack
from profilekit.errors import Finding
from profilekit.quoting import comment_text
from profilekit.rules.host import host_of
from profilekit.vllm.argv import render_argv
from profilekit.vllm.catalogue import Catalogue

DEFAULT_TARGETS = ("script", "env")


VLLM_CONFIG = "vllm-config"


TARGETS = (*DEFAULT_TARGETS, VLLM_CONFIG, "k8s", "slurm")


# targets that run every role in a pod of its own, whose env no bash and no env file reads
POD_TARGETS = frozenset({"k8s"})


# targets that run every role on a host of its own (a pod, a SLURM node)
SEPARATE_HOST_TARGETS = POD_TARGETS | {"slurm"}


UP_SCRIPT = "up.sh"


DEFAULT_HTTP_PORT = 8000  # vLLM's `--port` default in every supported release


_WILDCARD = {"", "0.0.0.0", "::", "[::]", "*"}


def builtin_templates() -> Path:
    """The templates shipped in the wheel, or the source checkout's top-level `templates/`.

    Found beside the package, not through importlib.resources (tempfile, shutil and random with it, for a
    folder that always lies there: wheels install unpacked)."""
    packaged = Path(__file__).resolve().parents[1] / "templates"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "templates"


def role_argv(role: RoleConfig, catalogue: Catalogue | None) -> list[str]:
    """The full command of a role: `vllm serve MODEL ARGS...` or its own command."""
    if role.command is not None:
        return list(role.command)
    return ["vllm", "serve", *render_argv(role.serve, catalogue)]


def stack_context(stack: Stack, version: str) -> dict[str, Any]:
    """What every template of a stack is given: the versions, and the stack and its layers as comment text."""
    return {
        "profilekit_version": __version__,
        # free text that templates write into `#` comments: a layer's file name may hold a newline
        "stack": comment_text(stack.spec),
        "layers": header_layers(stack),
        "vllm_version": version,
    }


def template_context(stack: Stack, role: RoleConfig, version: str) -> dict[str, Any]:
    """What every template of one role is given: `stack_context` and the role's name as comment text."""
    return {**stack_context(stack, version), "role": comment_text(role.name)}


def header_layers(stack: Stack) -> str:
    """The layers of a stack in merge order, each with its file, for one `#` comment line of a header."""
    return comment_text(", ".join(f"{layer.name} ({layer.file})" for layer in stack.layers))


def several_hosts(roles: list[RoleConfig]) -> str | None:
    """Why the roles cannot all start on one host (up.sh does not apply), or None.

    Roles name their host with `VLLM_NIXL_SIDE_CHANNEL_HOST`, as the one-host rules read it (rules/host.py).
    """
    hosts = {role.name: host for role in roles if (host := host_of(role)) is not None}
    if len(set(hosts.values())) < 2:
        return None
    named = ", ".join(f"{name} on {host}" for name, host in hosts.items())
    return f"{UP_SCRIPT} not written: the roles run on several hosts ({named}, by VLLM_NIXL_SIDE_CHANNEL_HOST)"


def health_probe(role: RoleConfig, catalogue: Catalogue | None) -> tuple[str, str, str]:
    """How up.sh asks a vLLM role for `/health`: (http | https | unix, address or socket path, port).

    A wildcard bind address (vLLM's default binds every address) is asked on the loopback address.
    """
    serve = role.serve
    uds = serve.get("uds")
    if isinstance(uds, str) and uds:
        return "unix", uds, ""
    host = serve.get("host")
    address = host.strip() if isinstance(host, str) else ""
    if address in _WILDCARD:
        address = "::1" if address in {"::", "[::]"} else "127.0.0.1"
    address = address.removeprefix("[").removesuffix("]")
    port = serve.get("port")
    if not isinstance(port, int) or isinstance(port, bool):
        flag = catalogue.flag("port") if catalogue is not None else None
        port = flag.default if flag is not None and isinstance(flag.default, int) else DEFAULT_HTTP_PORT
    kind = "https" if serve.get("ssl_certfile") else "http"
    return kind, address, str(port)


class ConfigUnwritable(Exception):
    """A role whose options no config file can hold: the finding to report instead of its files."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


class LoopbackUnrewritable(Exception):
    """Loopback addresses of a stack that a target where each role has a host of its own cannot point anywhere
    (render/hosts.py `rewrites`): the findings to report instead of the target's files."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("; ".join(finding.message for finding in findings))
        self.findings = findings
