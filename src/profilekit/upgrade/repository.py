"""`profilekit lint --to-release X`: the upgrade impact on a whole repository.

Every stack lint composes (deployable layers and `[lint] stacks`) is compared across the two releases; an
impact that many stacks share (a layer's option, a default under every role) is listed once with the stacks
and roles it reaches. Findings are compared over the whole lint of each release, combinations included.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from profilekit.diff.report import line_json, line_text
from profilekit.lint.repository import lint_repository
from profilekit.records import record
from profilekit.upgrade.impact import FindingChange, Upgrade, finding_changes, upgrade_stack
from profilekit.upgrade.report import change_json, change_text, impact_json, impact_text

if TYPE_CHECKING:
    from profilekit.diff.stacks import LineChange
    from profilekit.redact import Redactor
    from profilekit.session import Session
    from profilekit.upgrade.facts import Impact


@record(slots=True)
class Reach:
    """An impact and every (stack, role) it reaches."""

    impact: Impact
    where: list[tuple[str, str]] = field(default_factory=list)


@record(slots=True)
class RepoUpgrade:
    old: str
    new: str
    stacks: list[str]
    impacts: list[Reach]
    command_lines: list[tuple[str, str, list[LineChange]]]  # (stack, role, changes)
    findings: list[FindingChange]

    @property
    def equal(self) -> bool:
        return not (self.impacts or self.command_lines or self.findings)


def upgrade_repository(old: Session, new: Session, *, combinations: str | None) -> RepoUpgrade:
    before = lint_repository(old, combinations=combinations)
    after = lint_repository(new, combinations=combinations)
    changes = finding_changes(before.findings, after.findings, old.version, new.version)
    reports = [r for r in (_stack(old, new, spec) for spec in before.stacks) if r is not None]
    return RepoUpgrade(old.version, new.version, before.stacks, _group(reports), _lines(reports), changes)


def _stack(old: Session, new: Session, spec: str) -> Upgrade | None:
    """One stack's impact, or None when it does not compose (lint reports that as a finding)."""
    names = [part.strip() for part in spec.split("+")]
    a, problems_a = old.compose(names, spec)
    b, problems_b = new.compose(names, spec)
    if a is None or b is None or problems_a or problems_b:
        return None
    roles = [*a.roles, *(n for n in b.roles if n not in a.roles)]
    return upgrade_stack(old, new, a, b, roles, findings=False)


def _group(reports: list[Upgrade]) -> list[Reach]:
    grouped: dict[tuple[object, ...], Reach] = {}
    for report in reports:
        for role in report.changed:
            for impact in [*role.options, *role.defaults]:
                key = (impact.kind, impact.key, impact.message, impact.locations, impact.reason)
                grouped.setdefault(key, Reach(impact)).where.append((report.stack, role.role))
    return list(grouped.values())


def _lines(reports: list[Upgrade]) -> list[tuple[str, str, list[LineChange]]]:
    return [(r.stack, role.role, role.command_line) for r in reports for role in r.changed if role.command_line]


# ---- output -------------------------------------------------------------------------------------


def _reach_text(reach: Reach) -> str:
    return "        in " + ", ".join(f"{stack} ({role})" for stack, role in reach.where)


def repo_text(report: RepoUpgrade, redact: Redactor) -> str:
    n = len(report.stacks)
    lines = [f"lint: vLLM {report.old} -> {report.new}, {n} stack{'s' if n != 1 else ''}"]
    if report.impacts:
        lines.append("options and defaults:")
        for reach in report.impacts:
            lines += [*impact_text(reach.impact, redact), _reach_text(reach)]
    if report.findings:
        lines.append("findings (+ appear, - disappear):")
        for change in report.findings:
            lines += change_text(change, redact)
    for stack, role, changes in report.command_lines:
        lines += [f"command line of {stack} ({role}):", *(line_text(line, env=False) for line in changes)]
    lines.append(repo_summary(report))
    return "\n".join(lines)


def repo_summary(report: RepoUpgrade) -> str:
    if report.equal:
        return f"no impact: vLLM {report.new} reads every stack as {report.old} does"
    appear = [c for c in report.findings if c.change == "appears"]
    errors = sum(c.finding.is_error for c in appear)
    gone = len(report.findings) - len(appear)
    return (
        f"{len(report.impacts)} option and default changes, {len(appear)} new findings ({errors} errors), "
        f"{gone} findings gone, {len(report.command_lines)} command lines changed"
    )


def repo_json(report: RepoUpgrade, redact: Redactor) -> dict[str, Any]:
    return {
        "from_release": report.old,
        "to_release": report.new,
        "stacks": report.stacks,
        "equal": report.equal,
        "impacts": [
            {**impact_json(r.impact, redact), "reached": [{"stack": s, "role": role} for s, role in r.where]}
            for r in report.impacts
        ],
        "findings": [change_json(c, redact) for c in report.findings],
        "command_lines": [
            {"stack": s, "role": role, "changes": [redact.value(line_json(x, env=False)) for x in changes]}
            for s, role, changes in report.command_lines
        ],
    }
