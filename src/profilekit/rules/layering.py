"""The order a stack is written in: a member's value that a more general layer overrides only because the spec
names the member first (`override-order`, compose/overrides.py), with the order that keeps it."""

from __future__ import annotations

from collections.abc import Iterable

from profilekit.compose.overrides import RULE, override_order_findings
from profilekit.errors import Severity
from profilekit.rules.engine import Context, Hit, stack_rule


@stack_rule(
    RULE,
    Severity.WARNING,
    "a layer the stack names first loses a value to a more general layer that a layer named after it extends "
    "(`site/h100+qwen-offload`: `base` overrides the site); the fix is the order that keeps it",
)
def override_order(ctx: Context) -> Iterable[Hit]:
    return [Hit(RULE, f.message, f.locations, f.fix, role=f.role) for f in override_order_findings(ctx.stack)]
