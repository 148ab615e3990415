"""The rule engine: the `Rule` record, the registry every rule family adds to, and the run loop.

A rule has a stable id, a severity, the vLLM releases it applies to, a check over one role's facts
(or over the whole stack), a one-line summary and the vLLM source it mirrors. A check yields `Hit`s;
the engine turns them into `Finding`s that carry the stack and role.

Hits of checks that vLLM itself makes carry `order`: where in vLLM's start-up the check runs.
vLLM stops at its first failure; profilekit reports every failing rule, and `Verdict` names the one
vLLM would report, so the two can be compared (tests/oracle/test_verdicts.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from packaging.specifiers import SpecifierSet

from profilekit.errors import Finding, Location, Severity
from profilekit.records import record

if TYPE_CHECKING:
    from profilekit.compose.model import Stack
    from profilekit.rules.facts import RoleFacts
    from profilekit.vllm.catalogue import Catalogue

# Stages of `vllm serve` start-up, in the order vLLM runs them (the first element of Hit.order).
STAGE_ARGPARSE = 0  # the argument parser (unknown options, invalid choices)
STAGE_CONFIG_OBJECTS = 1  # EngineArgs.create_engine_config building sub-configs (KVTransferConfig, ...)
STAGE_POST_INIT = 2  # VllmConfig.__post_init__ (offload connector synthesis, KV transfer compat)
STAGE_VALIDATORS = 3  # VllmConfig model validators (validate_mamba_cached_kernel)

# (stage, rank inside the stage, ...): compared as tuples, so a check may add a step inside its rank
Order = tuple[int, ...]


@record(slots=True)
class Hit:
    """One failure found by a check, before the engine attaches rule metadata."""

    rule: str
    message: str
    locations: list[Location]
    fix: str = ""
    role: str | None = None
    severity: Severity | None = None  # overrides the rule's severity (e.g. a single-role P/D warning)
    order: Order | None = None  # vLLM's start-up order; None: vLLM makes no such check
    notes: list[str] = field(default_factory=list)


@record(slots=True)
class Context:
    """What every check may read: the stack, the target release, and per-role facts."""

    stack: Stack
    version: str
    catalogue: Catalogue | None
    root: Path | None
    facts: dict[str, RoleFacts]
    # profilekit.toml's [services]: local services outside the stack (name -> TCP port), rules/wiring.py
    services: Mapping[str, int] = field(default_factory=dict)
    # what several rules of one run derive alike (e.g. every option problem of the stack), computed once
    memo: dict[str, Any] = field(default_factory=dict)


RoleCheck = Callable[[Context, "RoleFacts"], Iterable[Hit]]
StackCheck = Callable[[Context], Iterable[Hit]]


@record(frozen=True, slots=True)
class Rule:
    """One rule: its stable id, severity, one-line summary, scope, check, releases and vLLM source (docs/RULES.md)."""

    id: str
    severity: Severity
    summary: str
    scope: Literal["role", "stack"]
    check: RoleCheck | StackCheck
    releases: str = ""  # a PEP 440 specifier such as ">=0.29.0"; empty: every supported release
    source: str = ""  # the vLLM source (or document) the rule mirrors

    def applies(self, version: str) -> bool:
        return not self.releases or _in_releases(self.releases, version)


@functools.lru_cache(maxsize=1024)
def _in_releases(releases: str, version: str) -> bool:
    """Whether `version` is in the PEP 440 specifier `releases` (asked once per rule and release, not per stack)."""
    return SpecifierSet(releases).contains(version)


RULES: dict[str, Rule] = {}


def _register(new: Rule) -> None:
    if new.id in RULES:
        raise ValueError(f"rule {new.id!r} registered twice")
    RULES[new.id] = new


def rule(
    rule_id: str, severity: Severity, summary: str, *, releases: str = "", source: str = ""
) -> Callable[[RoleCheck], RoleCheck]:
    """Register a check over one vLLM role's facts (a decorator)."""

    def register(check: RoleCheck) -> RoleCheck:
        _register(Rule(rule_id, severity, summary, "role", check, releases, source))
        return check

    return register


def stack_rule(
    rule_id: str, severity: Severity, summary: str, *, releases: str = "", source: str = ""
) -> Callable[[StackCheck], StackCheck]:
    """Register a check over the whole stack (a decorator)."""

    def register(check: StackCheck) -> StackCheck:
        _register(Rule(rule_id, severity, summary, "stack", check, releases, source))
        return check

    return register


def family_check(rule_id: str, failures: Callable[[RoleFacts], list[Hit]]) -> RoleCheck:
    """The check of one rule of a family that vLLM runs as one sequence, stopping at the first failure.

    The family's `failures` run once per role (kept in `RoleFacts.memo`) however many rules it has; each
    rule reports the hits that are its own.
    """
    key = f"{failures.__module__}.{failures.__qualname__}"

    def check(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
        found: list[Hit] | None = f.memo.get(key)
        if found is None:
            found = f.memo[key] = failures(f)
        return [hit for hit in found if hit.rule == rule_id]

    check.__module__ = failures.__module__  # the rule belongs to the family's module (docs/RULES.md)
    return check


@record(slots=True)
class Verdict:
    """vLLM's verdict as profilekit predicts it for one role: accepted, or the rule that rejects first."""

    accepted: bool
    rule: str | None
    message: str | None


def run_rules(ctx: Context) -> list[tuple[Finding, Order | None]]:
    """Every applicable rule over every role (role rules) and over the stack (stack rules)."""
    out: list[tuple[Finding, Order | None]] = []
    facts = list(ctx.facts.values())
    for r in applicable(ctx.version, len(RULES)):
        if r.scope == "role":
            role_check = cast("RoleCheck", r.check)
            for f in facts:
                for hit in role_check(ctx, f):
                    out.append((_finding(ctx, r, hit), hit.order))
        else:
            for hit in cast("StackCheck", r.check)(ctx):
                out.append((_finding(ctx, r, hit), hit.order))
    return out


def _finding(ctx: Context, r: Rule, hit: Hit) -> Finding:
    return Finding(
        hit.rule,
        hit.severity or (RULES[hit.rule].severity if hit.rule in RULES else r.severity),
        hit.message,
        _dedupe(hit.locations),
        hit.fix,
        stack=ctx.stack.spec,
        role=hit.role,
        notes=list(hit.notes),
    )


@functools.lru_cache(maxsize=16)
def applicable(version: str, registered: int) -> tuple[Rule, ...]:
    """The rules that apply to `version`, in registration order (`registered`: the registry's size, so that a
    rule registered later is not missed)."""
    return tuple(r for r in RULES.values() if r.applies(version))


def _dedupe(locations: list[Location]) -> list[Location]:
    seen: set[tuple[str, int, int, str]] = set()
    kept: list[Location] = []
    for loc in locations:
        key = (loc.file, loc.line, loc.column, loc.key)
        if key not in seen:
            seen.add(key)
            kept.append(loc)
    return kept


def first_rejection(ordered: list[tuple[Finding, Order | None]], role: str) -> Verdict:
    """The error vLLM would report first for `role`, among the findings vLLM also checks."""
    candidates = [
        (order, finding)
        for finding, order in ordered
        if order is not None and finding.is_error and finding.role in (role, None)
    ]
    if not candidates:
        return Verdict(True, None, None)
    _order, finding = min(candidates, key=lambda item: item[0])
    return Verdict(False, finding.rule, finding.message)
