"""The `extends` graph of a whole repository, walked once: which layers reach a cycle (lint composes none of them).

Composing a layer walks its whole `extends` closure, so composing every member of an n-layer cycle, one after
the other, walks the cycle n times and finds it n times, each time from another layer (5,000 layers: minutes,
and 5,000 findings for one mistake). One pass over the graph (Tarjan's strongly connected components, with an
explicit stack: a 10,000-layer chain must not exhaust Python's) tells every layer that reaches a cycle at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence


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
