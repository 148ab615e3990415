"""The rule engine: every check that runs on a composed stack, returning findings as data."""

from __future__ import annotations

from typing import TYPE_CHECKING

from profilekit.compose import declared_constraints
from profilekit.render import env_findings

if TYPE_CHECKING:
    from profilekit.compose import Stack
    from profilekit.errors import Finding
    from profilekit.vllm.catalogue import Catalogue


def check_stack(stack: Stack, *, version: str, catalogue: Catalogue | None) -> list[Finding]:
    """All findings of one stack, sorted by file and line."""
    findings = declared_constraints(stack)
    for role in stack.roles.values():
        findings += env_findings(stack, role)
    for finding in findings:
        finding.stack = stack.spec
    return sorted(findings, key=lambda f: f.sort_key())
