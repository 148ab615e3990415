"""One host, one resource: roles rendered to one host may not bind one TCP port or overcommit one GPU.

Every role of a stack that `profilekit render` writes is meant for one host, unless the roles say otherwise:
two roles whose `VLLM_NIXL_SIDE_CHANNEL_HOST` name different addresses run on different hosts (the P/D
side-channel rule reads it the same way, launch-examples D3b). What each role takes on its host:

- TCP ports: a vLLM role's HTTP server binds `serve.port` (the flag catalogue's default, 8000, when no layer
  sets it; nothing when `serve.uds` puts it on a Unix socket), a NIXL role binds its side-channel ports
  (`VLLM_NIXL_SIDE_CHANNEL_PORT` + data-parallel rank, `pd-side-channel-port` compares those between roles),
  and a command role binds the `--port` its command names, where it names one.
- GPUs: the devices `CUDA_VISIBLE_DEVICES` lists. A role without it sees every GPU of the host; a launcher
  (Kubernetes, Slurm) may then pick its devices, so such roles are not compared. `host-gpu-count` compares a
  role's need with the listed devices, else with `[hardware] gpus_per_node` (docs/HARDWARE.md), which vLLM sees
  as `current_platform.device_count()`.

vLLM's GPU count per instance (every release 0.27.0-0.33.0): `ParallelConfig.__post_init__` sets
`world_size = pipeline_parallel_size * tensor_parallel_size * prefill_context_parallel_size` (per data-parallel
rank), and `EngineArgs.create_engine_config` runs `data_parallel_size_local` ranks on this host: the written
value, 1 with an external load balancer (`data_parallel_external_lb` or `data_parallel_rank`), else
`data_parallel_size`. Multi-node (`nnodes` > 1), Ray and external-launcher deployments place ranks elsewhere
and are not judged.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from profilekit.compose.shape import nodes_for, role_shape
from profilekit.errors import Finding, Location, Severity
from profilekit.records import record
from profilekit.rules import order
from profilekit.rules.engine import Context, Hit, Order, stack_rule
from profilekit.rules.facts import NIXL_CONNECTORS
from profilekit.rules.pd import DEFAULT_SIDE_CHANNEL_PORT, pd_connector

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig

DEFAULT_HTTP_PORT = 8000
# Findings that hold only where roles share a host (and its CUDA_VISIBLE_DEVICES numbering): `check` reports
# them, for the script target; `render` to targets that give each role its own pod (k8s) does not apply them.
ONE_HOST_RULES = frozenset({"host-port-shared", "host-gpu-shared", "host-gpu-count", "pd-side-channel-port"})
DEVICES = "CUDA_VISIBLE_DEVICES"
_WILDCARD = frozenset({"", "0.0.0.0", "::", "[::]", "*"})
_ADDRESS_IN_USE = '"[Errno 98] Address already in use"'
# vLLM's message when a second instance cannot get the memory it asks for (vllm/v1/worker/utils.py)
_MEMORY_MESSAGE = '"Free memory on device ... on startup is less than desired GPU memory utilization"'


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _default(ctx: Context, dest: str, fallback: Any) -> Any:
    flag = ctx.catalogue.flag(dest) if ctx.catalogue is not None else None
    return flag.default if flag is not None and flag.default is not None else fallback


def _entry_loc(role: RoleConfig, *path: str) -> list[Location]:
    entry = role.entry(*path)
    return [entry.origin] if entry is not None else []


def _role_loc(ctx: Context, role: RoleConfig) -> list[Location]:
    """Where a role is first defined (`[roles.NAME]`), for a role whose value is vLLM's default."""
    for layer in ctx.stack.layers_that("holds"):
        if role.name in layer.data.roles:
            return [layer.location(("roles", role.name))]
    return []


def one_host_only(finding: Finding) -> bool:
    """Whether a finding holds only because the roles share one host, so not where each role has a pod of its own.

    A role that binds one port twice (a `host-port-shared` finding of that role) clashes in any pod.
    """
    if finding.rule == "host-port-shared":
        return finding.role is None
    if finding.rule == "host-gpu-count":  # against gpus_per_node it holds on every node, in any pod
        return DEVICES in finding.message
    return finding.rule in ONE_HOST_RULES


def host_of(role: RoleConfig) -> str | None:
    """The host a role names for itself (its NIXL side-channel address), or None: the stack's one host."""
    value = role.env.get("VLLM_NIXL_SIDE_CHANNEL_HOST")
    return value if isinstance(value, str) and value else None


def same_host(a: RoleConfig, b: RoleConfig) -> bool:
    host_a, host_b = host_of(a), host_of(b)
    return host_a is None or host_b is None or host_a == host_b


def option_word(command: list[str], option: str) -> tuple[int, str] | None:
    """The value of `--option V` or `--option=V` in a command (the last one wins, as argparse does)."""
    found: tuple[int, str] | None = None
    for index, word in enumerate(command):
        if word == option and index + 1 < len(command):
            found = (index + 1, command[index + 1])
        elif word.startswith(option + "="):
            found = (index, word[len(option) + 1 :])
    return found


# ---- ports -----------------------------------------------------------------------------------------------


@record(frozen=True, slots=True)
class Bind:
    """TCP ports one role binds for one purpose, with where they come from."""

    role: RoleConfig
    ports: tuple[int, ...]
    what: str  # how the message names it: `serve.port = 8000`, `NIXL side channel 5600-5601`
    address: str | None  # the bind address; None: every address
    locations: tuple[Location, ...]
    side_channel: bool = False
    fix: str = ""  # how to move it: `set serve.port = {port} on decode`

    def overlaps(self, other: Bind) -> bool:
        if self.address is None or other.address is None:
            return True
        return self.address == other.address


def _address(value: Any) -> str | None:
    return None if not isinstance(value, str) or value.strip() in _WILDCARD else value.strip()


def _http_bind(ctx: Context, role: RoleConfig) -> Bind | None:
    serve = role.serve
    if role.is_vllm:
        if isinstance(serve.get("uds"), str):
            return None  # the API server listens on a Unix socket instead
        written = _int(serve.get("port"))
        if serve.get("port") is not None and written is None:
            return None  # not a port vLLM reads: invalid-value says so
        port = written if written is not None else _int(_default(ctx, "port", DEFAULT_HTTP_PORT))
        if port is None:
            return None
        what = f"serve.port = {port}" + ("" if written is not None else " (vLLM default)")
        locs = _entry_loc(role, "serve", "port") or _role_loc(ctx, role)
        return Bind(
            role,
            (port,),
            what,
            _address(serve.get("host")),
            tuple(locs),
            fix=f"set serve.port = {{port}} on {role.name}",
        )
    command = role.command or []
    found = option_word(command, "--port")
    if found is None or not found[1].isdigit():
        return None
    host = option_word(command, "--host")
    return Bind(
        role,
        (int(found[1]),),
        f"--port {found[1]} in its command",
        _address(host[1] if host else None),
        tuple(_entry_loc(role, "command")),
        fix=f"change --port in the command of {role.name} to {{port}}",
    )


def _side_channel_bind(ctx: Context, role: RoleConfig) -> Bind | None:
    facts = ctx.facts.get(role.name)
    if facts is None:
        return None
    connector = pd_connector(facts)
    if connector is None or connector.name not in NIXL_CONNECTORS:
        return None
    raw = facts.env_value("VLLM_NIXL_SIDE_CHANNEL_PORT")
    if raw is not None and not raw.strip().isdigit():
        return None
    base = int(raw) if raw is not None else DEFAULT_SIDE_CHANNEL_PORT
    dp = _int(facts.serve.get("data_parallel_size"))
    ranks = dp if dp is not None and dp > 0 else 1
    ports = tuple(range(base, base + ranks))
    shown = f"{base}" if ranks == 1 else f"{base}-{base + ranks - 1}"
    what = f"NIXL side channel {shown}" + ("" if raw is not None else " (default)")
    locs = _entry_loc(role, "env", "VLLM_NIXL_SIDE_CHANNEL_PORT") or list(connector.locations)
    return Bind(
        role,
        ports,
        what,
        None,
        tuple(locs),
        side_channel=True,
        fix=f'set VLLM_NIXL_SIDE_CHANNEL_PORT = "{{port}}" on {role.name}',
    )


def _leader_binds(role: RoleConfig) -> list[Bind]:
    """The ports the leader of a multi-node role opens (compose/shape.py): torch.distributed's store on `master_port`,
    and the data-parallel handshake on `data_parallel_rpc_port` where data-parallel engines run on other nodes."""
    shape = role_shape(role)
    if shape is None or shape.form != "nnodes":
        return []
    out: list[Bind] = []
    ports = [("master_port", shape.master_port)]
    if shape.dp_spans_nodes:
        ports.append(("data_parallel_rpc_port", shape.rpc_port))
    for dest, port in ports:
        written = role.serve.get(dest) is not None
        out.append(
            Bind(
                role,
                (port,),
                f"{dest} = {port}"
                + ("" if written else " (vLLM default)")
                + f" on the leader of its {shape.nodes} nodes",
                None,
                tuple(_entry_loc(role, "serve", dest) or _entry_loc(role, "serve", "nnodes")),
                fix=f"set serve.{dest} = {{port}} on {role.name}",
            )
        )
    return out


def binds(ctx: Context) -> list[Bind]:
    """Every TCP port each role of the stack binds (its HTTP server or command's --port, its NIXL side channel,
    the leader ports of a multi-node role)."""
    out: list[Bind] = []
    for role in ctx.stack.roles.values():
        for bind in (_http_bind(ctx, role), _side_channel_bind(ctx, role), *_leader_binds(role)):
            if bind is not None:
                out.append(bind)
    return out


def _free_port(used: set[int], start: int) -> int:
    port = start + 1
    while port in used:
        port += 1
    return port


@stack_rule(
    "host-port-shared",
    Severity.ERROR,
    "roles on one host bind the same TCP port (HTTP serve.port, a command's --port, a NIXL side channel)",
    source="the OS refuses a second bind (EADDRINUSE); vllm/entrypoints/openai/api_server.py binds serve.port",
)
def host_port_shared(ctx: Context) -> Iterable[Hit]:
    bound = binds(ctx)
    used = {port for bind in bound for port in bind.ports}
    clashes: dict[tuple[int, ...], list[int]] = {}  # indices of the clashing binds -> the ports they share
    for group in _groups(list(ctx.stack.roles.values())):
        members = [i for i, bind in enumerate(bound) if any(bind.role is role for role in group)]
        for port in sorted({p for i in members for p in bound[i].ports}):
            on_port = [i for i in members if port in bound[i].ports]
            clashing = tuple(i for i in on_port if any(j != i and bound[i].overlaps(bound[j]) for j in on_port))
            if len(clashing) < 2 or all(bound[i].side_channel for i in clashing):
                continue  # pd-side-channel-port compares side channels, with their data-parallel ranges
            if port not in clashes.setdefault(clashing, []):
                clashes[clashing].append(port)
    hits: list[Hit] = []
    for indices, ports in clashes.items():
        clash = [bound[i] for i in indices]
        shown = ", ".join(map(str, ports))
        roles = list(dict.fromkeys(bind.role.name for bind in clash))
        listed = ", ".join(f"{bind.role.name} {bind.what}" for bind in clash)
        role = roles[0] if len(roles) == 1 else None  # one role's clash with itself: in a pod of its own too
        if role is not None:
            head = f"role {role} binds TCP port {shown} twice ({listed})"
        else:
            head = f"roles {_and(roles)} run on one host and bind TCP port {shown} ({listed})"
        moves = []
        for bind in clash[1:]:
            port = _free_port(used, max(used))
            used.add(port)
            moves.append(bind.fix.format(port=port))
        hits.append(
            Hit(
                "host-port-shared",
                f"{head}; all but the first to start fail with {_ADDRESS_IN_USE}",
                [loc for bind in clash for loc in bind.locations],
                "; ".join(moves) + ": every process on a host needs its own ports",
                role=role,
            )
        )
    return hits


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# ---- GPUs ------------------------------------------------------------------------------------------------


def devices(role: RoleConfig) -> list[str] | None:
    """The GPUs `CUDA_VISIBLE_DEVICES` lists for a role (indices or UUIDs), or None when it is not set."""
    raw = role.env.get(DEVICES)
    if not isinstance(raw, str):
        return None
    listed: list[str] = []
    for token in (part.strip() for part in raw.split(",")):
        if token and token not in listed:
            listed.append(token)
    return listed


@record(frozen=True, slots=True)
class GpuNeed:
    """How many GPUs a vLLM role uses on its host, and the sizes that say so."""

    count: int
    world_size: int
    local_ranks: int
    sizes: str  # `tensor_parallel_size 2 x pipeline_parallel_size 1 x ...`
    locations: tuple[Location, ...]


_WORLD = ("tensor_parallel_size", "pipeline_parallel_size", "prefill_context_parallel_size")


def gpu_need(role: RoleConfig, *, world_only: bool = False) -> GpuNeed | None:
    """TP x PP x PCP x local data-parallel ranks, or None where the host's share cannot be told from the profile.

    `world_only`: one data-parallel rank's world (with `data_parallel_backend = "ray"` ray places the ranks, and
    vLLM still checks each rank's world size against the node's GPUs)."""
    serve = role.serve
    if not role.is_vllm:
        return None
    nnodes = serve.get("nnodes", 1)
    if nnodes != 1 or serve.get("distributed_executor_backend") in ("ray", "external_launcher"):
        return None
    if serve.get("data_parallel_backend", "mp") != "mp" and not world_only:
        return None
    factors: list[str] = []
    world = 1
    locations: list[Location] = []
    for dest in _WORLD:
        value = _int(serve.get(dest, 1))
        if value is None or value < 1:
            return None
        world *= value
        if serve.get(dest) is not None:
            factors.append(f"{dest} = {value}")
            locations += _entry_loc(role, "serve", dest)
    dp = _int(serve.get("data_parallel_size", 1))
    local = serve.get("data_parallel_size_local")
    if dp is None or dp < 1:
        return None
    if world_only:
        return GpuNeed(world, world, 1, " x ".join(factors) if factors else "no parallelism", tuple(locations))
    if serve.get("data_parallel_external_lb") is True or serve.get("data_parallel_rank") is not None:
        ranks = 1
        locations += _entry_loc(role, "serve", "data_parallel_rank")
        locations += _entry_loc(role, "serve", "data_parallel_external_lb")
    elif local is not None:
        ranks_local = _int(local)
        if ranks_local is None or ranks_local < 1:
            return None
        ranks = ranks_local
        factors.append(f"data_parallel_size_local = {ranks}")
        locations += _entry_loc(role, "serve", "data_parallel_size_local")
    else:
        ranks = dp
        if serve.get("data_parallel_size") is not None:
            factors.append(f"data_parallel_size = {dp}")
            locations += _entry_loc(role, "serve", "data_parallel_size")
    sizes = " x ".join(factors) if factors else "no parallelism"
    return GpuNeed(world * ranks, world, ranks, sizes, tuple(locations))


def gpus(n: int) -> str:
    """`1 GPU`, `8 GPUs`."""
    return f"{n} GPU" + ("" if n == 1 else "s")


def world_size_message(world_size: int, available: int) -> str:
    """vLLM's `ParallelConfig.__post_init__` refusal (every release 0.27.0-0.33.0), its line breaks as spaces."""
    return (
        f"World size ({world_size}) is larger than the number of available GPUs ({available}) in this node. If this "
        "is intentional and you are using: - ray, set '--distributed-executor-backend ray'. - multiprocessing, set "
        "'--nnodes' appropriately."
    )


def _host_gpus(role: RoleConfig) -> tuple[int, str, list[Location], bool] | None:
    """The GPUs a role's vLLM sees on its node: those `CUDA_VISIBLE_DEVICES` lists, else `[hardware]
    gpus_per_node` (`current_platform.device_count()`); with what says so, where, and whether it is a listing."""
    listed = devices(role)
    if listed is not None:
        n = len(listed)
        shown = json.dumps(role.env.get(DEVICES))
        return n, f"{DEVICES} = {shown} ({gpus(n)})", _entry_loc(role, "env", DEVICES), True
    declared = declared_gpus_per_node(role)
    if declared is None:
        return None
    per_node, where = declared
    return per_node, f"hardware.gpus_per_node = {per_node}", where, False


def declared_gpus_per_node(role: RoleConfig) -> tuple[int, list[Location]] | None:
    """`[hardware] gpus_per_node` of a role (the loader holds it to a whole number from 1), and where it is set."""
    per_node = _int(role.hardware.get("gpus_per_node"))
    return None if per_node is None else (per_node, _entry_loc(role, "hardware", "gpus_per_node"))


def _world_size_refusal(ctx: Context, role: RoleConfig, need: GpuNeed, n: int) -> str:
    """Why a world size above the node's GPUs fails: vLLM's own check runs on CUDA when it picks the executor
    backend itself (`distributed_executor_backend` unset); otherwise the workers past the GPUs fail."""
    gpu = ctx.stack.gpu(role.name)
    if gpu is not None and gpu.platform != "cuda":
        return f"; vLLM {ctx.version} checks this only on CUDA, and on {gpu.name} the workers past the node's GPUs fail"
    if role.serve.get("distributed_executor_backend") is not None:
        return "; with distributed_executor_backend written vLLM skips its check, and the workers past the GPUs fail"
    return f'; vLLM {ctx.version} refuses to start: "{world_size_message(need.world_size, n)}"'


@stack_rule(
    "host-gpu-count",
    Severity.ERROR,
    "the GPUs a role sees (CUDA_VISIBLE_DEVICES, else [hardware] gpus_per_node) are fewer than its parallel sizes "
    "need (a warning when CUDA_VISIBLE_DEVICES lists more)",
    source="vllm/config/parallel.py ParallelConfig.__post_init__ (world size); vllm/engine/arg_utils.py "
    "create_engine_config (data_parallel_size_local)",
)
def host_gpu_count(ctx: Context) -> Iterable[Hit]:
    hits: list[Hit] = []
    for role in ctx.stack.roles.values():
        seen = _host_gpus(role)
        ray_ranks = role.serve.get("data_parallel_backend") == "ray"
        need = gpu_need(role, world_only=ray_ranks)
        if seen is None or need is None:
            continue
        n, what, where, listing = seen
        if n == need.count or (n > need.count and not listing) or (ray_ranks and n >= need.world_size):
            continue  # a node with more GPUs than one role takes is ordinary (ray places data-parallel ranks)
        head = f"role {role.name} has {what} and needs {gpus(need.count)} ({need.sizes})"
        locs = [*where, *need.locations]
        fewer = f"list {gpus(need.count)} in {DEVICES}" if listing else f"run on nodes of {gpus(need.count)}"
        severity: Severity | None = None
        at: Order | None = None
        if n < need.world_size:
            why = _world_size_refusal(ctx, role, need, n)
            at = _world_size_order(ctx, role, listing) if why.endswith('"') else None
            spread = f" (or spread them over nodes: nnodes = {nodes_for(need.count, n)})" if n else ""
            fix = f"{fewer}, or lower the parallel sizes" + ("" if listing else spread)
        elif n < need.count:
            why = (
                f"; its {need.local_ranks} data-parallel ranks take {gpus(need.world_size)} each, so the ranks past "
                f"the {'listed ' if listing else ''}GPUs fail to start"
            )
            fix = f"{fewer}, or lower data_parallel_size" + ("" if listing else " (or data_parallel_size_local)")
        else:
            why = f"; vLLM uses the first {need.count} and the other {n - need.count} sit idle"
            fix = f"list exactly {gpus(need.count)} in {DEVICES}, or raise the parallel sizes to use them all"
            severity = Severity.WARNING
        hits.append(Hit("host-gpu-count", head + why, locs, fix, role=role.name, severity=severity, order=at))
    return hits


def _world_size_order(ctx: Context, role: RoleConfig, listing: bool) -> Order | None:
    """Where vLLM's world-size check runs (`ParallelConfig.__post_init__`, after the data-parallel rank checks), for
    the verdict: against `gpus_per_node` or on a declared CUDA GPU. A CUDA_VISIBLE_DEVICES listing on no declared
    GPU keeps no order, as before the GPU could be declared (the CPU oracle's platform skips the check)."""
    if listing and ctx.stack.gpu(role.name) is None:
        return None
    return order.built("ParallelConfig", ctx.version, order.PARALLEL_POST_INIT + 6)


def _used(role: RoleConfig) -> list[str] | None:
    """The listed GPUs a role actually takes: the first ones its parallel sizes need (all, when unknown)."""
    listed = devices(role)
    if listed is None:
        return None
    need = gpu_need(role)
    return listed if need is None else listed[: need.count]


def _utilization(ctx: Context, role: RoleConfig) -> tuple[float | None, str]:
    if not role.is_vllm:
        return None, "a command: its GPU memory use is unknown"
    written = _number(role.serve.get("gpu_memory_utilization"))
    if written is not None:
        return written, f"{written:g}"
    default = _number(_default(ctx, "gpu_memory_utilization", 0.9))
    return default, f"{default:g} (vLLM default)" if default is not None else "unknown"


def _groups(roles: list[RoleConfig]) -> Iterator[list[RoleConfig]]:
    """Roles that may share a host: one group per named host (with every role that names none)."""
    hosts = sorted({h for h in (host_of(r) for r in roles) if h is not None})
    if not hosts:
        yield roles
        return
    for host in hosts:
        yield [r for r in roles if host_of(r) in (host, None)]


@stack_rule(
    "host-gpu-shared",
    Severity.ERROR,
    "roles on one host list the same GPU in CUDA_VISIBLE_DEVICES and their gpu_memory_utilization adds up to 1 "
    "or more (a warning when a command role shares it)",
    source="vllm/v1/worker/utils.py request_memory (free memory at start-up vs gpu_memory_utilization)",
)
def host_gpu_shared(ctx: Context) -> Iterable[Hit]:
    listing = [role for role in ctx.stack.roles.values() if devices(role)]
    reported: set[tuple[str, ...]] = set()
    hits: list[Hit] = []
    for group in _groups(listing):
        users: dict[str, list[RoleConfig]] = {}
        for role in group:
            for device in _used(role) or []:
                users.setdefault(device, []).append(role)
        sharing: dict[tuple[str, ...], list[str]] = {}
        for device, roles in users.items():
            if len(roles) > 1:
                sharing.setdefault(tuple(r.name for r in roles), []).append(device)
        for names, shared in sharing.items():
            if names in reported:
                continue
            reported.add(names)
            hit = _shared_hit(ctx, [ctx.stack.roles[n] for n in names], shared)
            if hit is not None:
                hits.append(hit)
    return hits


def _shared_hit(ctx: Context, roles: list[RoleConfig], shared: list[str]) -> Hit | None:
    shares = [_utilization(ctx, role) for role in roles]
    known = [u for u, _ in shares if u is not None]
    commands = [r.name for r in roles if not r.is_vllm]
    total = sum(known)
    if not commands and total < 1.0:
        return None  # the roles split the GPU's memory deliberately
    names = _and([r.name for r in roles])
    gpus = ", ".join(shared)
    listed = ", ".join(f"{r.name} {json.dumps(r.env.get(DEVICES))}" for r in roles)
    split = ", ".join(f"{r.name} {text}" for r, (_u, text) in zip(roles, shares, strict=True))
    locs: list[Location] = []
    for role in roles:
        locs += _entry_loc(role, "env", DEVICES)
        locs += _entry_loc(role, "serve", "gpu_memory_utilization")
    head = f"roles {names} run on one host and share GPU {gpus} ({DEVICES}: {listed}); gpu_memory_utilization: {split}"
    if commands and total < 1.0:
        return Hit(
            "host-gpu-shared",
            f"{head}; profilekit cannot tell whether the memory the command takes leaves enough for vLLM",
            locs,
            f"give {commands[0]} its own GPU, or make sure it needs less than {1.0 - total:.2g} of the GPU's memory",
            severity=Severity.WARNING,
        )
    return Hit(
        "host-gpu-shared",
        f"{head}; together that is {round(total, 3):g} of the GPU's memory, so the second instance to start fails: "
        f"vLLM says {_MEMORY_MESSAGE}",
        locs,
        f"give each role its own GPUs in {DEVICES} (e.g. {roles[-1].name} on a GPU no other role lists), or lower "
        "gpu_memory_utilization so the roles that share a GPU add up to less than 1",
    )
