"""Expert parallelism: EPLB, elastic EP, and expert parallelism of a model without experts.

Sources (every release 0.27.0-0.33.0): `vllm/config/parallel.py` `ParallelConfig.__post_init__` (elastic EP;
0.33.0 allows an external load balancer) and `_validate_parallel_config` (EPLB), and `vllm/config/model.py`
`ModelConfig._verify_with_expert_parallelism`, which `verify_with_parallel_config` calls right after the
heads check.
"""

from __future__ import annotations

from collections.abc import Iterable

from profilekit.errors import Location, Severity
from profilekit.rules import dataparallel, order
from profilekit.rules.engine import STAGE_ARGPARSE, STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import Undecided, needs, serve_bool, serve_int, shape
from profilekit.rules.parallel import SOURCE_MODEL, SOURCE_PARALLEL, parallel_sizes, refuse
from profilekit.vllm.constraints import argparse_problems
from profilekit.vllm.versions import at_least


@rule(
    "expert-parallel-load-balancing",
    Severity.ERROR,
    "EPLB without expert parallelism or without any parallelism, or redundant experts without EPLB",
    source=SOURCE_PARALLEL,
)
def expert_parallel_load_balancing(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    sizes = parallel_sizes(f)
    if sizes is None:
        return []
    tp, _pp, dp, pcp, _dcp = sizes
    eplb = serve_bool(f, "enable_eplb") is True
    eplb_locs = f.loc("serve", "enable_eplb")
    if eplb and serve_bool(f, "enable_expert_parallel") is not True:
        return [
            _eplb_hit(
                f,
                3,
                "enable_eplb = true without enable_expert_parallel",
                "enable_expert_parallel must be True to use EPLB.",
                locs=[*eplb_locs, *f.loc("serve", "enable_expert_parallel")],
                fix="set enable_expert_parallel = true, or remove enable_eplb",
            )
        ]
    if eplb and tp * pcp * dp <= 1:
        return [
            _eplb_hit(
                f,
                4,
                "enable_eplb = true with no tensor, prefill-context or data parallelism",
                f"EPLB requires tensor, prefill-context, or data parallelism, but got TP={tp}, PCP={pcp}, DP={dp}.",
                locs=[*eplb_locs, *f.loc("serve", "tensor_parallel_size"), *f.loc("serve", "data_parallel_size")],
                fix="the expert-parallel group spans TP x PCP x DP ranks: raise one of them above 1, or remove enable_eplb",
            )
        ]
    eplb_config = f.serve.get("eplb_config")
    redundant = eplb_config.get("num_redundant_experts") if isinstance(eplb_config, dict) else None
    if not eplb and isinstance(redundant, int) and not isinstance(redundant, bool) and redundant != 0:
        return [
            _eplb_hit(
                f,
                5,
                f"eplb_config.num_redundant_experts = {redundant} without enable_eplb",
                f"num_redundant_experts is set to {redundant} but EPLB is not enabled. Either enable EPLB or unset "
                "num_redundant_experts.",
                locs=[*f.locs("serve", "eplb_config", "num_redundant_experts"), *eplb_locs],
                fix="set enable_eplb = true, or remove num_redundant_experts",
            )
        ]
    return []


def _eplb_hit(f: RoleFacts, index: int, what: str, message: str, *, locs: list[Location], fix: str) -> Hit:
    return Hit(
        "expert-parallel-load-balancing",
        refuse(f, what, message),
        locs,
        fix,
        role=f.role.name,
        order=order.built("ParallelConfig", f.version, order.PARALLEL_VALIDATORS + index),
    )


# what turns a load-balancing mode on (rules/dataparallel.py): the modes, an explicit rank, a start rank
LB_KEYS = ("data_parallel_external_lb", "data_parallel_hybrid_lb", "data_parallel_rank", "data_parallel_start_rank")


@rule(
    "elastic-expert-parallel",
    Severity.ERROR,
    "elastic EP without EPLB, with pipeline parallelism, or with a data-parallel load-balancing mode it lacks",
    source="vllm/config/parallel.py ParallelConfig.__post_init__",
)
def elastic_expert_parallel(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if serve_bool(f, "enable_elastic_ep") is not True:
        return []
    pp = serve_int(f, "pipeline_parallel_size", 1)
    elastic = f.loc("serve", "enable_elastic_ep")
    # the launch block settles the load-balancing modes ParallelConfig gets (an explicit rank is external LB, a start
    # rank infers hybrid LB, which one local rank turns into external LB); as written when the block fails first
    external = serve_bool(f, "data_parallel_external_lb") is True or f.serve.get("data_parallel_rank") is not None
    hybrid = serve_bool(f, "data_parallel_hybrid_lb") is True
    settled = dataparallel.launch(f)
    if settled is not None and (settled.failure is None or settled.failure.step != "launch"):
        external, hybrid = settled.external, settled.hybrid
    found: tuple[str, str, str, list[Location]] | None = None
    if serve_bool(f, "enable_eplb") is not True:
        found = (
            "enable_elastic_ep = true without enable_eplb",
            "Elastic EP is only supported with enable_eplb=True.",
            "set enable_eplb = true (elastic EP rebalances experts), or remove enable_elastic_ep",
            [*elastic, *f.loc("serve", "enable_eplb")],
        )
    elif pp is not None and pp > 1:
        found = (
            f"enable_elastic_ep = true with pipeline_parallel_size = {pp}",
            f"Elastic EP is not supported with pipeline parallelism (pipeline_parallel_size={pp}).",
            "set pipeline_parallel_size = 1, or remove enable_elastic_ep",
            [*elastic, *f.loc("serve", "pipeline_parallel_size")],
        )
    elif at_least(f.version, "0.33.0") and hybrid:
        found = (
            "enable_elastic_ep = true with data_parallel_hybrid_lb = true",
            "Elastic EP is not compatible with data_parallel_hybrid_lb. Elastic EP supports a single API "
            "server/core client path or data_parallel_external_lb, but not hybrid load balancing.",
            "remove data_parallel_hybrid_lb, or enable_elastic_ep",
            [*elastic, *f.loc("serve", "data_parallel_hybrid_lb"), *f.loc("serve", "data_parallel_start_rank")],
        )
    elif not at_least(f.version, "0.33.0") and (hybrid or external):
        found = (
            "enable_elastic_ep = true with an external or hybrid data-parallel load balancer",
            "Elastic EP is not compatible with data_parallel_external_lb or data_parallel_hybrid_lb. Elastic EP "
            "relies on a single API server and core client to coordinate scale up/down.",
            "remove the data-parallel load-balancing options (and data_parallel_rank), or enable_elastic_ep",
            [
                *elastic,
                *(loc for key in LB_KEYS for loc in f.loc("serve", key)),
            ],
        )
    step = order.PARALLEL_POST_INIT
    if found is None:
        found = _elastic_max_dp_size(f)
        step = order.PARALLEL_POST_INIT + 6  # after the data_parallel_rank range (+5)
    if found is None:
        return []
    what, message, fix, locs = found
    return [
        Hit(
            "elastic-expert-parallel",
            refuse(f, what, message),
            locs,
            fix,
            role=f.role.name,
            order=order.built("ParallelConfig", f.version, step),
        )
    ]


def _elastic_max_dp_size(f: RoleFacts) -> tuple[str, str, str, list[Location]] | None:
    """0.30.0 and later: `elastic_ep_max_dp_size` below the initial data-parallel size."""
    largest = serve_int(f, "elastic_ep_max_dp_size")
    dp = serve_int(f, "data_parallel_size", 1)
    if not at_least(f.version, "0.30.0") or largest is None or largest < 1 or dp is None or largest >= dp:
        return None
    return (
        f"enable_elastic_ep = true with elastic_ep_max_dp_size = {largest} below data_parallel_size = {dp}",
        f"--elastic-ep-max-dp-size must be greater than or equal to the initial data_parallel_size ({dp}).",
        f"set elastic_ep_max_dp_size to at least {dp}, the size elastic EP starts from",
        [*f.loc("serve", "elastic_ep_max_dp_size"), *f.loc("serve", "data_parallel_size")],
    )


@rule(
    "expert-parallel-dense-model",
    Severity.ERROR,
    "enable_expert_parallel for a model without experts (needs the model's config.json)",
    source=SOURCE_MODEL + " (_verify_with_expert_parallelism)",
)
def expert_parallel_dense_model(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    s = shape(f)
    if serve_bool(f, "enable_expert_parallel") is not True or s is None or s.moe:
        return []
    return [
        Hit(
            "expert-parallel-dense-model",
            refuse(
                f,
                "enable_expert_parallel = true with a model that has no experts (config.json)",
                "Number of experts in the model must be greater than 0 when expert parallelism is enabled.",
            ),
            [*f.loc("serve", "enable_expert_parallel"), *f.model.locations],
            "remove enable_expert_parallel: expert parallelism splits a mixture-of-experts model's experts",
            role=f.role.name,
            order=(STAGE_POST_INIT, order.EXPERT_PARALLEL_MODEL),
        )
    ]


@needs
def _experts_needs(f: RoleFacts) -> list[Undecided]:
    if serve_bool(f, "enable_expert_parallel") is not True or shape(f) is not None:
        return []
    return [
        Undecided("enable_expert_parallel against the model's experts", tuple(f.loc("serve", "enable_expert_parallel")))
    ]


@rule(
    "eplb-async-communicator",
    Severity.ERROR,
    "an NCCL EPLB communicator with asynchronous EPLB (eplb_config)",
    source="vllm/config/parallel.py EPLBConfig._validate_eplb_config",
)
def eplb_async_communicator(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    config = f.serve.get("eplb_config")
    flag = ctx.catalogue.flag("eplb_config") if ctx.catalogue is not None else None
    if not isinstance(config, dict) or flag is None or argparse_problems(flag, config, f.version):
        return []  # an unknown key or a bad value fails EPLBConfig's fields first (unknown-option, invalid-value)
    use_async = config.get("use_async", True)
    communicator = config.get("communicator")
    if use_async is not True or communicator not in ("torch_nccl", "pynccl"):
        return []
    written = "" if "use_async" in config else " (use_async defaults to true)"
    return [
        Hit(
            "eplb-async-communicator",
            refuse(
                f,
                f"eplb_config.communicator = {communicator!r} with asynchronous EPLB{written}",
                f"{communicator} communicator is incompatible with async EPLB due to NCCL multi-stream conflicts. "
                "Use 'torch_gloo' or 'nixl' instead, or leave communicator unset for automatic selection.",
            ),
            [*f.locs("serve", "eplb_config", "communicator"), *f.locs("serve", "eplb_config", "use_async")],
            'set eplb_config.communicator to "torch_gloo" or "nixl", remove it, or set eplb_config.use_async = false',
            role=f.role.name,
            order=(STAGE_ARGPARSE, 0),  # argparse builds EPLBConfig from the JSON (its place in the argv decides)
        )
    ]
