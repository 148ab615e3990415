"""Stacks as the command line names them: several at once, `--all`, and a stack that works to suggest."""

from __future__ import annotations

from typing import TYPE_CHECKING

from profilekit.errors import Finding, UsageError

if TYPE_CHECKING:
    from profilekit.session import Session

# how many candidate stacks the abstract-only hint composes and checks before it gives up looking
_SUGGESTION_BUDGET = 24


def deployable_layers(session: Session) -> list[str]:
    """Every layer of the repository (not of its sources) that is not abstract (a file that does not load
    counts: its stack reports why)."""
    found: list[str] = []
    for name in session.layers.local:
        layer, _problems = session.layers.get(name)
        if layer is None or not layer.data.layer.abstract:
            found.append(name)
    return found


def all_stacks(session: Session) -> list[str]:
    """`--all`: every deployable layer, then every `[lint] stacks` entry, each once (what `lint` checks alone)."""
    return list(dict.fromkeys([*deployable_layers(session), *session.config.lint.stacks]))


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
    deployable = deployable_layers(session)
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


def working_stack_hint(session: Session, spec: str, names: list[str]) -> str:
    """The hint for a stack of abstract layers only: a stack with them that works, or how to make one."""
    found = working_stack(session, names)
    if found is not None:
        return f"abstract layers are mixins, never deployed alone; a stack with them that works: {found}"
    deployable = deployable_layers(session)
    if not deployable:
        return "abstract layers are mixins, never deployed alone: add a layer without `abstract = true` to compose them with"
    example = f"{deployable[0]}+{spec}"
    return (
        f"abstract layers are mixins, never deployed alone: compose them with a deployable layer, e.g. {example} "
        f"(no such stack checks clean yet: `profilekit check {example}` says why)"
    )
