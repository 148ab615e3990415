"""Roles larger than one node: the GPUs each node of a multi-node role takes, against the node's GPUs.

A role spans nodes with `nnodes` (compose/shape.py): vLLM divides the total world size (data-parallel x tensor x
pipeline x prefill-context parallel size) evenly over the nodes. With `nnodes` > 1 vLLM picks the multiprocessing
executor without comparing the world size with the node's GPUs (`ParallelConfig.__post_init__`, every release
0.27.0-0.33.0: the `nnodes > 1` branch comes before the device-count check), so a node given more workers than it
has GPUs starts them, and the workers past its GPUs fail when they select their device. profilekit compares each
node's share with `[hardware] gpus_per_node` before that.

The ports a multi-node role opens on its leader (`master_port`, and `data_parallel_rpc_port` where data-parallel
engines run on other nodes) are counted with the role's other ports by `host-port-shared` (rules/host.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from profilekit.compose.shape import nodes_for, role_shape
from profilekit.errors import Severity
from profilekit.rules.engine import Context, Hit, stack_rule
from profilekit.rules.host import declared_gpus_per_node, gpus

if TYPE_CHECKING:
    pass


@stack_rule(
    "multinode-gpus-per-node",
    Severity.ERROR,
    "a role spread over nodes with nnodes takes more GPUs on each node than [hardware] gpus_per_node",
    source="vllm/engine/arg_utils.py create_engine_config (local world size = total world size / nnodes); "
    "vllm/config/parallel.py ParallelConfig.__post_init__ (nnodes > 1 skips the device-count check)",
)
def multinode_gpus_per_node(ctx: Context) -> Iterable[Hit]:
    hits: list[Hit] = []
    for role in ctx.stack.roles.values():
        shape = role_shape(role)
        declared = declared_gpus_per_node(role)
        if shape is None or shape.form != "nnodes" or declared is None:
            continue
        per_node, where = declared
        if shape.gpus_per_node <= per_node:
            continue
        total = shape.gpus_per_node * shape.nodes
        nodes = nodes_for(total, per_node)
        hits.append(
            Hit(
                "multinode-gpus-per-node",
                f"role {role.name} runs {gpus(total)} ({shape.sizes}) over nnodes = {shape.nodes}: "
                f"{gpus(shape.gpus_per_node)} on each node, and its nodes have hardware.gpus_per_node = {per_node}; "
                f"with nnodes > 1 vLLM {ctx.version} starts {shape.gpus_per_node} workers on each node without "
                f"comparing them with the node's GPUs, and the workers past GPU {per_node - 1} fail to start",
                [*where, *shape.locations],
                f"set nnodes = {nodes} ({gpus(total)} over nodes of {per_node}), or lower the parallel sizes",
                role=role.name,
            )
        )
    return hits
