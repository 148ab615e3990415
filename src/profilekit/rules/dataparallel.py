"""Data-parallel launch options: load-balancing modes, node ranks, local sizes and the DP rank.

Sources: `vllm/engine/arg_utils.py` `EngineArgs.create_engine_config` (the launch block before
`ParallelConfig` is built; 0.30.0 counts prefill context parallelism in the world size, 0.31.0 added the
external-LB node-rank check), then `vllm/config/parallel.py` `ParallelConfig.__post_init__` (the DP rank
range) and `_validate_parallel_config` (local size, external LB), every release 0.27.0-0.33.0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field

from profilekit.errors import Location, Severity
from profilekit.records import record
from profilekit.rules import order
from profilekit.rules.engine import Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import Undecided, lacking, needs, serve_bool, serve_int, shape
from profilekit.vllm.versions import at_least

SOURCE_LAUNCH = "vllm/engine/arg_utils.py EngineArgs.create_engine_config (data-parallel launch options)"
SOURCE_PARALLEL = "vllm/config/parallel.py ParallelConfig"
INVALID = "Invalid data-parallel launch options: "
MSG_DENSE = (
    "Non-MoE models do not support external data parallel mode. For external load balancing, launch independent "
    "vLLM instances without --data-parallel-* arguments."
)


@record(slots=True)
class Failure:
    rule: str
    index: int  # its place among the raises of one vLLM function
    what: str
    message: str
    fix: str
    keys: tuple[str, ...]
    step: str = "launch"  # "launch": before ParallelConfig is built; "fields": its field constraints; "built": once
    # its fields are valid
    model: bool = False  # the model's config.json decided it


@record(slots=True)
class Launch:
    """What the launch block leaves for ParallelConfig, and the first failure on the way."""

    failure: Failure | None = None
    dense_unknown: bool = False  # the dense-model check needed a config.json profilekit lacks
    external: bool = False  # what ParallelConfig gets as data_parallel_external_lb
    hybrid: bool = False  # ... and as data_parallel_hybrid_lb
    switched: bool = False  # hybrid LB (inferred from data_parallel_start_rank) with one local rank became external
    rank: int | None = None
    size_local: int = 1
    checked: list[str] = field(default_factory=list)


@record(slots=True)
class _Args:
    """The engine arguments the launch block reads, and the values it rewrites on its way (vLLM assigns them on
    `self`, or on locals of `create_engine_config`, before it builds ParallelConfig)."""

    version: str
    dp: int
    tp: int
    pp: int
    pcp: int
    nnodes: int
    node_rank: int
    rank: int | None  # data_parallel_rank: as written, inferred from node_rank for external LB, or the start rank
    size_local: int | None  # data_parallel_size_local: as written, or inferred from node_rank for internal LB
    start_rank: int | None
    hybrid: bool  # data_parallel_hybrid_lb: as written, then as the block settles it
    external: bool  # data_parallel_external_lb as written
    backend: object
    inferred: int = 0  # inferred_data_parallel_rank: 0 unless nnodes > 1
    external_lb: bool = False  # the block's local data_parallel_external_lb: the flag, or a rank that is set


# the sizes the launch block computes with, and their defaults; one that is not an int leaves the block undecided
_SIZES = (
    ("data_parallel_size", 1),
    ("tensor_parallel_size", 1),
    ("pipeline_parallel_size", 1),
    ("prefill_context_parallel_size", 1),
    ("nnodes", 1),
    ("node_rank", 0),
)


def _engine_args(f: RoleFacts) -> _Args | None:
    """The EngineArgs fields `create_engine_config`'s data-parallel block reads; None when a size is not an int."""
    sizes = [serve_int(f, key, default) for key, default in _SIZES]
    if any(v is None for v in sizes):
        return None
    dp, tp, pp, pcp, nnodes, node_rank = (int(v or 0) for v in sizes)
    return _Args(
        f.version,
        dp,
        tp,
        pp,
        pcp,
        nnodes,
        node_rank,
        rank=serve_int(f, "data_parallel_rank"),
        size_local=serve_int(f, "data_parallel_size_local"),
        start_rank=serve_int(f, "data_parallel_start_rank"),
        hybrid=serve_bool(f, "data_parallel_hybrid_lb") is True,
        external=serve_bool(f, "data_parallel_external_lb") is True,
        backend=f.serve.get("data_parallel_backend", "mp"),
    )


def _refused(index: int, what: str, message: str, fix: str, *keys: str) -> Failure:
    """One `raise ValueError` of the launch block: its place among the block's raises, and what it says."""
    return Failure("data-parallel-launch", index, what, message, fix, keys)


def _one_load_balancing_mode(args: _Args) -> Failure | None:
    """The block's first raise: `data_parallel_hybrid_lb and data_parallel_external_lb`."""
    if not (args.hybrid and args.external):
        return None
    return _refused(
        0,
        "data_parallel_hybrid_lb = true with data_parallel_external_lb = true",
        INVALID + "`--data-parallel-hybrid-lb` and `--data-parallel-external-lb` cannot be enabled together. "
        "Enable only one load-balancing mode.",
        "keep one load-balancing mode",
        "data_parallel_hybrid_lb",
        "data_parallel_external_lb",
    )


def _multi_node_backend(args: _Args) -> Failure | None:
    """The block's second raise: `nnodes > 1 and data_parallel_backend != "mp"`."""
    if not (args.nnodes > 1 and args.backend != "mp"):
        return None
    return _refused(
        1,
        f"nnodes = {args.nnodes} with data_parallel_backend = {args.backend!r}",
        INVALID + f"`--nnodes {args.nnodes}` requires `--data-parallel-backend mp`; got "
        f"`--data-parallel-backend {args.backend}`. Use the MP backend or set `--nnodes 1`.",
        'set data_parallel_backend = "mp", or nnodes = 1',
        "nnodes",
        "data_parallel_backend",
    )


def _multi_node(args: _Args) -> Failure | None:
    """The block's `if self.nnodes > 1:` branch: the world size and the node rank, then what the node rank infers.

    0.30.0 counts prefill context parallelism in the world size (`world_size_within_dp`).
    """
    if args.nnodes <= 1:
        return None
    within = args.pp * args.tp * (args.pcp if at_least(args.version, "0.30.0") else 1)
    world = args.dp * within
    if world % args.nnodes != 0:
        return _world_size_indivisible(args, world)
    if not 0 <= args.node_rank < args.nnodes:
        return _refused(
            3,
            f"node_rank = {args.node_rank} with nnodes = {args.nnodes}",
            INVALID + f"`--node-rank` must be between 0 and {args.nnodes - 1}; got `--node-rank {args.node_rank}`. "
            "Set it to this node's zero-based index.",
            f"set node_rank between 0 and {args.nnodes - 1}",
            "node_rank",
            "nnodes",
        )
    local_world = world // args.nnodes
    args.inferred = (args.node_rank * local_world) // within
    return _infer_from_node_rank(args, local_world, within)


def _world_size_indivisible(args: _Args, world: int) -> Failure:
    """The raise when `nnodes` does not divide the world size; 0.30.0 names prefill context parallelism too."""
    prefill = at_least(args.version, "0.30.0")
    sizes = (
        "`--data-parallel-size`, `--pipeline-parallel-size`, `--tensor-parallel-size`, or "
        "`--prefill-context-parallel-size`."
        if prefill
        else "`--data-parallel-size`, `--pipeline-parallel-size`, or `--tensor-parallel-size`."
    )
    return _refused(
        2,
        f"nnodes = {args.nnodes} does not divide the world size {world} (data x pipeline x tensor"
        + (" x prefill-context" if prefill else "")
        + " parallel sizes)",
        INVALID + f"`--nnodes {args.nnodes}` must evenly divide the total world size ({world}). "
        f"Adjust `--nnodes`, {sizes}",
        f"set nnodes to a divisor of {world}",
        "nnodes",
        "data_parallel_size",
        "tensor_parallel_size",
        "pipeline_parallel_size",
    )


def _infer_from_node_rank(args: _Args, local_world: int, within: int) -> Failure | None:
    """The end of the `nnodes > 1` branch: external LB over several ranks takes the rank the node rank infers when
    none is set (0.31.0: refused when nnodes is not a multiple of the DP size); otherwise a local size that is not
    set is inferred, for internal LB."""
    if args.dp > 1 and args.external:
        if args.rank is None:
            if at_least(args.version, "0.31.0") and args.nnodes % args.dp != 0:
                return _refused(
                    4,
                    f"data_parallel_external_lb = true with nnodes = {args.nnodes}, data_parallel_size = {args.dp} "
                    "and no data_parallel_rank",
                    INVALID + "`--node-rank` cannot unambiguously identify external data-parallel ranks when "
                    "`--nnodes` is not divisible by `--data-parallel-size`. Set a unique "
                    "`--data-parallel-rank` for each external-LB process.",
                    "set data_parallel_rank for each external-LB process",
                    "data_parallel_external_lb",
                    "nnodes",
                    "data_parallel_size",
                )
            args.rank = args.inferred
    elif args.size_local is None:
        args.size_local = max(local_world // within, 1)
    return None


def _external_lb(f: RoleFacts, args: _Args, out: Launch) -> Failure | None:
    """`data_parallel_external_lb = self.data_parallel_external_lb or self.data_parallel_rank is not None`, then the
    two raises that read it: fault tolerance without it, and a dense model with it."""
    args.external_lb = args.external or args.rank is not None
    return _fault_tolerance(f, args) or _dense_model(f, args, out)


def _fault_tolerance(f: RoleFacts, args: _Args) -> Failure | None:
    """`if self.enable_fault_tolerance and not data_parallel_external_lb`: fault tolerance needs external LB."""
    if not (serve_bool(f, "enable_fault_tolerance") is True and not args.external_lb):
        return None
    return _refused(
        5,
        "enable_fault_tolerance = true without an external load balancer",
        "Fault tolerance requires external load balancer mode (--data-parallel-external-lb or "
        "--data-parallel-rank). Internal LB mode is not supported.",
        "set data_parallel_external_lb = true (or data_parallel_rank), or remove enable_fault_tolerance",
        "enable_fault_tolerance",
    )


def _dense_model(f: RoleFacts, args: _Args, out: Launch) -> Failure | None:
    """`if self.data_parallel_size > 1 and data_parallel_external_lb and not model_config.is_moe`.

    Without the model's config.json the check is undecided (`Launch.dense_unknown`) and the block goes on.
    """
    if not (args.dp > 1 and args.external_lb):
        return None
    s = shape(f)
    if s is None:
        out.dense_unknown = True
        return None
    if s.moe:
        return None
    return Failure(
        "data-parallel-dense-model",
        6,
        f"data_parallel_size = {args.dp} with an external data-parallel rank for a dense (non-MoE) model (config.json)",
        MSG_DENSE,
        "launch independent vLLM instances without the data_parallel_* options",
        ("data_parallel_size", "data_parallel_rank", "data_parallel_external_lb"),
        model=True,
    )


def _size_local(f: RoleFacts, args: _Args, out: Launch) -> Failure | None:
    """The branch that settles data_parallel_size_local: `if data_parallel_external_lb:` (`_external_rank`),
    `elif self.data_parallel_size_local is not None:` (`_local_modes`), `else:` (`_default_size_local`)."""
    if args.external_lb:
        return _external_rank(args, out)
    if args.size_local is not None:
        _local_modes(f, args, out, args.size_local)
        return None
    return _default_size_local(f, args, out)


def _external_rank(args: _Args, out: Launch) -> Failure | None:
    """`if data_parallel_external_lb:` an external rank needs a rank and one local rank; hybrid LB is off."""
    if args.rank is None:
        return _refused(
            7,
            "data_parallel_external_lb = true without data_parallel_rank",
            INVALID + "`--data-parallel-external-lb` requires a data-parallel rank. Set `--data-parallel-rank`, "
            "or set `--data-parallel-size` greater than 1 and use `--nnodes` with `--node-rank` so the rank can "
            "be inferred.",
            "set data_parallel_rank (this process's rank), or remove data_parallel_external_lb",
            "data_parallel_external_lb",
            "data_parallel_rank",
        )
    if args.size_local not in (1, None):
        return _refused(
            8,
            f"an external data-parallel rank with data_parallel_size_local = {args.size_local}",
            INVALID + "an external data-parallel rank requires `--data-parallel-size-local 1`; got "
            f"{args.size_local}. Set it to 1 or omit it.",
            "set data_parallel_size_local = 1, or remove it",
            "data_parallel_size_local",
            "data_parallel_rank",
            "data_parallel_external_lb",
        )
    out.size_local = 1
    args.hybrid = False
    return None


def _local_modes(f: RoleFacts, args: _Args, out: Launch, size_local: int) -> None:
    """`elif self.data_parallel_size_local is not None:` the LB modes, and the rank, for a local size that is set.

    A start rank infers hybrid LB on a node that serves the API (0.27.x: a non-zero start rank); hybrid LB with
    one local rank becomes external LB, and with every rank local it is off. The rank is the start rank, else
    the one the node rank infers.
    """
    out.size_local = size_local
    started = args.start_rank is not None if at_least(args.version, "0.28.0") else bool(args.start_rank)
    if started and serve_bool(f, "headless") is not True:
        args.hybrid = True
    if args.hybrid and size_local == 1:
        args.external_lb, args.hybrid, out.switched = True, False, True
    if size_local == args.dp:
        args.hybrid = False
    args.rank = _start_rank(args)


def _start_rank(args: _Args) -> int:
    """`data_parallel_start_rank if data_parallel_start_rank is not None else inferred_data_parallel_rank`; 0.27.x
    reads `data_parallel_start_rank or inferred_data_parallel_rank`."""
    if at_least(args.version, "0.28.0"):
        return args.start_rank if args.start_rank is not None else args.inferred
    return args.start_rank or args.inferred


def _default_size_local(f: RoleFacts, args: _Args, out: Launch) -> Failure | None:
    """`else:` neither an external rank nor a local size: hybrid LB is refused, and the local size is the DP size
    (1 with Ray's `span` pack strategy, which spreads the ranks over the nodes)."""
    if args.hybrid:
        return _refused(
            9,
            "data_parallel_hybrid_lb = true without data_parallel_size_local",
            INVALID + "`--data-parallel-hybrid-lb` requires `--data-parallel-size-local`. Set it to the number "
            "of data-parallel ranks on this node.",
            "set data_parallel_size_local to the number of data-parallel ranks on this node",
            "data_parallel_hybrid_lb",
        )
    span = args.backend == "ray" and f.env_value("VLLM_RAY_DP_PACK_STRATEGY") == "span"
    out.size_local = 1 if span else args.dp
    return None


def _launch(f: RoleFacts) -> Launch | None:
    """`create_engine_config`'s data-parallel block, as a GPU host runs it; None when a size is not an int.

    Its steps in vLLM's order, the first that raises ending the block: one load-balancing mode, the backend of a
    multi-node launch, the `nnodes > 1` branch, the block's data_parallel_external_lb and the raises that read
    it, then the branch that settles data_parallel_size_local. What the block passes is then judged as
    ParallelConfig judges it (`_parallel_config`).
    """
    args = _engine_args(f)
    if args is None:
        return None
    out = Launch()
    # a step returns the Failure of the raise it mirrors, or None to go on (a Failure is always true)
    out.failure = (
        _one_load_balancing_mode(args)
        or _multi_node_backend(args)
        or _multi_node(args)
        or _external_lb(f, args, out)
        or _size_local(f, args, out)
    )
    if out.failure is not None:  # vLLM raised before it built ParallelConfig: what it would pass stays unset
        return out
    out.external, out.hybrid, out.rank = args.external_lb, args.hybrid, args.rank
    return _parallel_config(f, out, args.dp)


def _field_failure(f: RoleFacts, out: Launch) -> Failure | None:
    """ParallelConfig's field constraints on the data-parallel values the launch block passes.

    The block rewrites these options before it builds ParallelConfig (`data_parallel_rank or 0`, the local
    size it settles on, the RPC port or ParallelConfig's default), so they are judged here on what vLLM
    passes, not by the value constraints of rules/options.py on what the layer wrote.
    """
    passed: list[tuple[str, int, str, str]] = [
        ("data_parallel_rank", out.rank or 0, "ge", "0"),
        ("data_parallel_size_local", out.size_local, "ge", "0"),
    ]
    port = serve_int(f, "data_parallel_rpc_port")
    if port is not None and at_least(f.version, "0.28.0"):  # 0.27.x: a plain int
        passed += [("data_parallel_rpc_port", port, "ge", "1"), ("data_parallel_rpc_port", port, "le", "65535")]
    for key, value, bound, limit in passed:
        if (value < int(limit)) if bound == "ge" else (value > int(limit)):
            words = "greater than or equal to" if bound == "ge" else "less than or equal to"
            what = (
                f"{key} = {value}" if key in f.serve else f"ParallelConfig's {key} = {value} (from {_source_of(key)})"
            )
            return Failure(
                "invalid-value",
                0,
                what,
                f"1 validation error for ParallelConfig / {key} / Input should be {words} {limit}",
                f"set {key} to a value {words} {limit}",
                (key, *(("data_parallel_start_rank",) if key == "data_parallel_rank" else ())),
                step="fields",
            )
    return None


def _source_of(key: str) -> str:
    return "data_parallel_start_rank" if key == "data_parallel_rank" else key


def _parallel_config(f: RoleFacts, out: Launch, dp: int) -> Launch:
    """ParallelConfig's field constraints, `__post_init__` (the DP rank range), then `_validate_parallel_config`."""
    rank = out.rank or 0
    fields = _field_failure(f, out)
    if fields is not None:
        out.failure = fields
    elif (dp > 1 or out.size_local == 0) and not 0 <= rank < dp:
        out.failure = Failure(
            "data-parallel-rank",
            order.PARALLEL_POST_INIT + 5,
            f"data_parallel_rank {rank} with data_parallel_size = {dp}",
            f"data_parallel_rank ({rank}) must be in the range [0, {dp})",
            f"set the data-parallel rank between 0 and {dp - 1}",
            ("data_parallel_rank", "data_parallel_start_rank", "data_parallel_size"),
            step="built",
        )
    elif out.size_local > dp:
        out.failure = Failure(
            "data-parallel-size-local",
            order.PARALLEL_VALIDATORS,
            f"data_parallel_size_local = {out.size_local} is more than data_parallel_size = {dp}",
            f"data_parallel_size_local ({out.size_local}) must be <= data_parallel_size ({dp})",
            f"set data_parallel_size_local to at most {dp} (the ranks on this node), or raise data_parallel_size",
            ("data_parallel_size_local", "data_parallel_size"),
            step="built",
        )
    elif dp <= 1 and out.external and out.switched:
        out.failure = Failure(
            "data-parallel-external-lb",
            order.PARALLEL_VALIDATORS + 1,
            "data_parallel_start_rank with data_parallel_size_local = 1 (vLLM infers hybrid load balancing from the "
            "start rank and switches it to an external load balancer for one local rank) with "
            f"data_parallel_size = {dp}",
            "data_parallel_external_lb can only be set when data_parallel_size > 1",
            "set data_parallel_size above 1, or remove data_parallel_start_rank",
            ("data_parallel_start_rank", "data_parallel_size_local", "data_parallel_hybrid_lb", "data_parallel_size"),
            step="built",
        )
    elif dp <= 1 and out.external:
        out.failure = Failure(
            "data-parallel-external-lb",
            order.PARALLEL_VALIDATORS + 1,
            "an external data-parallel load balancer (data_parallel_external_lb or data_parallel_rank) with "
            f"data_parallel_size = {dp}",
            "data_parallel_external_lb can only be set when data_parallel_size > 1",
            "set data_parallel_size above 1, or remove data_parallel_external_lb and data_parallel_rank",
            ("data_parallel_external_lb", "data_parallel_rank", "data_parallel_size"),
            step="built",
        )
    return out


def launch(f: RoleFacts) -> Launch | None:
    if "data-parallel" not in f.memo:
        f.memo["data-parallel"] = _launch(f)
    result: Launch | None = f.memo["data-parallel"]
    return result


def _hits(f: RoleFacts, rule_id: str) -> list[Hit]:
    out = launch(f)
    if out is None or out.failure is None or out.failure.rule != rule_id:
        return []
    fail = out.failure
    locs: list[Location] = [loc for key in fail.keys for loc in f.loc("serve", key)]
    if fail.model:
        locs += f.model.locations
    if fail.step == "fields":
        where = order.fields("ParallelConfig", f.version)
    else:
        where = (order.before if fail.step == "launch" else order.built)("ParallelConfig", f.version, fail.index)
    return [
        Hit(
            rule_id,
            f'{fail.what}; vLLM {f.version} refuses to start: "{fail.message}"',
            locs,
            fail.fix,
            role=f.role.name,
            order=where,
        )
    ]


@rule(
    "data-parallel-launch",
    Severity.ERROR,
    "data-parallel launch options that contradict each other (load-balancing modes, nodes, ranks)",
    source=SOURCE_LAUNCH,
)
def data_parallel_launch(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    # the field constraints on the values the launch block passes to ParallelConfig are `invalid-value`s
    return _hits(f, "data-parallel-launch") + _hits(f, "invalid-value")


@rule(
    "data-parallel-dense-model",
    Severity.ERROR,
    "an external data-parallel rank for a dense (non-MoE) model (needs the model's config.json)",
    source=SOURCE_LAUNCH,
)
def data_parallel_dense_model(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    return _hits(f, "data-parallel-dense-model")


@rule(
    "data-parallel-rank",
    Severity.ERROR,
    "a data-parallel rank outside [0, data_parallel_size)",
    source=SOURCE_PARALLEL + ".__post_init__",
)
def data_parallel_rank(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    return _hits(f, "data-parallel-rank")


@rule(
    "data-parallel-size-local",
    Severity.ERROR,
    "data_parallel_size_local above data_parallel_size",
    source=SOURCE_PARALLEL + "._validate_parallel_config",
)
def data_parallel_size_local(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    return _hits(f, "data-parallel-size-local")


@rule(
    "data-parallel-external-lb",
    Severity.ERROR,
    "an external data-parallel load balancer without data parallelism",
    source=SOURCE_PARALLEL + "._validate_parallel_config",
)
def data_parallel_external_lb(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    return _hits(f, "data-parallel-external-lb")


@needs
def _dense_needs(f: RoleFacts) -> list[Undecided]:
    out = launch(f)
    if out is None or not out.dense_unknown:
        return []
    return [
        Undecided(
            "an external data-parallel rank against whether the model is a mixture of experts"
            + lacking(shape(f), "num_experts"),
            tuple(f.loc("serve", "data_parallel_size")),
        )
    ]
