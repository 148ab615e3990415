"""What moving sources changes: every stack of the repository composed before and after (no printing)."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from profilekit.diff.stacks import diff_stacks, role_union
from profilekit.errors import Finding, FindingsError
from profilekit.records import record
from profilekit.session import all_stacks

if TYPE_CHECKING:
    from profilekit.diff.stacks import StackDiff
    from profilekit.session import Session


@record(slots=True)
class StackImpact:
    spec: str
    diff: StackDiff | None = None  # None: it no longer composes
    findings: list[Finding] = field(default_factory=list)  # why it no longer composes


def stack_impacts(before: Session, after: Session) -> list[StackImpact]:
    """Each stack lint checks alone (before or after), composed in both sessions; a stack broken before the
    move is left out (lint says why), one broken only after it is reported with its findings."""
    found: list[StackImpact] = []
    for spec in dict.fromkeys([*all_stacks(before), *all_stacks(after)]):
        try:
            a = before.stack(spec)
        except FindingsError:
            continue
        try:
            b = after.stack(spec)
        except FindingsError as exc:
            found.append(StackImpact(spec, None, list(exc.findings)))
            continue
        found.append(
            StackImpact(
                spec, diff_stacks(a, b, version=after.version, catalogue=after.catalogue, roles=role_union(a, b))
            )
        )
    return found
