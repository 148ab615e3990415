"""The merge order of a stack: each named layer after its `extends` ancestors, depth-first, cycles reported once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from profilekit.errors import Finding, Location, Severity

if TYPE_CHECKING:
    from collections.abc import Container, Iterator

    from profilekit.load.layers import Layer


class Layers(Protocol):
    """What `linearise` asks of the layers it orders: a `LayerIndex`, or the layers of a composed stack."""

    @property
    def files(self) -> Container[str]: ...

    def get(self, name: str) -> tuple[Layer | None, list[Finding]]: ...

    def suggest(self, name: str) -> str: ...


def linearise(layer_index: Layers, names: list[str]) -> tuple[list[Layer], list[Finding]]:
    """Each named layer's `extends` ancestors first (depth-first, left to right), then the layer.

    Iterative, with an explicit stack: a chain of thousands of `extends` must not exhaust Python's.
    """
    order: list[Layer] = []
    placed: set[str] = set()
    findings: list[Finding] = []
    reported: set[str] = set()
    trail: list[str] = []  # the layers being visited, outermost first
    on_trail: dict[str, int] = {}  # name -> its index in `trail`

    def enter(name: str, via: Location | None) -> Layer | None:
        """The layer to visit next, or None (placed already, a cycle, unknown, or broken: reported)."""
        if name in placed:
            return None
        if name in on_trail:
            key = _cycle_text([*trail[on_trail[name] :], name])
            if key not in reported:
                reported.add(key)
                findings.append(
                    Finding(
                        "extends-cycle",
                        Severity.ERROR,
                        f"extends forms a cycle: {key}",
                        [via] if via else [],
                        fix="remove one of these `extends` entries",
                    )
                )
            return None
        if name not in layer_index.files:
            if via is not None:
                hint = layer_index.suggest(name)
                findings.append(
                    Finding(
                        "unknown-layer",
                        Severity.ERROR,
                        f"{via.key} names no layer: {name!r}",
                        [via],
                        fix=hint or "create the layer, or remove the entry",
                    )
                )
            return None
        layer, problems = layer_index.get(name)
        findings.extend(p for p in problems if p not in findings)
        if layer is None:
            placed.add(name)
            return None
        on_trail[name] = len(trail)
        trail.append(name)
        return layer

    for name in names:
        first = enter(name, None)
        if first is None:
            continue
        pending: list[tuple[Layer, Iterator[tuple[int, str]]]] = [(first, enumerate(first.data.layer.extends))]
        while pending:
            layer, parents = pending[-1]
            step = next(parents, None)
            if step is None:
                pending.pop()
                del on_trail[trail.pop()]
                if layer.name not in placed:
                    placed.add(layer.name)
                    order.append(layer)
                continue
            index, parent = step
            child = enter(parent, layer.location(("layer", "extends", index)))
            if child is not None:
                pending.append((child, enumerate(child.data.layer.extends)))
    return order, findings


# a cycle through more layers than this is shown by its ends: the message stays one readable line
_CYCLE_SHOWN = 12


def _cycle_text(cycle: list[str]) -> str:
    """`a -> b -> a`; a long cycle keeps its first and last layers and says how many it leaves out."""
    if len(cycle) <= _CYCLE_SHOWN:
        return " -> ".join(cycle)
    half = _CYCLE_SHOWN // 2
    left_out = len(cycle) - 2 * half
    return " -> ".join([*cycle[:half], f"... ({left_out} more layers)", *cycle[-half:]])
