"""Upgrade impact: what moving one stack from one vLLM release to another changes, per role.

- options the stack sets that the new release no longer has, parses differently (type, choices, switch or
  value, number of values) or deprecates, from the generated flag catalogues; `VLLM_*` variables the new
  release's `vllm/envs.py` no longer knows, with the rename where `envs-renamed.json` records it;
- defaults that change under the stack: catalogue defaults of options it leaves unset, and what vLLM
  derives per model (prefix caching, and with it the Mamba cache mode), from the rules' per-role facts;
- findings that appear or disappear (the rule engine run for both releases), with the rule registry's
  summary and the releases a rule applies to;
- the change in the rendered command line (option spellings differ between releases).
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Literal

from profilekit.diff.stacks import LineChange, command_lines, line_changes
from profilekit.records import record
from profilekit.rules import RULES
from profilekit.rules.facts import stack_facts
from profilekit.upgrade.facts import Impact, default_impacts, env_impacts, option_impacts

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig, Stack
    from profilekit.errors import Finding
    from profilekit.rules.facts import RoleFacts
    from profilekit.session import Session


@record(frozen=True, slots=True)
class FindingChange:
    change: Literal["appears", "disappears"]
    finding: Finding
    reason: str


@record(slots=True)
class RoleUpgrade:
    role: str
    presence: Literal["both", "a", "b"]
    options: list[Impact] = field(default_factory=list)
    defaults: list[Impact] = field(default_factory=list)
    findings: list[FindingChange] = field(default_factory=list)
    command_line: list[LineChange] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not (self.options or self.defaults or self.findings or self.command_line)


@record(slots=True)
class Upgrade:
    stack: str
    old: str  # the release upgraded from
    new: str
    roles: list[RoleUpgrade]
    findings: list[FindingChange]  # findings about the whole stack (no role)

    @property
    def equal(self) -> bool:
        return not self.findings and all(r.equal for r in self.roles)

    @property
    def changed(self) -> list[RoleUpgrade]:
        return [r for r in self.roles if not r.equal]


def upgrade_stack(
    old: Session, new: Session, before: Stack, after: Stack, roles: list[str], *, findings: bool = True
) -> Upgrade:
    """The impact of moving `before` (composed for `old`'s release) to `new`'s release (`after`).

    Without `findings`, the rule engine is not run (lint compares the findings of the whole repository).
    """
    changes = finding_changes(old.check(before), new.check(after), old.version, new.version) if findings else []
    facts_old = stack_facts(before, old.version, old.root, old.models())
    facts_new = stack_facts(after, new.version, new.root, new.models())
    out: list[RoleUpgrade] = []
    for name in roles:
        pair = (before.roles.get(name), after.roles.get(name))
        role = _role_upgrade(old, new, name, pair, (facts_old.get(name), facts_new.get(name)))
        role.findings = [c for c in changes if c.finding.role == name]
        out.append(role)
    stack_wide = [c for c in changes if c.finding.role is None]
    return Upgrade(before.spec, old.version, new.version, out, stack_wide)


def _role_upgrade(
    old: Session,
    new: Session,
    name: str,
    pair: tuple[RoleConfig | None, RoleConfig | None],
    facts: tuple[RoleFacts | None, RoleFacts | None],
) -> RoleUpgrade:
    a, b = pair
    presence: Literal["both", "a", "b"] = "both" if a and b else ("a" if a else "b")
    result = RoleUpgrade(name, presence)
    result.command_line = line_changes(command_lines(a, old.catalogue), command_lines(b, new.catalogue))
    if a is None or b is None or not a.is_vllm:
        if a is not None:
            result.options = env_impacts(a, old.version, new.version)
        return result
    if old.catalogue is not None and new.catalogue is not None:
        result.options = option_impacts(a, old.catalogue, new.catalogue)
        result.defaults = default_impacts(a, facts[0], facts[1], old.catalogue, new.catalogue)
    result.options += env_impacts(a, old.version, new.version)
    return result


def _finding_key(f: Finding) -> tuple[object, ...]:
    """A finding across releases: its messages name the release, so it is known by rule, role and places."""
    return (f.rule, f.role, tuple((loc.file, loc.line, loc.column, loc.key) for loc in f.locations))


def finding_changes(before: list[Finding], after: list[Finding], old: str, new: str) -> list[FindingChange]:
    """Findings only the old release gives (they disappear) and only the new one gives (they appear)."""
    keys_before = {_finding_key(f) for f in before}
    keys_after = {_finding_key(f) for f in after}
    out = [
        FindingChange("disappears", f, rule_reason(f.rule, old, new))
        for f in before
        if _finding_key(f) not in keys_after
    ]
    out += [
        FindingChange("appears", f, rule_reason(f.rule, old, new)) for f in after if _finding_key(f) not in keys_before
    ]
    return out


def rule_reason(rule_id: str, old: str, new: str) -> str:
    """What the rule registry knows: the rule's summary, and the releases it applies to when they differ."""
    rule = RULES.get(rule_id)
    if rule is None:
        return ""
    reason = rule.summary
    if rule.applies(old) != rule.applies(new):
        reason += f"; the rule applies to vLLM {rule.releases}"
    if rule.source:
        reason += f" ({rule.source})"
    return reason
