"""Lint a whole profile repository (DESIGN section 10): every file, every deployable layer, every listed stack,
and combinations of layers, with all findings of the repository in one report.

The unit of work is a *stack*: each is composed and checked once (`_Checker` caches the results by layer
names), so combinations reuse the single-layer results they are compared against.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import field
from typing import TYPE_CHECKING, Any

from profilekit.compose.lineage import cycle_reach
from profilekit.compose.linearise import linearise
from profilekit.compose.names import reference_findings
from profilekit.errors import Finding, Ignored, Severity
from profilekit.lint.cache import layer_facts
from profilekit.records import record
from profilekit.rules.declared import group_clashes, layer_head, named_conflicts
from profilekit.rules.options import layer_option_findings
from profilekit.rules.selection import Selection, config_findings, layer_findings, report

if TYPE_CHECKING:
    from profilekit.lint.cache import LintCache
    from profilekit.load.layers import Layer
    from profilekit.session import Session

# rules whose findings mean the layers were declared exclusive: a combination that gives them is not linted
_EXCLUSIVE = frozenset({"group-conflict", "declared-conflict"})
# findings about files, not about what the layers do together
_FILE_RULES = frozenset(
    {
        "toml-syntax",
        "invalid-layer",
        "duplicate-option",
        "extends-cycle",
        "unknown-layer",
        "unknown-capability",
        "unknown-role",
        "unset-removes-nothing",
    }
)


@record(frozen=True, slots=True)
class Pair:
    """What lint found when it composed two deployable layers (the compatibility matrix of `--format markdown`).

    `kind` is one of: `composes` (no error the two layers do not give alone), `exclusive` (declared: same
    `group` or a `conflicts` entry; `reasons` says which, e.g. `group model`, `conflicts @kv-connector`),
    `undeclared` (breaks the rules in `reasons` together, and nothing declares them exclusive), `broken`
    (a member's files do not load, so the pair cannot be composed).
    """

    kind: str
    reasons: tuple[str, ...] = ()


BROKEN = Pair("broken")
COMPOSES = Pair("composes")


@record(slots=True)
class LintReport:
    findings: list[Finding]
    files: int
    stacks: list[str] = field(default_factory=list)  # every stack composed and checked
    combinations: int = 0  # layer combinations checked for undeclared conflicts
    mode: str = "none"  # the combinations mode the lint ran with: none, pairs or all
    deployable: list[str] = field(default_factory=list)  # non-abstract layers that load, in repository order
    pairs: dict[tuple[str, str], Pair] = field(default_factory=dict)  # (a, b) in `deployable` order
    # deployable layers whose `extends` do not close: every pair with one is `broken`, and is not in `pairs`
    # (a 5,000-layer cycle would otherwise hold 12.5 million of them)
    broken: list[str] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)  # the warnings the rule selection left out

    def pair(self, a: str, b: str) -> Pair | None:
        """What the pair of `a` and `b` gave (in either order), None when it was not checked."""
        if self.broken and (a in self.broken or b in self.broken):
            return BROKEN
        return self.pairs.get((a, b)) or self.pairs.get((b, a))

    def every_pair(self) -> Iterator[tuple[tuple[str, str], Pair]]:
        """Every pair checked and what it gave: those in `pairs`, then each pair with a `broken` member."""
        yield from self.pairs.items()
        if self.broken:
            broken = set(self.broken)
            for a, b in itertools.combinations(self.deployable, 2):
                if a in broken or b in broken:
                    yield (a, b), BROKEN


class _Checker:
    """Composes and checks stacks of one session; each distinct stack once, and with a `LintCache`, only the
    stacks whose layers changed since the last lint. A result is (whether the stack composed, its findings)."""

    def __init__(self, session: Session, units: LintCache | None, facts: dict[str, dict[str, Any]]) -> None:
        self.session = session
        self.units = units
        self.facts = facts
        self.results: dict[tuple[str, ...], tuple[bool, list[Finding]]] = {}

    def run(self, names: list[str], spec: str | None = None) -> tuple[bool, list[Finding]]:
        key = tuple(names)
        if key not in self.results:
            self.results[key] = self._settled(names, spec or "+".join(names))
        return self.results[key]

    def _settled(self, names: list[str], spec: str) -> tuple[bool, list[Finding]]:
        if self.units is None:
            return self._run(names, spec)
        key = self.units.stack_key(names, spec, self.facts)
        known = self.units.stack(key)
        if known is None:
            known = self._run(names, spec)
            self.units.put_stack(key, *known)
        return known

    def _run(self, names: list[str], spec: str) -> tuple[bool, list[Finding]]:
        if len(names) == 1 and spec == names[0]:
            stack, problems = self.session.compose_layer(spec)
        else:
            stack, problems = self.session.compose(names, spec)
        if problems or stack is None:
            for finding in problems:
                finding.stack = spec
            return stack is not None, problems
        return True, self.session.check(stack)


def lint_repository(
    session: Session,
    *,
    combinations: str | None = None,
    units: LintCache | None = None,
    sources: bool = False,
    selection: Selection | None = None,
) -> LintReport:
    """Every finding of the repository of `session`, deduplicated and sorted by file and line.

    The layers of its sources count where the repository uses them; with `sources`, each source's own layers
    are linted too (files and deployable layers, against this repository's release).
    With `units` (the cache of the last lint), a file or stack whose inputs did not change is not checked again;
    the report is the same. The units hold every finding: `selection` (every rule when None) and the layers'
    `[layer] ignore` choose among them afterwards, so a lint with other `--select`/`--ignore` reuses them.
    """
    layer_index = session.layers
    findings: list[Finding] = list(session.config_findings)
    facts = _facts(session, units)
    checker = _Checker(session, units, facts)
    scope = list(layer_index.files) if sources else layer_index.local

    # 1. every file parses and matches the schema
    for name in scope:
        findings += _file_findings(session, name, facts[name], units)

    stacks: list[str] = []
    # extends cycles, found once for the whole repository: no stack that reaches one is composed (composing
    # each would walk the cycle again and report it from another layer: a 5,000-layer cycle 5,000 times)
    cyclic = cycle_reach({name: f["extends"] for name, f in facts.items()})
    skipped: dict[str, list[str]] = {}  # a member of each cycle -> the stacks that reach that cycle

    # 2. every non-abstract layer, composed with its extends
    deployable = [name for name in scope if facts[name]["loaded"] and not facts[name]["abstract"]]
    for name in deployable:
        if name in cyclic:
            skipped.setdefault(cyclic[name], []).append(name)
            continue
        stacks.append(name)
        findings += checker.run([name])[1]

    # 3. every stack listed in [lint] stacks
    for index, spec in enumerate(session.config.lint.stacks):
        names, problem = _parse_listed(session, index, spec)
        if problem is not None:
            findings.append(problem)
            continue
        reached = next((cyclic[n] for n in names if n in cyclic), None)
        if reached is not None:
            skipped.setdefault(reached, []).append(spec)
            continue
        stacks.append(spec)
        findings += checker.run(names, spec)[1]
    findings += _cycle_findings(session, cyclic, skipped)

    # 4. combinations of layers that nobody declared exclusive
    mode = combinations or session.config.lint.combinations
    checked = 0
    pairs: dict[tuple[str, str], Pair] = {}
    broken: list[str] = []
    if mode in ("pairs", "all"):
        closures = _Closures(session, cyclic)
        broken = [name for name in deployable if not closures.closes(name)]
        found, checked = _combinations(checker, closures, deployable, pairs, all_subsets=mode == "all")
        findings += found

    findings += config_findings(session.config.lint, session.config_location)
    findings += session.models().problems() + session.models().unused(_served(facts))

    if units is not None:
        units.save()
    chosen = report(findings, selection or Selection(), lambda name: facts.get(name, {}).get("ignore", {}), _dedupe)
    return LintReport(
        chosen.findings, len(scope), stacks, checked, mode, deployable, pairs, broken, ignored=chosen.ignored
    )


def _served(facts: dict[str, dict[str, Any]]) -> list[str] | None:
    """Every model id a layer serves; None when one is a `${...}` reference, which may name any model."""
    models = [model for f in facts.values() for model in f.get("models", [])]
    return None if any("${" in model for model in models) else models


# a note names this many of the stacks an extends cycle kept lint from composing, then says how many more
_SKIPPED_SHOWN = 6


def _cycle_findings(session: Session, cyclic: dict[str, str], skipped: dict[str, list[str]]) -> list[Finding]:
    """Each extends cycle once, as `list` and `check` report it, noting the stacks lint did not compose for it.

    One walk over the layers that reach a cycle, in repository order: the same walk `list` makes over every
    layer, since no layer outside `cyclic` leads into one. Unknown names on the way are reported there too; a
    file's own problems are its file findings.
    """
    if not cyclic:
        return []

    _order, found = linearise(session.layers, [name for name in session.layers.files if name in cyclic])
    kept: list[Finding] = []
    noted: set[str] = set()
    for finding in found:
        if finding.rule == "extends-cycle" and finding.locations:
            member = cyclic.get(finding.locations[0].layer, "")
            if member in skipped and member not in noted:
                noted.add(member)
                finding.notes.append(_skipped_note(skipped[member]))
        if finding.rule in ("extends-cycle", "unknown-layer"):
            kept.append(finding)
    return kept


def _skipped_note(stacks: list[str]) -> str:
    shown = ", ".join(stacks[:_SKIPPED_SHOWN])
    more = f" and {len(stacks) - _SKIPPED_SHOWN} more" if len(stacks) > _SKIPPED_SHOWN else ""
    what = "stack reaches" if len(stacks) == 1 else f"{len(stacks)} stacks reach"
    return f"not composed: {what} this cycle through extends ({shown}{more})"


def _facts(session: Session, units: LintCache | None) -> dict[str, dict[str, Any]]:
    """What lint needs of every file (extends, provides, roles, loaded, abstract): stored, or read from it."""
    facts: dict[str, dict[str, Any]] = {}
    for name in session.layers.files:
        known = units.known_facts(name) if units is not None else None
        facts[name] = known if known is not None else layer_facts(session.layers.get(name)[0])
    if units is not None:
        units.set_scope(facts)
        # the capabilities every layer provides and the roles it declares, known without reading the unchanged files
        session.layers.seed(
            provides={n: f["provides"] for n, f in facts.items()}, roles={n: f["roles"] for n, f in facts.items()}
        )
    return facts


def _file_findings(session: Session, name: str, facts: dict[str, Any], units: LintCache | None) -> list[Finding]:
    """A file's own problems: syntax and schema, names it refers to, options the release does not have."""
    known = units.file_findings(name) if units is not None else None
    if known is not None:
        return known
    layer, found = session.layers.get(name)
    found = list(found)
    if layer is not None:
        found += reference_findings(session.layers, layer)
        found += layer_findings(layer) if layer.data.layer.ignore else []
        if session.catalogue is not None:
            found += layer_option_findings(layer, session.catalogue)
    if units is not None:
        units.put_file(name, facts, found)
    return found


def _parse_listed(session: Session, index: int, spec: str) -> tuple[list[str], Finding | None]:
    """A `[lint] stacks` entry: its layer names, or a finding at its place in profilekit.toml."""
    names = [part.strip() for part in spec.split("+")]
    where = session.config_location(("lint", "stacks", index))
    unknown = [n for n in names if n not in session.layers.files]
    if not spec.strip() or any(not n for n in names):
        return [], Finding(
            "unknown-layer",
            Severity.ERROR,
            f"lint.stacks[{index}]: {spec!r} is not a stack",
            [where],
            fix="write layer names joined by '+', e.g. base+replayssm",
        )
    if unknown:
        hint = session.layers.suggest(unknown[0])
        return [], Finding(
            "unknown-layer",
            Severity.ERROR,
            f"lint.stacks[{index}] names no layer: {unknown[0]!r}",
            [where],
            fix=hint or "fix the name, or remove the stack from [lint] stacks",
        )
    loaded = [session.layers.get(n)[0] for n in names]
    if all(layer is not None and layer.data.layer.abstract for layer in loaded):
        return [], Finding(
            "unknown-layer",
            Severity.ERROR,
            f"lint.stacks[{index}]: {spec!r} names only abstract layers, which are never deployed alone",
            [where],
            fix="add a deployable layer to the stack",
        )
    return names, None


def _errors(findings: list[Finding]) -> set[tuple[str, str | None]]:
    return {(f.rule, f.role) for f in findings if f.is_error}


def _combinations(
    checker: _Checker,
    closures: _Closures,
    deployable: list[str],
    pairs: dict[tuple[str, str], Pair],
    *,
    all_subsets: bool,
) -> tuple[list[Finding], int]:
    """`undeclared-conflict`: combinations that break a rule no member breaks alone, and nothing declares exclusive.

    A combination is *declared exclusive* when composing it gives `group-conflict` or `declared-conflict`.
    With `all_subsets`, every legal subset (no two members exclusive) of two or more layers is checked.
    What each pair gave is recorded in `pairs`, but for a pair with a member whose `extends` do not close (a
    cycle, an unknown or broken layer): that breaks every pair it is in, as composing would find again for each
    pair; lint reported it once, with the member alone. Such pairs are counted, not visited.
    """
    findings: list[Finding] = []
    checked = len(deployable) * (len(deployable) - 1) // 2
    exclusive: set[frozenset[str]] = set()
    legal_pairs: list[tuple[str, str]] = []
    closing = [name for name in deployable if closures.closes(name)]
    for a, b in itertools.combinations(closing, 2):
        inner = checker.session.lineages().within(a, b)  # the pair is this member's stack, when one extends the other
        reasons = closures.declared_exclusive(a, b) if inner is None else closures.own_reasons(inner)
        if reasons:  # the same verdict composing would give, without composing
            exclusive.add(frozenset((a, b)))
            pairs[a, b] = Pair("exclusive", reasons)
            continue
        if inner is not None:  # what composing the pair gives is what the member alone gave: no new error
            found = checker.run([inner])[1]
            if any(f.rule in _EXCLUSIVE for f in found):
                pairs[a, b] = _exclusive_pair(checker, found)
                continue
            legal_pairs.append((a, b))
            pairs[a, b] = COMPOSES
            continue
        composed, found = checker.run([a, b])
        if not composed or any(f.rule in _EXCLUSIVE for f in found):
            exclusive.add(frozenset((a, b)))
            pairs[a, b] = _exclusive_pair(checker, found) if composed else BROKEN
            continue
        legal_pairs.append((a, b))
        new = _new_errors(checker, [a, b], found)
        findings += _undeclared(checker, [a, b], new)
        pairs[a, b] = Pair("undeclared", tuple(sorted({f.rule for f in new}))) if new else Pair("composes")
    if all_subsets:
        compatible: dict[str, set[str]] = {n: set() for n in deployable}
        for a, b in legal_pairs:
            compatible[a].add(b)
            compatible[b].add(a)
        for subset in _cliques(deployable, compatible, minimum=3):
            composed, found = checker.run(subset)
            checked += 1
            if not composed or any(f.rule in _EXCLUSIVE for f in found):
                continue
            findings += _undeclared(checker, subset, _new_errors(checker, subset, found))
    return findings, checked


class _Closures:
    """Each deployable layer's `extends` closure, to tell declared-exclusive pairs before composing them.

    Two layers are declared exclusive by name when their closures hold two layers of one `group`, or a layer
    whose `conflicts` names another layer of the union: what `group-conflict` and `declared-conflict` would
    find in the composed pair. Conflicts with a capability depend on the composed values and are left to
    composing.
    """

    def __init__(self, session: Session, cyclic: dict[str, str]) -> None:
        self.session = session
        # a layer that reaches an extends cycle has no closure: known without walking the cycle again
        self.known: dict[str, tuple[Layer, ...] | None] = dict.fromkeys(cyclic)
        self.own: dict[str, tuple[str, ...]] = {}

    def closes(self, name: str) -> bool:
        """Whether `name`'s `extends` closure loads without a problem (known without listing it)."""
        return self.known.get(name, ()) is not None and self.session.lineages().node(name) is not None

    def closure(self, name: str) -> tuple[Layer, ...] | None:
        if name not in self.known:
            node = self.session.lineages().node(name)
            self.known[name] = None if node is None else tuple(node.layers())
        return self.known[name]

    def declared_exclusive(self, a: str, b: str) -> tuple[str, ...]:
        """Why `a` and `b` are declared exclusive by name (`group G`, `conflicts L`); empty when they are not."""
        first, second = self.closure(a), self.closure(b)
        if first is None or second is None:
            return ()  # composing reports what is wrong with the files
        return _declared_reasons(list({layer.name: layer for layer in (*first, *second)}.values()))

    def own_reasons(self, name: str) -> tuple[str, ...]:
        """`declared_exclusive` of a pair whose union is `name`'s closure (one member extends the other)."""
        if name not in self.own:
            node = self.session.lineages().node(name)
            self.own[name] = _declared_reasons(node.layers()) if node is not None else ()
        return self.own[name]


def _declared_reasons(union: list[Layer]) -> tuple[str, ...]:
    """The groups two layers of `union` share and the `conflicts` entries naming a layer of it, layer by layer."""
    at = {id(layer): i for i, layer in enumerate(union)}
    found = [(at[id(later)], f"group {group}") for group, _first, later in group_clashes(union)]
    found += [(at[id(layer)], f"conflicts {ref}") for layer, ref in named_conflicts(union)]
    found.sort(key=lambda item: item[0])  # stable: layer by layer, its group before its conflicts entries
    return tuple(dict.fromkeys(reason for _i, reason in found))


def _cliques(names: list[str], compatible: dict[str, set[str]], *, minimum: int) -> list[list[str]]:
    """Every subset (in repository order) whose members are pairwise compatible, of at least `minimum` layers."""
    out: list[list[str]] = []

    def grow(current: list[str], candidates: list[str]) -> None:
        if len(current) >= minimum:
            out.append(list(current))
        for i, name in enumerate(candidates):
            grow([*current, name], [c for c in candidates[i + 1 :] if c in compatible[name]])

    for i, name in enumerate(names):
        grow([name], [c for c in names[i + 1 :] if c in compatible[name]])
    return out


def _exclusive_pair(checker: _Checker, found: list[Finding]) -> Pair:
    """Why a pair is declared exclusive: the groups its layers share, the `conflicts` entries that matched."""
    reasons: list[str] = []
    for f in found:
        if f.rule == "group-conflict" and f.locations:
            layer = checker.session.layers.get(f.locations[0].layer)[0]
            group = layer.data.layer.group if layer is not None else None
            reason = f"group {group}" if group else "group"
        elif f.rule == "declared-conflict" and f.locations:
            layer = checker.session.layers.get(f.locations[0].layer)[0]
            index = f.locations[0].key.rpartition("[")[2].rstrip("]")
            entries = layer.data.layer.conflicts if layer is not None else []
            ref = entries[int(index)] if index.isdigit() and int(index) < len(entries) else ""
            reason = f"conflicts {ref}".rstrip()
        else:
            continue
        if reason not in reasons:
            reasons.append(reason)
    return Pair("exclusive", tuple(reasons))


def _new_errors(checker: _Checker, members: list[str], found: list[Finding]) -> list[Finding]:
    """The errors of a combination that no member (nor, for three or more, no smaller combination) gives alone."""
    alone: set[tuple[str, str | None]] = set()
    for name in members:
        alone |= _errors(checker.run([name])[1])
    if len(members) > 2:  # an error that a smaller combination already gives was reported there
        for smaller in itertools.combinations(members, len(members) - 1):
            alone |= _errors(checker.run(list(smaller))[1])
    return [f for f in found if f.is_error and (f.rule, f.role) not in alone and f.rule not in _FILE_RULES]


def _undeclared(checker: _Checker, members: list[str], new: list[Finding]) -> list[Finding]:
    """The `undeclared-conflict` warning for a combination whose `new` errors nothing declares."""
    if not new:
        return []
    spec = "+".join(members)
    rules = sorted({f.rule for f in new})
    first = new[0]
    layers = [checker.session.layers.get(n)[0] for n in members]
    heads = [layer_head(layer) for layer in layers if layer is not None]
    declare = f'conflicts = ["{members[1]}"]' if len(members) == 2 else "conflicts = [...]"
    return [
        Finding(
            "undeclared-conflict",
            Severity.WARNING,
            f"layers {', '.join(repr(n) for n in members)} break {', '.join(rules)} together, and "
            + ("neither declares the other" if len(members) == 2 else "none of them declares the others")
            + f" exclusive (check {spec}: {first.message})",
            [*heads, *first.locations],
            f"declare it in the [layer] table of {members[0]!r}: {declare} (or put the layers in one group); "
            'a conflict with a capability (e.g. "@kv-connector") covers every layer that brings it',
            stack=spec,
        )
    ]


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per problem: the same layer fault reached through several stacks is reported once."""
    seen: set[tuple[object, ...]] = set()
    kept: list[Finding] = []
    for f in sorted(findings, key=lambda f: f.sort_key()):
        key = (f.rule, f.severity, f.message, tuple(f.locations), f.role)
        if key in seen:
            continue
        seen.add(key)
        kept.append(f)
    return kept
