"""The rule engine: every check that runs on a composed stack, returning findings as data.

One module per rule family (replayssm, kv, pd, declared, secrets, basic); `engine` holds the
registry and the run loop, `facts` the per-role facts, `models` the model architecture lookup.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.errors import Finding
from profilekit.rules import basic, declared, kv, pd, replayssm, secrets  # noqa: F401 - they register rules
from profilekit.rules.engine import RULES, STAGE_ARGPARSE, Context, Verdict, first_rejection, run_rules
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
    from profilekit.render import env_findings

    ctx = Context(stack, version, catalogue, root, stack_facts(stack, version, root))
    out = run_rules(ctx)
    for role in stack.roles.values():
        out += [(f, None) for f in env_findings(stack, role)]
    if catalogue is not None:
        from profilekit.vllm.validate import option_findings

        for index, finding in enumerate(option_findings(stack, catalogue)):
            vllm_checks = finding.is_error and finding.rule in _ARGPARSE_RULES
            out.append((finding, (STAGE_ARGPARSE, index) if vllm_checks else None))
    for finding, _order in out:
        finding.stack = stack.spec
    return out


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
    # a catalogue finding counts only where the value it judges reaches this role
    kept = [
        (f, order)
        for f, order in ordered
        if f.role is not None or f.rule not in _ARGPARSE_RULES or any(loc in effective for loc in f.locations)
    ]
    return first_rejection(kept, role)
