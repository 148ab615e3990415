"""Constraints the layers declare about each other (DESIGN section 5.5): `group`, `conflicts`, `requires`.

Entries name a layer, or a capability with `@`: derived from a role's effective configuration
(facts.py) or brought by a layer's `provides`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from profilekit.compose.names import DERIVED_CAPABILITIES
from profilekit.errors import Location, Severity
from profilekit.load.layers import Layer
from profilekit.rules.engine import Context, Hit, stack_rule
from profilekit.rules.facts import capability_locations

# capabilities that depend on knowing the model's architecture
_MODEL_CAPABILITIES = frozenset({"hybrid-model"})


def layer_head(layer: Layer) -> Location:
    """Where a layer is declared: its `[layer]` table, or the top of its file."""
    if ("layer",) in layer.toml.positions:
        return layer.location(("layer",))
    return Location(layer.file, 1, 1, "", layer.name)


def capability_sources(ctx: Context, cap: str) -> tuple[list[str], list[Location]]:
    """The roles that have `cap` and the locations that give it to them (derived or `provides`)."""
    roles: list[str] = []
    locs: list[Location] = []
    for layer in ctx.stack.layers_that("declares"):
        if cap in layer.data.layer.provides:
            locs.append(layer.location(("layer", "provides", layer.data.layer.provides.index(cap))))
    for name, f in ctx.facts.items():
        if cap in f.capabilities:
            roles.append(name)
            locs += capability_locations(f, cap)
    return roles, locs


def stack_capabilities(ctx: Context) -> set[str]:
    caps: set[str] = set()
    for layer in ctx.stack.layers_that("declares"):
        caps.update(layer.data.layer.provides)
    for f in ctx.facts.values():
        caps.update(f.capabilities)
    return caps


def group_clashes(layers: Iterable[Layer]) -> Iterator[tuple[str, Layer, Layer]]:
    """(group, the group's first layer, a later layer of it): what `group-conflict` refuses (lint asks it too)."""
    first: dict[str, Layer] = {}
    for layer in layers:
        group = layer.data.layer.group
        if group is not None:
            other = first.setdefault(group, layer)
            if other is not layer:
                yield group, other, layer


def named_conflicts(layers: Sequence[Layer]) -> Iterator[tuple[Layer, str]]:
    """(layer, name) of each `conflicts` entry naming another layer among `layers` (declared-conflict's by-name
    branch, which lint asks before composing)."""
    present = {layer.name for layer in layers}
    for layer in layers:
        for ref in layer.data.layer.conflicts:
            if ref in present and ref != layer.name:
                yield layer, ref


@stack_rule("group-conflict", Severity.ERROR, "two layers of one group")
def group_conflict(ctx: Context) -> Iterable[Hit]:
    hits: list[Hit] = []
    for group, other, layer in group_clashes(ctx.stack.layers_that("declares")):
        hits.append(
            Hit(
                "group-conflict",
                f"layers {other.name!r} and {layer.name!r} are both in group {group!r}; a stack takes at most one",
                [layer.location(("layer", "group")), other.location(("layer", "group"))],
                f"keep one layer of group {group!r} in the stack",
            )
        )
    return hits


@stack_rule("declared-conflict", Severity.ERROR, "a `conflicts` entry matched")
def declared_conflict(ctx: Context) -> Iterable[Hit]:
    in_stack: dict[str, Layer] = {}  # the stack's layers by name, listed when a `conflicts` entry names a layer
    caps = stack_capabilities(ctx)
    hits: list[Hit] = []
    for layer in ctx.stack.layers_that("declares"):
        for index, ref in enumerate(layer.data.layer.conflicts):
            if not ref.startswith("@") and not in_stack:
                in_stack = {x.name: x for x in ctx.stack.layers}
            loc = layer.location(("layer", "conflicts", index))
            if ref.startswith("@"):
                cap = ref[1:]
                if cap not in caps:
                    continue
                roles, sources = capability_sources(ctx, cap)
                where = f" (role{'s' if len(roles) > 1 else ''} {', '.join(roles)})" if roles else ""
                hits.append(
                    Hit(
                        "declared-conflict",
                        f"layer {layer.name!r} conflicts with {ref}, which this stack has{where}",
                        [loc, *sources],
                        f"remove what brings {ref} (see the locations above), or leave {layer.name!r} out of the stack",
                        notes=_derived_note(cap),
                    )
                )
            elif ref in in_stack and ref != layer.name:
                hits.append(
                    Hit(
                        "declared-conflict",
                        f"layer {layer.name!r} conflicts with layer {ref!r}, which is in the stack",
                        [loc, layer_head(in_stack[ref])],
                        f"remove {ref!r} or {layer.name!r} from the stack",
                    )
                )
    return hits


def _derived_note(cap: str) -> list[str]:
    if cap == "kv-connector":
        return ["@kv-connector counts every active connector, including the one kv_offloading_size creates"]
    return []


@stack_rule("missing-requirement", Severity.ERROR, "a `requires` entry not met")
def missing_requirement(ctx: Context) -> Iterable[Hit]:
    in_stack: set[str] = set()  # the stack's layer names, listed when a `requires` entry names a layer
    caps = stack_capabilities(ctx)
    unknown_models = [f for f in ctx.facts.values() if not f.model.known]
    hits: list[Hit] = []
    for layer in ctx.stack.layers_that("declares"):
        for index, ref in enumerate(layer.data.layer.requires):
            if not ref.startswith("@") and not in_stack:
                in_stack = {x.name for x in ctx.stack.layers}
            loc = layer.location(("layer", "requires", index))
            if ref.startswith("@"):
                cap = ref[1:]
                if cap in caps:
                    continue
                if cap in _MODEL_CAPABILITIES and unknown_models:
                    names = ", ".join(f.role.name for f in unknown_models)
                    hits.append(
                        Hit(
                            "missing-requirement",
                            f"layer {layer.name!r} requires {ref}, and the model of role {names} is unknown to "
                            "profilekit, so it cannot tell",
                            [loc, *[loc2 for f in unknown_models for loc2 in f.model.locations]],
                            'declare the architecture in the model layer: [model] architecture = "..." '
                            "(the `architectures` entry of the model's config.json)",
                            severity=Severity.WARNING,
                        )
                    )
                    continue
                derived = cap in DERIVED_CAPABILITIES
                hits.append(
                    Hit(
                        "missing-requirement",
                        f"layer {layer.name!r} requires {ref}, which "
                        + ("no role of this stack has" if derived else "no layer of this stack provides"),
                        [loc],
                        _requirement_fix(ctx, cap, derived),
                    )
                )
            elif ref not in in_stack:
                hits.append(
                    Hit(
                        "missing-requirement",
                        f"layer {layer.name!r} requires layer {ref!r}, which is not in the stack",
                        [loc],
                        f"add {ref!r} to the stack (e.g. {ctx.stack.spec}+{ref}), or extend it",
                    )
                )
    return hits


def _requirement_fix(ctx: Context, cap: str, derived: bool) -> str:
    if cap == "hybrid-model":
        archs = sorted({f.model.architecture for f in ctx.facts.values() if f.model.architecture})
        served = f" (this stack serves {', '.join(archs)})" if archs else ""
        return f"serve a hybrid (Mamba) model such as Nemotron-H{served}"
    if derived:
        return f"configure what gives @{cap}, or leave the layer that requires it out"
    return f'add a layer with provides = ["{cap}"], or leave the layer that requires it out'
