"""Order mistakes in a stack spec (`override-order`): a value of a layer the spec names that a more general layer
overrides only because the spec names that layer first, and the order of the spec that keeps it.

`site/h100+qwen-offload` merges `site/h100` first, then everything `qwen-offload` extends (`base` among them),
then `qwen-offload`: `base`'s `gpu_memory_utilization` replaces the site's. A *dispute* is such a value: set by a
member of the spec, replaced (in the same table: top level, or one role's) by a layer that is not a member but
an `extends` ancestor that a member written later brings in, where that later member alone would not lose the
value too (it extends the first one and merges the replacing layer after it, or the replacing layer extends it).
A later member replacing an earlier one (`base+replayssm`) is the layering the spec asks for; an equal value
loses nothing. `unset` entries, a command role's `command` and the order of an `extends` list are not judged.

The fix is the closest order of the members (fewest swapped pairs) that, composed again, keeps the member's
value where each dispute was and every other value of every role as it is, with no dispute left.
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING

from profilekit.compose.linearise import linearise
from profilekit.compose.merge import compose_layers
from profilekit.errors import Finding, Location, Severity
from profilekit.records import record

if TYPE_CHECKING:
    from profilekit.compose.model import Assignment, Entry, Stack
    from profilekit.load.layers import Layer
    from profilekit.tomlio.positions import Path as KeyPath

RULE = "override-order"

# how many orders of the members the fix composes again before it gives up looking; every order of up to four
# members fits, and for six or fewer the closest orders are tried first
_REORDER_BUDGET = 24
_PERMUTED_UP_TO = 6


@record(frozen=True, slots=True)
class Dispute:
    """A member's value that a more general layer, brought in by a member written later, overrides."""

    role: str  # the role whose scope holds the value
    path: KeyPath  # its path in that scope
    lost: Assignment  # the member's value
    won: Assignment  # the value that replaced it
    chain: tuple[str, ...]  # the later member, ..., the layer that set `won` (an `extends` path)


def members(stack: Stack) -> list[str]:
    """The layers the stack spec names, each once, in the order written."""
    present = {layer.name for layer in stack.layers}
    return [name for name in dict.fromkeys(part.strip() for part in stack.spec.split("+")) if name in present]


def disputes(stack: Stack) -> list[Dispute]:
    """Every dispute of `stack`, each pair of values once (a top-level value is in every vLLM role)."""
    named = members(stack)
    if len(named) < 2:
        return []
    by_name = {layer.name: layer for layer in stack.layers}
    brought = _brought_by(stack.layers, named)
    found: dict[tuple[Location, Location], Dispute] = {}
    for role, config in stack.roles.items():
        for path, entry in config.scope.entries.items():
            later = brought.get(entry.origin.layer, 0)
            if later == 0 or entry.origin.layer in named:
                continue  # a member's own value, or one of the first member's ancestors: the layering asked for
            lost = _lost(entry.overridden, named, later)
            if lost is None or lost.value == entry.value or (lost.origin, entry.origin) in found:
                continue
            winner, member = by_name[entry.origin.layer], by_name[lost.origin.layer]
            if member.location(_written_path(role, path, entry.origin.key)) != lost.origin:
                # another table (a role's own value replaces the top level whatever the order), or another key
                continue
            if _loses_alone(by_name[named[later]], member.name, winner.name, by_name):
                # the later member alone merges the winner after the member too (the winner may extend it: the
                # more specific layer wins, as it should): no order of the stack helps
                continue
            chain = _extends_path(by_name[named[later]], winner.name, by_name)
            found[lost.origin, entry.origin] = Dispute(role, path, lost, entry.history[-1], chain)
    return list(found.values())


def _brought_by(layers: list[Layer], named: list[str]) -> dict[str, int]:
    """Each layer of the merge order -> the index of the member whose `extends` walk placed it.

    `linearise` places each member's ancestors not yet placed, then the member: one run of the merge order
    per member, ending at it (a member placed already, as an ancestor of an earlier one, places nothing).
    """
    position = {layer.name: i for i, layer in enumerate(layers)}
    out: dict[str, int] = {}
    start = 0
    for index, name in enumerate(named):
        end = position[name]
        for layer in layers[start : end + 1]:
            out[layer.name] = index
        start = max(start, end + 1)
    return out


def _lost(history: tuple[Assignment, ...], named: list[str], later: int) -> Assignment | None:
    """The value a member set last before the winner; None unless that member is written before the member
    `later` (the index of the one that brought the winner in)."""
    for assignment in reversed(history):
        if assignment.origin.layer in named:
            return assignment if assignment.origin.layer in named[:later] else None
    return None


def _written_path(role: str, path: KeyPath, key: str) -> KeyPath:
    """Where a layer writes the value at `path` of `role`'s scope: its top-level table, or the role's."""
    return ("roles", role, *path) if key.startswith("roles.") else path


def _loses_alone(later: Layer, member: str, winner: str, by_name: dict[str, Layer]) -> bool:
    """Whether `later` extends `member` and, composed alone, merges `winner` after it as well."""
    alone, _problems = linearise(_Closure(list(by_name.values())), [later.name])
    names = [layer.name for layer in alone]
    return member in names and names.index(member) < names.index(winner)


def _extends_path(start: Layer, target: str, by_name: dict[str, Layer]) -> tuple[str, ...]:
    """The first `extends` path from `start` to `target`, depth-first and left to right as `linearise` walks."""
    trail: list[str] = [start.name]
    pending = [iter(start.data.layer.extends)]
    seen = {start.name}
    while pending:
        name = next(pending[-1], None)
        if name is None:
            pending.pop()
            trail.pop()
            continue
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        trail.append(name)
        if name == target:
            return tuple(trail)
        pending.append(iter(by_name[name].data.layer.extends))
    return (start.name, target)


# ---- the order that fixes them ---------------------------------------------------------------------------


class _Closure:
    """The layers of a composed stack, by name, as `linearise` asks a `LayerIndex` for them."""

    def __init__(self, layers: list[Layer]) -> None:
        self.files = {layer.name: layer for layer in layers}

    def get(self, name: str) -> tuple[Layer | None, list[Finding]]:
        return self.files.get(name), []

    def suggest(self, name: str) -> str:
        return ""


def fixed_order(stack: Stack, found: list[Dispute]) -> list[str] | None:
    """The closest order of the members that keeps every disputed member's value and every other value."""
    named = members(stack)
    closure = _Closure(stack.layers)
    for order in _candidates(named, found):
        layers, problems = linearise(closure, order)
        if problems:
            continue
        composed = compose_layers("+".join(order), layers, [])
        if _keeps(stack, composed, found):
            return order
    return None


def _candidates(named: list[str], found: list[Dispute]) -> list[list[str]]:
    """Orders to try, closest first: each losing member moved after the member that beat it, then every order
    of a few members by how many pairs it swaps."""
    moved = list(named)
    for dispute in sorted(found, key=lambda d: named.index(d.lost.origin.layer)):
        loser, later = dispute.lost.origin.layer, dispute.chain[0]
        if moved.index(loser) < moved.index(later):
            moved.remove(loser)
            moved.insert(moved.index(later) + 1, loser)
    orders = [moved]
    if len(named) <= _PERMUTED_UP_TO:
        ranked = sorted(itertools.permutations(range(len(named))), key=lambda p: (_swaps(p), p))
        orders += [[named[i] for i in p] for p in ranked]
    unique = {tuple(order): order for order in orders if order != named}
    return list(unique.values())[:_REORDER_BUDGET]


def _swaps(order: tuple[int, ...]) -> int:
    return sum(1 for i, j in itertools.combinations(range(len(order)), 2) if order[i] > order[j])


def _keeps(before: Stack, after: Stack, found: list[Dispute]) -> bool:
    """`after` composes as cleanly, has the same roles, every value of `before` as written (a role's `command`
    among them) but the disputed members' values where the winners were, and no dispute of its own."""
    known = {(f.rule, f.message) for f in before.findings}
    if any((f.rule, f.message) not in known for f in after.findings) or set(after.roles) != set(before.roles):
        return False
    kept = {d.won.origin: d.lost.value for d in found}
    for name, config in before.roles.items():
        expected = {path: kept.get(e.origin, _written(e)) for path, e in config.scope.entries.items()}
        if {path: _written(e) for path, e in after.roles[name].scope.entries.items()} != expected:
            return False
    return not disputes(after)


def _written(entry: Entry) -> object:
    """A value as its layer wrote it: a reference to a kept value follows it (the router follows a port)."""
    return entry.resolution.written if entry.resolution is not None else entry.value


# ---- findings ------------------------------------------------------------------------------------------------


def override_order_findings(stack: Stack, prefix: KeyPath = (), role: str | None = None) -> list[Finding]:
    """`override-order` for every dispute of `stack` (at or below `prefix`, in `role`: what `explain KEY` shows),
    each with the order of the spec that fixes them all."""
    found = disputes(stack)
    shown = [d for d in found if d.path[: len(prefix)] == prefix and (role is None or role in _roles(stack, d))]
    if not shown:
        return []
    order = fixed_order(stack, found)
    return [_finding(stack.spec, d, order) for d in shown]


def _roles(stack: Stack, dispute: Dispute) -> list[str]:
    """The roles whose value at the dispute's path is the winner's."""
    return [
        name
        for name, config in stack.roles.items()
        if (entry := config.scope.entries.get(dispute.path)) is not None and entry.origin == dispute.won.origin
    ]


def _finding(spec: str, dispute: Dispute, order: list[str] | None) -> Finding:
    lost, won = dispute.lost, dispute.won
    member, later, winner = lost.origin.layer, dispute.chain[0], won.origin.layer
    key = lost.origin.key
    message = (
        f"{key} = {_shown(lost.value)} of {member!r} is overridden by {_shown(won.value)} of {winner!r} "
        f"({won.origin}), which {later!r} extends ({' -> '.join(dispute.chain)}) and the stack names after {member!r}"
    )
    if order is not None:
        fix = f"write {'+'.join(order)} ({member!r} then keeps {_shown(lost.value)}, and no other value changes)"
    else:
        fix = (
            f"no order of the stack's layers keeps {_shown(lost.value)} and every other value: write {key} = "
            f"{_shown(lost.value)} in a layer the stack names after {later!r}"
        )
    in_role = key.startswith("roles.")
    locations = [lost.origin, won.origin]
    return Finding(RULE, Severity.WARNING, message, locations, fix, stack=spec, role=dispute.role if in_role else None)


def _shown(value: object) -> str:
    """A value as a layer writes it (TOML/JSON literal)."""
    return json.dumps(value, default=str, ensure_ascii=False)
