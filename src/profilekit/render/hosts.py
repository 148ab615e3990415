"""What changes when every role runs on a host of its own (a Kubernetes pod, a SLURM node): loopback addresses of
other roles, bind addresses, GPU counts (and which GPUs), NIXL side channels (shared by the k8s and slurm targets)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.compose.model import RoleConfig, Stack
from profilekit.compose.shape import role_shape
from profilekit.errors import Finding, Severity
from profilekit.records import record
from profilekit.render.context import LoopbackUnrewritable
from profilekit.rules.facts import NIXL_CONNECTORS, role_facts
from profilekit.rules.host import gpu_need
from profilekit.rules.pd import DEFAULT_SIDE_CHANNEL_PORT, pd_connector
from profilekit.rules.wiring import (
    LOOPBACK_HOSTS,
    Endpoint,
    Meaning,
    command_endpoints,
    env_endpoints,
    written,
    written_at,
)

if TYPE_CHECKING:
    from profilekit.hardware import Gpu

SIDE_CHANNEL_HOST = "VLLM_NIXL_SIDE_CHANNEL_HOST"
SIDE_CHANNEL_PORT = "VLLM_NIXL_SIDE_CHANNEL_PORT"


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
        if word == "--host" and index + 1 < len(argv) and argv[index + 1] in LOOPBACK_HOSTS:
            notes.append(f"--host {argv[index + 1]} written as --host 0.0.0.0: {why}")
            argv[index + 1] = "0.0.0.0"
        elif word.startswith("--host=") and word[len("--host=") :] in LOOPBACK_HOSTS:
            notes.append(f"{word} written as --host=0.0.0.0: {why}")
            argv[index] = "--host=0.0.0.0"


LOOPBACK_RULE = "loopback-unrewritable"
_WANTED: dict[Meaning, tuple[str, ...]] = {"prefill": ("kv_producer", "kv_both"), "decode": ("kv_consumer", "kv_both")}


@record(frozen=True, slots=True)
class Rewrite:
    """One loopback address of a role and the role it reaches: its host becomes that role's host on the target."""

    endpoint: Endpoint
    index: int  # the position of the role it reaches in the items given to `rewrites`
    what: str  # as the note names it: `--decode http://127.0.0.1:8200`, `DECODE_URL=...`

    @property
    def span(self) -> tuple[int, int]:
        """Where the host is in its word (command) or value (env)."""
        if self.endpoint.form == "pair":
            return 0, len(self.endpoint.host)
        return self.endpoint.offset, self.endpoint.offset + len(self.endpoint.host)


def rewrites(
    stack: Stack,
    roles: Sequence[RoleConfig],
    ports: Sequence[Collection[int]],
    argvs: Sequence[list[str]],
    *,
    target: str,
    version: str,
    root: Path | None,
) -> list[list[Rewrite]]:
    """For each role (its ports, its argv as rendered), every loopback address it uses to reach another role.

    An address reaching the role's own port stays as written (loopback is the role itself there). One that reaches no
    role, or several that cannot be told apart by the kv_role its option asks for, cannot be pointed at a host: every
    such address is a `loopback-unrewritable` error of the target (LoopbackUnrewritable), never left in place.
    """
    plans: list[list[Rewrite]] = []
    unwritable: list[Finding] = []
    for at, (role, argv) in enumerate(zip(roles, argvs, strict=True)):
        plan: list[Rewrite] = []
        env = {name: value for name, value in role.env.items() if isinstance(value, str)}
        for endpoint in [*command_endpoints(argv), *env_endpoints(env)]:
            if endpoint.port in ports[at]:
                continue
            owners = [i for i, held in enumerate(ports) if i != at and endpoint.port in held]
            if len(owners) > 1 and endpoint.meaning is not None:
                owners = [i for i in owners if _fits(roles[i], endpoint.meaning, version, root)]
            what = _shown(role, argv, endpoint)
            if len(owners) == 1:
                plan.append(Rewrite(endpoint, owners[0], what))
                continue
            unwritable.append(
                _unrewritable(stack, role, endpoint, what, [roles[i].name for i in owners], target=target)
            )
        plans.append(plan)
    if unwritable:
        raise LoopbackUnrewritable(unwritable)
    return plans


def _fits(role: RoleConfig, meaning: Meaning, version: str, root: Path | None) -> bool:
    connector = pd_connector(role_facts(role, version, root)) if role.is_vllm else None
    return connector is not None and connector.role in _WANTED[meaning]


def _shown(role: RoleConfig, argv: list[str], endpoint: Endpoint) -> str:
    if endpoint.env or role.command is not None:
        return written(role, endpoint)
    word = argv[endpoint.host_at]
    return f"{endpoint.option} {word}" if endpoint.option and not word.startswith("--") else word


def _unrewritable(
    stack: Stack, role: RoleConfig, endpoint: Endpoint, what: str, owners: list[str], *, target: str
) -> Finding:
    if owners:
        why = f"roles {' and '.join(owners)} both listen on port {endpoint.port}"
        fix = "give the roles different ports, or name the option for the role it reaches (--prefill, --decode)"
    else:
        why = f"no role of the stack listens on port {endpoint.port}"
        fix = (
            "point it at a role's port (${roles.NAME.serve.port}); a service outside the stack needs its address on "
            f"the cluster, written in a layer the {target} stacks use"
        )
    location = written_at(stack, role, endpoint) if endpoint.env or role.command is not None else None
    return Finding(
        LOOPBACK_RULE,
        Severity.ERROR,
        f"role {role.name} reaches {what} on loopback, which --target {target} cannot point at another role's host "
        f"(each role has a host of its own there, and loopback is the role itself): {why}",
        [location] if location is not None and location.file else [],
        fix=fix,
        stack=stack.spec,
        role=role.name,
    )


def spliced(text: str, rewrites: Iterable[Rewrite], host: Callable[[int], str], quote: Callable[[str], str]) -> str:
    """`text` (a word or an env value) with the host of each rewrite replaced by `host(index)` of the role it
    reaches, and every other piece of it passed through `quote`."""
    pieces: list[str] = []
    last = 0
    for rewrite in sorted(rewrites, key=lambda r: r.span):
        start, end = rewrite.span
        if start > last:
            pieces.append(quote(text[last:start]))
        pieces.append(host(rewrite.index))
        last = end
    if last < len(text) or not pieces:
        pieces.append(quote(text[last:]))
    return "".join(pieces)


def note(rewrite: Rewrite, becomes: str) -> str:
    """The render note of one rewrite: what was written, and what its loopback host became."""
    return f"{rewrite.what}: {rewrite.endpoint.host} written as {becomes}"


def gpu_count(role: RoleConfig) -> int:
    """The GPUs a vLLM role's pod (or node) asks for: a multi-node role's share of each node (compose/shape.py), else
    what rules/host.py `gpu_need` counts (0 for a command role)."""
    if not role.is_vllm:
        return 0
    shape = role_shape(role)
    if shape is not None and shape.laid_out:
        return shape.gpus_per_node
    need = gpu_need(role)
    if need is not None:
        return need.count
    count = 1
    for dest in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = role.serve.get(dest, 1)
        count *= value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1
    return count


def gpu_needs(stack: Stack, roles: list[RoleConfig]) -> list[tuple[Gpu, int]]:
    """Each GPU model `roles` declare, with how many of it they use together (roles that declare none aside)."""
    needs: dict[str, tuple[Gpu, int]] = {}
    for role in roles:
        gpu, count = stack.gpu(role.name), gpu_count(role)
        if gpu is not None and count:
            needs[gpu.name] = (gpu, needs[gpu.name][1] + count if gpu.name in needs else count)
    return list(needs.values())
