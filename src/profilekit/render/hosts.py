"""What changes when every role runs on a host of its own (a Kubernetes pod, a SLURM node): loopback addresses of
other roles, bind addresses, GPU counts, NIXL side channels (shared by the k8s and slurm targets)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from profilekit.compose.model import RoleConfig
from profilekit.rules.facts import NIXL_CONNECTORS, role_facts
from profilekit.rules.host import gpu_need
from profilekit.rules.pd import DEFAULT_SIDE_CHANNEL_PORT, pd_connector

SIDE_CHANNEL_HOST = "VLLM_NIXL_SIDE_CHANNEL_HOST"
SIDE_CHANNEL_PORT = "VLLM_NIXL_SIDE_CHANNEL_PORT"
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")
LOOPBACK_PORT = re.compile(r"(?<![\w.\-])(127\.0\.0\.1|localhost|\[::1\]):(\d+)(?!\d)")


def side_channel_ports(role: RoleConfig, version: str, root: Path | None) -> list[int]:
    """The NIXL side-channel ports of a role with a NIXL connector (base + data-parallel rank), else []."""
    connector = pd_connector(role_facts(role, version, root))
    if connector is None or connector.name not in NIXL_CONNECTORS:
        return []
    raw = role.env.get(SIDE_CHANNEL_PORT)
    base = int(raw) if isinstance(raw, str) and raw.strip().isdigit() else DEFAULT_SIDE_CHANNEL_PORT
    dp = role.serve.get("data_parallel_size", 1)
    ranks = dp if isinstance(dp, int) and not isinstance(dp, bool) and dp > 0 else 1
    return list(range(base, base + ranks))


def bind_every_address(argv: list[str], notes: list[str], why: str) -> None:
    """`--host 127.0.0.1` binds the loopback of the pod or node, where no other reaches: bind every address."""
    for index, word in enumerate(argv):
        if word == "--host" and index + 1 < len(argv) and argv[index + 1] in _LOOPBACK:
            notes.append(f"--host {argv[index + 1]} written as --host 0.0.0.0: {why}")
            argv[index + 1] = "0.0.0.0"
        elif word.startswith("--host=") and word[len("--host=") :] in _LOOPBACK:
            notes.append(f"{word} written as --host=0.0.0.0: {why}")
            argv[index] = "--host=0.0.0.0"


P = TypeVar("P")


def port_owner(items: Iterable[P], port: Callable[[P], int | None]) -> Callable[[P, int], P | None]:
    """For rewriting a loopback `host:PORT`: `owner(asker, PORT)` is the one item other than `asker` whose port is
    PORT, or None when no other item or several have it (then the address is left as written)."""
    by_port: dict[int, list[P]] = {}
    for item in items:
        number = port(item)
        if number is not None:
            by_port.setdefault(number, []).append(item)

    def owner(asker: P, number: int) -> P | None:
        others = [other for other in by_port.get(number, []) if other is not asker]
        return others[0] if len(others) == 1 else None

    return owner


def gpu_count(role: RoleConfig) -> int:
    """The GPUs a vLLM role's pod asks for (0 for a command role)."""
    if not role.is_vllm:
        return 0
    need = gpu_need(role)
    if need is not None:
        return need.count
    count = 1
    for dest in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = role.serve.get(dest, 1)
        count *= value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1
    return count
