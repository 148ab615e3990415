"""Which rules' warnings a report shows, as ruff chooses its rules (docs/RULES.md, "Choosing rules").

Three places choose: `[lint] select` and `ignore` of profilekit.toml, `--select` and `--ignore` of the command
(over profilekit.toml), and a layer's `[layer] ignore`, whose every entry gives its reason. The resolution is
ruff's: each source in turn, profilekit.toml then the command line; a `select` there starts over with exactly
the rules it names (so `--select X` shows X even where profilekit.toml ignores it), an `ignore` removes rules
from what is chosen so far. A layer's ignore applies to the findings reported at that layer (their first
location), whatever the selection.

Only warnings are chosen. An error is always reported, fails the command and stops a render: each is a start-up
vLLM refuses, a file profilekit cannot read or compose, or a constraint the layers declare, and hiding one
would let a broken deployment render. An error of a rule that an ignore names says so in a note.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from profilekit.errors import Finding, Ignored, Location, Severity, UsageError
from profilekit.records import record
from profilekit.rules.engine import RULES
from profilekit.rules.modelcfg import once_per_model
from profilekit.rules.outside import OUTSIDE_CHECKS

if TYPE_CHECKING:
    from profilekit.load.layerdata import LintSection
    from profilekit.load.layers import Layer

# how an option of profilekit.toml is named where a selection says what left a warning out
FROM_CONFIG = "[lint] {what} of profilekit.toml"


def rule_ids() -> list[str]:
    """Every rule id: the registry's, then the findings made outside the engine."""
    return [*RULES, *(row[0] for row in OUTSIDE_CHECKS)]


def known(rule: str) -> bool:
    return rule in RULES or rule in _OUTSIDE


_OUTSIDE = frozenset(row[0] for row in OUTSIDE_CHECKS)


def suggest(name: str) -> str:
    """`did you mean 'x'?` for a rule id that names no rule, or where to find the ids."""
    close = difflib.get_close_matches(name, rule_ids(), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else "docs/RULES.md lists every rule id"


@record(frozen=True, slots=True)
class Selection:
    """The rules whose warnings are shown: `chosen` (None: every rule) less `ignored`; `by` says, for each rule left
    out, which option left it out (`--ignore`, `[lint] select of profilekit.toml`, ...)."""

    chosen: frozenset[str] | None = None
    ignored: frozenset[str] = frozenset()
    chosen_by: str = ""
    ignored_by: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def left_out_by(self, rule: str) -> str | None:
        """What leaves `rule`'s warnings out of the report, or None when they are shown."""
        if rule in self.ignored:
            return self.ignored_by.get(rule, "")
        if self.chosen is not None and rule not in self.chosen:
            return self.chosen_by
        return None


def resolve(config: LintSection, select: list[str] | None, ignore: list[str] | None) -> Selection:
    """profilekit.toml's `[lint] select` and `ignore`, then the command line's `--select` and `--ignore`."""
    chosen: frozenset[str] | None = None
    chosen_by = ""
    ignored: dict[str, str] = {}
    steps = (
        (config.select, config.ignore, FROM_CONFIG.format(what="select"), FROM_CONFIG.format(what="ignore")),
        (select, ignore or [], "--select", "--ignore"),
    )
    for selects, ignores, select_name, ignore_name in steps:
        if selects is not None:  # a select starts over: what it names is chosen, whatever was ignored before
            chosen, chosen_by, ignored = frozenset(selects), select_name, {}
        for rule in ignores:
            ignored.setdefault(rule, ignore_name)
    return Selection(chosen, frozenset(ignored), chosen_by, ignored)


def command_line_ids(option: str, given: list[str] | None) -> list[str] | None:
    """`--ignore a,b --ignore c` as ["a", "b", "c"] (None when not given); a name that is no rule id is a usage
    error with did-you-mean."""
    if given is None:
        return None
    ids = [part.strip() for value in given for part in value.split(",") if part.strip()]
    for rule in ids:
        if not known(rule):
            raise UsageError(f"{option} {rule}: no rule has that id", hint=suggest(rule))
    return ids


def config_findings(config: LintSection, locate: Callable[[tuple[str | int, ...]], Location]) -> list[Finding]:
    """`unknown-rule` for each id of `[lint] select` and `ignore` that names no rule (`locate`: where a key of
    profilekit.toml is)."""
    found: list[Finding] = []
    for what, ids in (("select", config.select or []), ("ignore", config.ignore)):
        for index, rule in enumerate(ids):
            if not known(rule):
                found.append(
                    Finding(
                        "unknown-rule",
                        Severity.ERROR,
                        f"lint.{what}[{index}] names no rule: {rule!r}",
                        [locate(("lint", what, index))],
                        suggest(rule),
                    )
                )
    return found


def layer_findings(layer: Layer) -> list[Finding]:
    """`unknown-rule` for each id of the layer's `[layer] ignore` that names no rule."""
    return [
        Finding(
            "unknown-rule",
            Severity.ERROR,
            f"layer.ignore names no rule: {rule!r}",
            [layer.location(("layer", "ignore", rule))],
            suggest(rule),
        )
        for rule in layer.data.layer.ignore
        if not known(rule)
    ]


@record(slots=True)
class Chosen:
    """A report's findings once a selection chose among them: those shown, and the warnings it left out."""

    findings: list[Finding]
    ignored: list[Ignored]


def choose(
    findings: Iterable[Finding], selection: Selection, layer_ignores: Callable[[str], Mapping[str, str]]
) -> Chosen:
    """Split `findings` into those shown and the warnings `selection` or a layer's `[layer] ignore` leaves out.

    `layer_ignores(name)`: the `[layer] ignore` table of layer `name` (a finding is the layer's when its first
    location is in it). An error is always shown; one of a rule an ignore names carries a note saying so.
    """
    shown: list[Finding] = []
    ignored: list[Ignored] = []
    for finding in findings:
        by, reason = _left_out_by(finding, selection, layer_ignores)
        if by is None:
            shown.append(finding)
        elif not finding.is_error:
            ignored.append(Ignored(finding, by, reason))
        elif finding.rule in selection.ignored or reason:
            note = f"not ignored: {by} names {finding.rule}, but an error is always reported"
            shown.append(dataclasses.replace(finding, notes=[*finding.notes, note]))
        else:
            shown.append(finding)
    return Chosen(shown, ignored)


def _left_out_by(
    finding: Finding, selection: Selection, layer_ignores: Callable[[str], Mapping[str, str]]
) -> tuple[str | None, str]:
    """(what leaves `finding` out, the layer's reason) or (None, "") when nothing does."""
    layer = finding.locations[0].layer if finding.locations else ""
    if layer:
        reason = layer_ignores(layer).get(finding.rule)
        if reason is not None:
            return f"[layer] ignore of {layer}", reason
    return selection.left_out_by(finding.rule), ""


def report(
    findings: list[Finding],
    selection: Selection,
    layer_ignores: Callable[[str], Mapping[str, str]],
    dedupe: Callable[[list[Finding]], list[Finding]],
) -> Chosen:
    """`findings` as a report shows them: chosen by `selection` and the layers' ignores, `model-facts-missing`
    once per model (rules/modelcfg.py), then `dedupe`d (each once, sorted); the warnings left out likewise, so
    that what is counted as ignored is what would have been shown."""
    chosen = choose(findings, selection, layer_ignores)
    groups: dict[tuple[str, str], list[Finding]] = {}
    for item in chosen.ignored:
        groups.setdefault((item.by, item.reason), []).append(item.finding)
    ignored = [Ignored(f, by, reason) for (by, reason), group in groups.items() for f in dedupe(once_per_model(group))]
    return Chosen(dedupe(once_per_model(chosen.findings)), ignored)
