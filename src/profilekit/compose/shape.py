"""A role's shape: how many nodes one vLLM role spans, how many GPUs it takes on each, and what runs where.

vLLM (every release 0.27.0-0.33.0) starts one role on several nodes with multiprocessing when `nnodes` > 1: every
node runs `vllm serve` with the same options plus its own `--node-rank`, and `--master-addr` naming the first
node (rank 0), the leader: it serves the API; the other nodes run `--headless` (no API server). The GPUs are
spread evenly: `EngineArgs.create_engine_config` divides the total world size (data-parallel size x tensor x
pipeline x prefill-context parallel size) by `nnodes`, refusing a total `nnodes` does not divide
(rules/dataparallel.py), and infers each node's data-parallel ranks from its node rank, so one written form covers
tensor/pipeline parallelism across nodes and data parallelism across nodes alike.

Two other multi-node forms are recognised but not laid out by the render targets (they say so, naming `nnodes`):
data-parallel ranks spread with `data_parallel_size_local` < `data_parallel_size` and no `nnodes` (each node needs
its own `--data-parallel-start-rank`, which one Kubernetes worker template cannot compute), and a world larger than
a node with `distributed_executor_backend = "ray"` (Ray places the workers on a Ray cluster started apart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from profilekit.records import record

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig
    from profilekit.errors import Location

# vLLM's defaults (ParallelConfig.master_port; data_parallel_rpc_port; every release 0.27.0-0.33.0)
DEFAULT_MASTER_PORT = 29501
DEFAULT_RPC_PORT = 29550
# the options that differ from node to node of a multi-node role: profilekit writes them per node
NODE_KEYS = ("node_rank", "master_addr", "headless", "data_parallel_address", "data_parallel_start_rank")

Form = Literal["nnodes", "dp-local", "ray"]
_SIZES = (
    ("tensor_parallel_size", "TP"),
    ("pipeline_parallel_size", "PP"),
    ("prefill_context_parallel_size", "PCP"),
    ("data_parallel_size", "DP"),
)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def nodes_for(total: int, per_node: int) -> int:
    """The fewest nodes of `per_node` GPUs that hold `total` GPUs evenly (vLLM needs `nnodes` to divide the total)."""
    nodes = max(-(-total // per_node), 1)
    while total % nodes:
        nodes += 1
    return nodes


@record(frozen=True, slots=True)
class Shape:
    """The nodes a vLLM role larger than one node runs on, and the GPUs of each."""

    form: Form
    nodes: int
    gpus_per_node: int  # the GPUs the role's processes use on each node
    sizes: str  # `TP 8 x PP 2`
    world: int  # one data-parallel rank's world: TP x PP x PCP
    dp: int
    master_port: int = DEFAULT_MASTER_PORT
    rpc_port: int = DEFAULT_RPC_PORT
    locations: tuple[Location, ...] = ()

    @property
    def laid_out(self) -> bool:
        """Whether the render targets can write a node's command for each node (the `nnodes` form)."""
        return self.form == "nnodes"

    @property
    def dp_spans_nodes(self) -> bool:
        """Whether data-parallel engines run on other nodes than the leader (they reach its RPC port)."""
        return self.form == "nnodes" and self.dp > 1

    def describe(self) -> str:
        """`2 nodes x 8 GPUs, TP 8 x PP 2`."""
        nodes = f"{self.nodes} node" + ("" if self.nodes == 1 else "s")
        gpus = f"{self.gpus_per_node} GPU" + ("" if self.gpus_per_node == 1 else "s")
        how = {"nnodes": "", "dp-local": " (data_parallel_size_local)", "ray": " (Ray)"}[self.form]
        return f"{nodes} x {gpus}, {self.sizes}{how}"


def role_shape(role: RoleConfig) -> Shape | None:
    """The shape of a vLLM role that spans several nodes, from its composed values and `[hardware] gpus_per_node`;
    None for a role on one node (rules/host.py `gpu_need` counts its GPUs), a command role, or where a size is not
    a whole number vLLM would take (its own rules say what is wrong)."""
    if not role.is_vllm:
        return None
    serve = role.serve
    sizes: dict[str, int] = {}
    shown: list[str] = []
    locations: list[Location] = []
    for dest, short in _SIZES:
        value = _int(serve.get(dest, 1))
        if value is None or value < 1:
            return None
        sizes[dest] = value
        if value > 1 or dest == "tensor_parallel_size":
            shown.append(f"{short} {value}")
        entry = role.entry("serve", dest)
        if entry is not None:
            locations.append(entry.origin)
    world = sizes["tensor_parallel_size"] * sizes["pipeline_parallel_size"] * sizes["prefill_context_parallel_size"]
    dp = sizes["data_parallel_size"]
    nnodes = _int(serve.get("nnodes", 1))
    if nnodes is None or nnodes < 1:
        return None
    for key in ("nnodes", "data_parallel_size_local"):
        entry = role.entry("serve", key)
        if entry is not None:
            locations.append(entry.origin)
    ports = {
        "master_port": _int(serve.get("master_port")) or DEFAULT_MASTER_PORT,
        "rpc_port": _int(serve.get("data_parallel_rpc_port")) or DEFAULT_RPC_PORT,
    }
    text = " x ".join(shown)
    if nnodes > 1:
        if (world * dp) % nnodes:
            return None  # vLLM refuses: `--nnodes` must evenly divide the total world size
        return Shape("nnodes", nnodes, world * dp // nnodes, text, world, dp, locations=tuple(locations), **ports)
    return _spread_without_nnodes(role, world, dp, text, locations=tuple(locations), ports=ports)


def _spread_without_nnodes(
    role: RoleConfig, world: int, dp: int, text: str, *, locations: tuple[Location, ...], ports: dict[str, int]
) -> Shape | None:
    """Without `nnodes`: data-parallel ranks over nodes by `data_parallel_size_local`, a Ray world larger than a
    node, or None (one node)."""
    serve = role.serve
    external = serve.get("data_parallel_external_lb") is True or serve.get("data_parallel_rank") is not None
    local = _int(serve.get("data_parallel_size_local"))
    if not external and local is not None and 0 < local < dp:
        nodes = -(-dp // local)
        return Shape("dp-local", nodes, world * local, text, world, dp, locations=locations, **ports)
    per_node = _int(role.hardware.get("gpus_per_node"))
    if serve.get("distributed_executor_backend") == "ray" and per_node is not None and 0 < per_node < world:
        nodes = -(-world // per_node)
        return Shape("ray", nodes, per_node, text, world, dp, locations=locations, **ports)
    return None
