"""`profilekit diff`: two stacks key by key, or one stack across two vLLM releases (upgrade impact)."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from profilekit.cli.common import (
    TEXT_OR_JSON,
    G,
    check_format,
    open_session,
    print_report,
    redactor,
    warn,
)
from profilekit.diff.report import stack_diff_json, stack_diff_text
from profilekit.diff.stacks import diff_stacks
from profilekit.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from profilekit.session import Session
from profilekit.upgrade.impact import upgrade_stack
from profilekit.upgrade.report import upgrade_json, upgrade_text

if TYPE_CHECKING:
    from profilekit.compose.model import Stack
    from profilekit.session import Session


def pick_roles(stacks: list[Stack], role: str | None) -> list[str]:
    """Every role of the stacks (the first stack's order first), or `role`, which one of them must have."""
    names: list[str] = []
    for stack in stacks:
        names += [name for name in stack.roles if name not in names]
    if role is None:
        return names
    if role not in names:
        close = difflib.get_close_matches(role, names, n=1)
        hint = f"did you mean {close[0]!r}?" if close else "roles of these stacks: " + ", ".join(names)
        specs = " and ".join(repr(s.spec) for s in stacks)
        raise UsageError(f"no role {role!r} in {specs}", hint=hint)
    return [role]


def _stacks(session: Session, spec_a: str, spec_b: str, role: str | None, fmt: str) -> int:
    session.layers.parse_stack(spec_a)  # both names are checked before either stack is composed
    session.layers.parse_stack(spec_b)
    a, b = session.stack(spec_a), session.stack(spec_b)
    warn(session.warnings(a) + session.warnings(b))
    roles = pick_roles([a, b], role)
    diff = diff_stacks(a, b, version=session.version, catalogue=session.catalogue, roles=roles)
    redact = redactor()
    print_report(stack_diff_json(diff, redact), stack_diff_text(diff, redact), fmt)
    return EXIT_OK if diff.equal else EXIT_FINDINGS


def _releases(spec: str, from_release: str | None, to_release: str, role: str | None, fmt: str) -> int:
    old = open_session() if from_release is None else Session.open(repo=G.repo, vllm_version=from_release)
    new = Session.open(repo=G.repo, vllm_version=to_release)
    G.session = new  # both read the same files: one redaction rule covers them
    old.layers.parse_stack(spec)
    before, after = old.stack(spec), new.stack(spec)
    roles = pick_roles([before, after], role)
    report = upgrade_stack(old, new, before, after, roles)
    redact = redactor()
    print_report(upgrade_json(report, redact), upgrade_text(report, redact), fmt)
    return EXIT_OK if report.equal else EXIT_FINDINGS


def diff(
    *,
    stacks: list[str],
    role: str | None = None,
    fmt: str = "text",
    from_release: str | None = None,
    to_release: str | None = None,
) -> int:
    """`profilekit diff`, as cli/parsers/diff.py declares it."""
    check_format(fmt, TEXT_OR_JSON)
    if to_release is None and from_release is not None:
        raise UsageError("--from-release needs --to-release", hint="e.g. --from-release 0.30.0 --to-release 0.33.0")
    if to_release is not None:
        if len(stacks) != 1:
            raise UsageError("an upgrade diff takes one stack", hint=f"profilekit diff STACK --to-release {to_release}")
        return _releases(stacks[0], from_release, to_release, role, fmt)
    if len(stacks) != 2:
        raise UsageError(
            "diff takes two stacks, or one stack with --to-release",
            hint="profilekit diff STACK_A STACK_B, or profilekit diff STACK --from-release X --to-release Y",
        )
    return _stacks(open_session(), stacks[0], stacks[1], role, fmt)
