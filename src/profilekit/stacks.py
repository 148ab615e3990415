"""Stacks as the command line names them: several at once, `--all`, and a stack that works to suggest."""

from __future__ import annotations

from typing import TYPE_CHECKING

from profilekit.errors import Finding, UsageError

if TYPE_CHECKING:
    from profilekit.session import Session

# how many candidate stacks the abstract-only hint composes and checks before it gives up looking
_SUGGESTION_BUDGET = 24


def all_stacks(session: Session) -> list[str]:
    """`--all`: every deployable layer, then every `[lint] stacks` entry, each once (what `lint` checks alone)."""
    found: list[str] = []
    for name in session.layers.files:
        layer, _problems = session.layers.get(name)
        if layer is None or not layer.data.layer.abstract:  # a broken file is reported when its stack is read
            found.append(name)
    found += session.config.lint.stacks
    return list(dict.fromkeys(found))


def chosen_stacks(session: Session, stacks: list[str], *, every: bool) -> list[str]:
    """The stacks a command runs on: those named, or `--all`; naming neither, or both, is a usage error."""
    if every and stacks:
        raise UsageError("give stacks or --all, not both", hint="--all means every stack lint checks alone")
    if every:
        found = all_stacks(session)
        if not found:
            raise UsageError("--all found no stack", hint="add a layer that is not abstract, or [lint] stacks")
        return found
    if not stacks:
        raise UsageError("missing STACK", hint="name layers joined by '+' (e.g. base+replayssm), or pass --all")
    for spec in stacks:  # every name is checked before any stack is composed
        session.layers.parse_stack(spec)
    return list(dict.fromkeys(stacks))


def distinct(findings: list[Finding]) -> list[Finding]:
    """Sorted, each once: a fault of a file that several of the stacks read is reported once."""
    seen: set[tuple[object, ...]] = set()
    kept: list[Finding] = []
    for f in sorted(findings, key=lambda f: f.sort_key()):
        key = (f.rule, f.severity, f.message, tuple(f.locations), f.stack, f.role)
        if key not in seen:
            seen.add(key)
            kept.append(f)
    return kept


def working_stack(session: Session, names: list[str]) -> str | None:
    """A stack with every layer of `names` that composes and checks without errors, or None.

    First the stacks `--all` names that already compose those layers (a deployable layer that extends them,
    a `[lint] stacks` entry), then each deployable layer with the named ones on top.
    """
    deployable = [s for s in all_stacks(session) if "+" not in s]
    candidates: list[str] = []
    for spec in all_stacks(session):
        linear, problems = session.layers_of(spec)
        if not problems and set(names) <= set(linear):
            candidates.append(spec)
    candidates += ["+".join([layer, *names]) for layer in deployable if layer not in names]
    for spec in candidates[:_SUGGESTION_BUDGET]:
        if session.works(spec):
            return spec
    return None
