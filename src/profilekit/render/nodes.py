"""The commands of the nodes of a multi-node role, shared by the targets that lay one out (k8s, slurm).

A role that spans nodes (compose/shape.py, the `nnodes` form) runs the same `vllm serve` on every node, with its own
options from `NODE_KEYS` added last: `--node-rank N --master-addr LEADER` on each node, and `--headless` on every
node but the leader. The leader's address is the target's: `$(LWS_LEADER_ADDRESS)` on Kubernetes, the first node
of the role's share of the job on SLURM. A layer that writes one of `NODE_KEYS` is overridden, with a note.

The targets that run every role on one host (`script`, and `vllm-config`, whose `R.sh` starts the role) cannot
start a role that spans nodes, and the forms profilekit does not lay out (compose/shape.py) are refused by every
target: both are `multinode-unrenderable` errors, and nothing is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profilekit.compose.shape import NODE_KEYS, Shape, role_shape
from profilekit.errors import Finding, Severity
from profilekit.render.context import VLLM_CONFIG, role_argv
from profilekit.vllm.argv import render_argv

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig, Stack
    from profilekit.errors import Location
    from profilekit.vllm.catalogue import Catalogue

RULE = "multinode-unrenderable"
NODE_TARGETS = ("k8s", "slurm")  # the targets that lay out a role over several nodes


def base_argv(role: RoleConfig, catalogue: Catalogue | None) -> list[str]:
    """The command every node of a role runs before its own options: the role's, without `NODE_KEYS` when it spans
    nodes (each node gets its own)."""
    if role_shape(role) is None:
        return role_argv(role, catalogue)
    serve = {dest: value for dest, value in role.serve.items() if dest not in NODE_KEYS}
    return ["vllm", "serve", *render_argv(serve, catalogue)]


def node_words(rank: str, leader: str, *, headless: bool) -> list[str]:
    """What one node adds to the role's command (flags of every release 0.27.0-0.33.0)."""
    return ["--node-rank", rank, "--master-addr", leader, *(["--headless"] if headless else [])]


def overridden(role: RoleConfig) -> list[str]:
    """Notes for the per-node options a layer writes on a multi-node role: the render writes them per node."""
    return [
        f"serve.{dest} = {role.serve[dest]!r} written per node instead (the leader's address, each node's rank)"
        for dest in NODE_KEYS
        if dest in role.serve
    ]


def unrenderable(stack: Stack, roles: list[RoleConfig], targets: tuple[str, ...]) -> list[Finding]:
    """`multinode-unrenderable` errors: multi-node roles for a one-host target, or in a form no target lays out."""
    findings: list[Finding] = []
    one_host = [t for t in targets if t in ("script", VLLM_CONFIG)]
    for role in roles:
        shape = role_shape(role)
        if shape is None:
            continue
        entry = role.entry("serve", "nnodes")
        where = [entry.origin] if entry is not None else list(shape.locations)
        if not shape.laid_out:
            findings.append(_not_laid_out(stack, role, shape, where))
        elif one_host:
            findings.append(
                Finding(
                    RULE,
                    Severity.ERROR,
                    f"role {role.name} spans {shape.describe()}, and the {' and '.join(one_host)} "
                    f"target{'s start' if len(one_host) > 1 else ' starts'} a role on one host: its other nodes "
                    "would never start",
                    where,
                    fix=f"render it with --target k8s (a LeaderWorkerSet) or --target slurm (one job over "
                    f"{shape.nodes} nodes)",
                    stack=stack.spec,
                    role=role.name,
                )
            )
    return findings


def _not_laid_out(stack: Stack, role: RoleConfig, shape: Shape, where: list[Location]) -> Finding:
    if shape.form == "dp-local":
        why = (
            f"its {shape.dp} data-parallel ranks are spread {shape.gpus_per_node // shape.world} a node with "
            "data_parallel_size_local, which needs each node's --data-parallel-start-rank, and profilekit lays out "
            "multi-node roles with nnodes"
        )
        fix = (
            f"write nnodes = {shape.nodes} and remove data_parallel_size_local: vLLM infers each node's data-parallel "
            "ranks from its --node-rank"
        )
    else:
        why = (
            f'with distributed_executor_backend = "ray" its world of {shape.world} GPUs is placed by a Ray cluster '
            "started apart, which profilekit does not lay out"
        )
        fix = (
            f"spread it with nnodes = {shape.nodes} (multiprocessing, remove distributed_executor_backend), or start "
            "the Ray cluster and this role yourself"
        )
    return Finding(
        RULE,
        Severity.ERROR,
        f"role {role.name} spans {shape.describe()}: {why}",
        where,
        fix=fix,
        stack=stack.spec,
        role=role.name,
    )
