"""Options written twice: a top-level flag and the key of the config table it feeds, both set.

Source: `vllm/engine/arg_utils.py` `EngineArgs.create_engine_config` (every release 0.27.0-0.33.0). While it copies
the top-level flags into their config objects it refuses a flag whose key the config table already sets:
`--attention-backend` and `attention_config.backend`, then (after `--mamba-*`, rules/outputs.py)
`--enable-flashinfer-autotune` and `kernel_config.enable_flashinfer_autotune`, each op of `--ir-op-priority` and
`kernel_config.ir_op_priority`, and (after ObservabilityConfig is built) `--cudagraph-capture-sizes` and
`--max-cudagraph-capture-size` against their `compilation_config` keys. vLLM tests `is not None`: false, 0 and an
empty list count as written; an ir op counts once its priority list is not empty (a string is split on commas).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules.engine import STAGE_CONFIG_OBJECTS, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import shown
from profilekit.vllm.constraints import argparse_problems, load_values

RULE = "flag-and-config-key"
# IrOpPriorityConfig's fields in declaration order (asdict's order: the first op set twice is named)
IR_OPS = ("rms_norm", "fused_add_rms_norm", "gelu_and_mul_sparse")
# (flag, config table, key, fallback rank of the flag's first read, step inside that rank)
PAIRS: tuple[tuple[str, str, str, int, tuple[int, ...]], ...] = (
    # before the --mamba-* conversions (rules/outputs.py: step 1)
    ("attention_backend", "attention_config", "backend", 22, (0, 5)),
    ("enable_flashinfer_autotune", "kernel_config", "enable_flashinfer_autotune", 22, (2,)),
    # after ObservabilityConfig's own checks (order.built: step 0)
    ("cudagraph_capture_sizes", "compilation_config", "cudagraph_capture_sizes", 26, (10,)),
    ("max_cudagraph_capture_size", "compilation_config", "max_cudagraph_capture_size", 26, (11,)),
)
IR_STEP = (3,)  # after enable_flashinfer_autotune


def _at(flag: str, version: str, fallback: int, step: tuple[int, ...]) -> Order:
    values = load_values(version)
    found = values.first_read(flag) if values is not None else None
    return (STAGE_CONFIG_OBJECTS, found if found is not None else fallback, *step)


def _table(ctx: Context, f: RoleFacts, name: str) -> dict[str, Any] | None:
    """The config table as written, or None when absent or refused while argparse reads it (reported first)."""
    table = f.serve.get(name)
    flag = ctx.catalogue.flag(name) if ctx.catalogue is not None else None
    if not isinstance(table, dict) or (flag is not None and argparse_problems(flag, table, f.version)):
        return None
    return table


def _hit(f: RoleFacts, what: str, message: str, *, where: tuple[str, str, str], at: Order) -> Hit:
    flag, table, key = where
    return Hit(
        RULE,
        f'{what}; vLLM {f.version} refuses to start: "{message}"',
        [*f.loc("serve", flag), *(f.loc("serve", table, key) or f.loc("serve", table))],
        f"write the value once: either {flag} or {table}.{key}",
        role=f.role.name,
        order=at,
    )


def _pairs(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    for flag, name, key, fallback, step in PAIRS:
        table = _table(ctx, f, name)
        if f.serve.get(flag) is None or table is None or table.get(key) is None:
            continue
        yield _hit(
            f,
            f"{flag} = {shown(f.serve[flag])} and {name}.{key} = {shown(table[key])}",
            f"{flag} and {name}.{key} are mutually exclusive",
            where=(flag, name, key),
            at=_at(flag, f.version, fallback, step),
        )


def _ops_set(value: Any) -> list[str]:
    """The ops of an IrOpPriorityConfig table whose priority is not empty, in declaration order."""
    if not isinstance(value, dict):
        return []
    return [op for op in IR_OPS if isinstance(value.get(op), str) or (isinstance(value.get(op), list) and value[op])]


def _ir_op_priority(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    top = f.serve.get("ir_op_priority")
    flag = ctx.catalogue.flag("ir_op_priority") if ctx.catalogue is not None else None
    kernel = _table(ctx, f, "kernel_config")
    if kernel is None or (flag is not None and argparse_problems(flag, top, f.version)):
        return
    nested = set(_ops_set(kernel.get("ir_op_priority")))
    op = next((op for op in _ops_set(top) if op in nested), None)
    if op is None:
        return
    yield _hit(
        f,
        f"ir_op_priority.{op} and kernel_config.ir_op_priority.{op} are both set",
        f"Op priority for {op} specified via both ir_op_priority and KernelConfig.ir_op_priority, "
        "only one allowed at a time.",
        where=("ir_op_priority", "kernel_config", "ir_op_priority"),
        at=_at("ir_op_priority", f.version, 22, IR_STEP),
    )


@rule(
    RULE,
    Severity.ERROR,
    "a top-level flag and the config key it feeds are both written (attention backend, FlashInfer autotune, "
    "IR op priority, CUDA graph capture sizes)",
    source="vllm/engine/arg_utils.py EngineArgs.create_engine_config",
)
def flag_and_config_key(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    hits = [*_pairs(ctx, f), *_ir_op_priority(ctx, f)]
    return sorted(hits, key=lambda h: h.order or ())
