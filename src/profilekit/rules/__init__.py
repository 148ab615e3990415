"""The rule engine: every check that runs on a composed stack, returning findings as data.

One module per rule family (replayssm, kv, pd, host, mamba, runner, declared, secrets, env, basic); `engine` holds the
registry and the run loop, `facts` the per-role facts, `models` the model architecture lookup.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.errors import Finding
from profilekit.redact import Redactor
from profilekit.rules import basic, declared, env, host, kv, mamba, pd, replayssm, runner, secrets  # noqa: F401 - they register
from profilekit.rules.engine import (
    RULES,
    STAGE_ARGPARSE,
    STAGE_CONFIG_OBJECTS,
    Context,
    Verdict,
    first_rejection,
    run_rules,
)
from profilekit.rules.facts import stack_facts

if TYPE_CHECKING:
    from profilekit.compose import Stack
    from profilekit.vllm.catalogue import Catalogue

__all__ = ["RULES", "Verdict", "check_stack", "evaluate", "vllm_verdict"]

# rules of the flag catalogue that vLLM's argument parser (or its post-parse enum conversion) enforces
_ARGPARSE_RULES = frozenset({"unknown-option", "invalid-value"})

Ordered = list[tuple[Finding, "tuple[int, int] | None"]]


def evaluate(stack: Stack, *, version: str, catalogue: Catalogue | None, root: Path | None = None) -> Ordered:
    """Every finding of one stack, each with its place in vLLM's start-up order (None: vLLM does not check it)."""
    ctx = Context(stack, version, catalogue, root, stack_facts(stack, version, root))
    out = run_rules(ctx)
    if catalogue is not None:
        from profilekit.vllm.validate import option_findings

        for index, finding in enumerate(option_findings(stack, catalogue)):
            order: tuple[int, int] | None = None
            if finding.is_error and finding.rule in _ARGPARSE_RULES:
                order = (_option_stage(finding, catalogue), index)
            out.append((finding, order))
    redactor = Redactor.of_layers(stack.layers)
    redacted: Ordered = []
    for finding, order in out:
        finding.stack = stack.spec
        redacted.append((redactor.finding(finding), order))  # no finding carries a secret value
    return redacted


def _option_stage(finding: Finding, catalogue: Catalogue) -> int:
    """argparse rejects most bad options; enum-typed ones (`mamba_backend`) fail only when the config is built."""
    for loc in finding.locations:
        parts = loc.key.split(".")
        if "serve" in parts and parts.index("serve") + 1 < len(parts):
            flag = catalogue.flag(parts[parts.index("serve") + 1].replace("-", "_"))
            if flag is not None and flag.enum_members:
                return STAGE_CONFIG_OBJECTS
    return STAGE_ARGPARSE


def check_stack(stack: Stack, *, version: str, catalogue: Catalogue | None, root: Path | None = None) -> list[Finding]:
    """All findings of one stack, sorted by file and line."""
    findings = [finding for finding, _ in evaluate(stack, version=version, catalogue=catalogue, root=root)]
    return sorted(findings, key=lambda f: f.sort_key())


def vllm_verdict(
    stack: Stack, role: str, *, version: str, catalogue: Catalogue | None, root: Path | None = None
) -> Verdict:
    """What vLLM `version` would do when starting `role`: accept, or the rule id of the first check that fails."""
    ordered = evaluate(stack, version=version, catalogue=catalogue, root=root)
    config = stack.roles[role]
    effective = {entry.origin for entry in config.scope.entries.values()}
    argv_order = list(config.serve)  # the rendered argv follows the effective key order
    kept: Ordered = []
    for finding, order in ordered:
        # a catalogue finding counts only where the value it judges reaches this role
        if (
            finding.role is None
            and finding.rule in _ARGPARSE_RULES
            and not any(loc in effective for loc in finding.locations)
        ):
            continue
        at_parse = order is not None and order[0] == STAGE_ARGPARSE
        kept.append((finding, (STAGE_ARGPARSE, _argv_position(finding, argv_order)) if at_parse else order))
    return first_rejection(kept, role)


def _argv_position(finding: Finding, argv_order: list[str]) -> int:
    """argparse stops at the first value it cannot convert, in argv order; unknown options come last."""
    if finding.rule == "unknown-option":
        return len(argv_order) + 1
    for loc in finding.locations:
        parts = loc.key.split(".")
        if "serve" in parts and parts.index("serve") + 1 < len(parts):
            dest = parts[parts.index("serve") + 1].replace("-", "_")
            if dest in argv_order:
                return argv_order.index(dest)
    return len(argv_order)
