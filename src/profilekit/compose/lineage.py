"""The `extends` graph of a whole repository, walked once: which layers reach a cycle (lint composes none of them),
and each layer's linearisation and merged top level, built on its parent's (lint composes every layer).

Composing a layer walks its whole `extends` closure, so composing every member of an n-layer cycle, one after
the other, walks the cycle n times and finds it n times, each time from another layer (5,000 layers: minutes,
and 5,000 findings for one mistake). One pass over the graph (Tarjan's strongly connected components, with an
explicit stack: a 10,000-layer chain must not exhaust Python's) tells every layer that reaches a cycle at once.

Likewise composing each layer of an n-layer chain (layer i extends layer i-1) from scratch merges
1 + 2 + ... + n layers. A layer with one parent is linearised as its parent then itself (DESIGN 5.1: the
parent's closure cannot hold the child unless there is a cycle, which leaves no linearisation), and merging is
left to right, so its top level is its parent's, copied, with its own layer merged on top (`Lineages`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from profilekit.compose.linearise import linearise
from profilekit.compose.merge import compose_layers, merge_top_layer
from profilekit.compose.model import TRAITS, Scope, Stack, Unset
from profilekit.compose.names import reference_findings
from profilekit.compose.references import resolve_references
from profilekit.compose.roles import compose_roles
from profilekit.compose.unsets import Missed, missed_findings, unset_paths
from profilekit.records import record

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from profilekit.compose.index import LayerIndex
    from profilekit.errors import Finding
    from profilekit.load.layers import Layer


def cycle_reach(extends: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Every layer whose `extends` closure holds a cycle, with a member of the first cycle it reaches.

    `extends` maps each layer to the names it extends (a layer that did not load extends nothing; a name that is
    not a key is an unknown layer, which leads nowhere). The member named stands for its whole cycle (its
    strongly connected component): two layers reaching one cycle are mapped to the same member. A layer
    reaching several cycles is mapped to the first, in the depth-first, left-to-right order of linearisation.
    """
    index: dict[str, int] = {}  # the order in which the walk reached each layer
    low: dict[str, int] = {}  # the smallest index reachable through the layer's component
    on_stack: set[str] = set()
    stack: list[str] = []
    reach: dict[str, str] = {}

    for start in extends:
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        pending: list[tuple[str, Iterator[str]]] = [(start, iter(extends[start]))]
        while pending:
            name, parents = pending[-1]
            parent = next(parents, None)
            if parent is not None:
                if parent not in extends:
                    continue
                if parent not in index:
                    index[parent] = low[parent] = len(index)
                    stack.append(parent)
                    on_stack.add(parent)
                    pending.append((parent, iter(extends[parent])))
                elif parent in on_stack:
                    low[name] = min(low[name], index[parent])
                continue
            pending.pop()
            if pending:
                above = pending[-1][0]
                low[above] = min(low[above], low[name])
            if low[name] == index[name]:
                _close_component(name, stack, on_stack, extends, reach)
    return reach


def _close_component(
    root: str,
    stack: list[str],
    on_stack: set[str],
    extends: Mapping[str, Sequence[str]],
    reach: dict[str, str],
) -> None:
    """Pop the component of `root`; every component it leads to is complete already (Tarjan's order)."""
    members: list[str] = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        members.append(member)
        if member == root:
            break
    if len(members) > 1 or root in extends[root]:
        for member in members:
            reach[member] = root
    else:  # one layer, in no cycle: it reaches what its first parent that reaches a cycle reaches
        hit = next((reach[p] for p in extends[root] if p in reach), None)
        if hit is not None:
            reach[root] = hit


T = TypeVar("T")

# how far apart the nodes that keep their whole prefix are: memory n^2 / (2 * _CHECKPOINT) layer references
_CHECKPOINT = 64

# merged top levels kept for children to start from, in entries over all layers: a layer of 100,000 env names
# extended by a long chain must not be copied once per layer of it (a chain past the budget composes from scratch)
_TOP_BUDGET = 1_000_000


@record(slots=True, eq=False)
class _Node:
    """A prefix of a merge order: its last layer, the prefix before it, and the state of merging it so far."""

    layer: Layer
    below: _Node | None
    size: int  # how many layers the prefix holds
    top: Scope | None  # None: past the budget, compose from scratch
    missed: tuple[tuple[Unset, list[str]], ...]
    problems: tuple[Finding, ...]  # invalid `unset` entries, in merge order
    roles_in: tuple[tuple[Layer, list[Unset]], ...]  # the layers with `[roles]` tables or role unsets
    references: tuple[Finding, ...]  # each layer's `reference_findings`, in merge order
    traits: dict[str, tuple[Layer, ...]]  # Stack.traits: the layers of the prefix with each trait
    # every _CHECKPOINT-th node keeps its whole prefix, so listing one walks at most that many nodes
    whole: tuple[Layer, ...] | None = None

    def layers(self) -> list[Layer]:
        tail: list[Layer] = []
        node: _Node | None = self
        while node is not None and node.whole is None:  # a loop, not recursion: a chain may be 10,000 deep
            tail.append(node.layer)
            node = node.below
        tail.reverse()
        return [*node.whole, *tail] if node is not None and node.whole is not None else tail


class Lineages:
    """Each layer's linearisation as a `_Node`, built on its parent's, for composing every layer of a repository.

    A layer has a node when its `extends` closure loads cleanly (no problem, unknown name or cycle): exactly
    when `linearise(layer_index, [name])` finds nothing. A stack composed from a node is the stack `compose_layers`
    composes from that linearisation, finding for finding.
    """

    def __init__(self, layer_index: LayerIndex) -> None:
        self.layer_index = layer_index
        self.nodes: dict[str, _Node | None] = {}
        self.kept = 0  # entries held by the nodes' top levels
        self._span: dict[int, tuple[int, int]] = {}
        self._span_of = -1  # how many nodes `_span` was computed with

    def node(self, name: str) -> _Node | None:
        trail: list[str] = []  # layers with one parent, waiting for it
        seen: set[str] = set()
        current = name
        while current not in self.nodes:
            if current in seen:  # a cycle: none of them linearises
                break
            layer, problems = self.layer_index.get(current) if current in self.layer_index.files else (None, [])
            parents = layer.data.layer.extends if layer is not None else []
            if layer is None or problems:
                self.nodes[current] = None
            elif len(parents) == 1:
                trail.append(current)
                seen.add(current)
                current = parents[0]
                continue
            else:
                self.nodes[current] = self._linearised(current)
            break
        for child in reversed(trail):
            layer = self.layer_index.get(child)[0]
            assert layer is not None
            below = self.nodes.get(layer.data.layer.extends[0])
            self.nodes[child] = self._grown(below, layer) if below is not None else None
        return self.nodes[name]

    def within(self, a: str, b: str) -> str | None:
        """Of two layers with nodes, the one whose linearisation is the other's followed by more layers, if any.

        Then the stack `a+b` is that layer's stack: the same layers in the same order (the other is placed
        first, or already placed, and the rest of the chain follows it), so it gives the same findings.
        """
        first, second = self.nodes.get(a), self.nodes.get(b)
        if first is None or second is None:
            return None
        span = self._spans()
        (a_in, a_out), (b_in, b_out) = span[id(first)], span[id(second)]
        if a_in <= b_in and b_out <= a_out:
            return b
        if b_in <= a_in and a_out <= b_out:
            return a
        return None

    def _spans(self) -> dict[int, tuple[int, int]]:
        """Each node's entry and exit time in one walk of the node forest: a node is below another's span when
        that node is in its prefix (computed again only when nodes were added since)."""
        if self._span_of == len(self.nodes):
            return self._span
        children: dict[int, list[_Node]] = {}
        roots: list[_Node] = []
        known: set[int] = set()
        for start in self.nodes.values():
            node = start
            while node is not None and id(node) not in known:
                known.add(id(node))
                if node.below is None:
                    roots.append(node)
                else:
                    children.setdefault(id(node.below), []).append(node)
                node = node.below
        span: dict[int, tuple[int, int]] = {}
        clock = 0
        for root in roots:
            pending: list[tuple[_Node, bool]] = [(root, False)]
            while pending:  # iterative: the forest may be 10,000 nodes deep
                node, leaving = pending.pop()
                clock += 1
                if leaving:
                    span[id(node)] = (span[id(node)][0], clock)
                    continue
                span[id(node)] = (clock, clock)
                pending.append((node, True))
                pending += [(child, False) for child in children.get(id(node), [])]
        self._span, self._span_of = span, len(self.nodes)
        return span

    def _linearised(self, name: str) -> _Node | None:
        """A layer with no parent or several: its linearisation merged from scratch."""
        layers, problems = linearise(self.layer_index, [name])
        if problems:
            return None
        node: _Node | None = None
        for layer in layers:
            node = self._grown(node, layer)
        return node

    def _grown(self, below: _Node | None, layer: Layer) -> _Node:
        unsets, problems = unset_paths(layer, below.size if below else 0)
        top: Scope | None = None
        missed: Missed = []
        if below is None or below.top is not None:
            top = below.top.copy() if below is not None and below.top is not None else Scope()
            merge_top_layer(top, layer, unsets, missed)
            self.kept += len(top.entries)
            if self.kept > _TOP_BUDGET:
                top = None
        references = reference_findings(self.layer_index, layer)
        with_roles = bool(layer.data.roles) or any(u.path[0] == "roles" for u in unsets)
        node = _Node(
            layer,
            below,
            below.size + 1 if below else 1,
            top,
            _joined(below.missed if below else (), missed),
            _joined(below.problems if below else (), problems),
            _joined(below.roles_in if below else (), [(layer, unsets)] if with_roles else []),
            _joined(below.references if below else (), references),
            {
                trait: _joined(below.traits[trait] if below else (), [layer] if test(layer) else [])
                for trait, test in TRAITS.items()
            },
        )
        if node.size % _CHECKPOINT == 0:
            node.whole = tuple(node.layers())
        return node

    def compose(self, spec: str, node: _Node) -> tuple[Stack | None, list[Finding]]:
        """What `Session.compose` gives for the stack of one layer: the stack and the problems of its files."""
        layers = node.layers()
        references = _fresh(node.references)
        if node.top is None:
            stack = compose_layers(spec, layers, [], self.layer_index.gpus)
            return stack, references + stack.findings
        findings = _fresh(node.problems) + missed_findings(node.top, list(node.missed), layers)
        roles, problems, unapplied = compose_roles(
            [x for x, _ in node.roles_in], [u for _, u in node.roles_in], node.top
        )
        findings += problems
        findings += resolve_references(roles, layers)
        traits = {trait: list(having) for trait, having in node.traits.items()}
        stack = Stack(spec, layers, roles, findings, traits, unapplied, self.layer_index.gpus)
        return stack, references + findings


def _joined(before: tuple[T, ...], own: list[T]) -> tuple[T, ...]:
    return (*before, *own) if own else before


def _fresh(findings: tuple[Finding, ...]) -> list[Finding]:
    """Copies: every stack labels its findings with its own name, and the nodes share theirs."""
    return [replace(f) for f in findings]
