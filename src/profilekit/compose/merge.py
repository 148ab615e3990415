"""Merge linearised layers into a stack: the top level with its unsets, then each role, then references."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from profilekit.compose.linearise import linearise
from profilekit.compose.model import SCOPES, Scope, Stack, Unset, env_value
from profilekit.compose.references import resolve_references
from profilekit.compose.roles import compose_roles
from profilekit.compose.unsets import Missed, effective_keys, missed_findings, unset_paths
from profilekit.errors import Finding, UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from profilekit.compose.index import LayerIndex
    from profilekit.hardware import Gpu
    from profilekit.load.layers import Layer


def _top_tables(layer: Layer) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A layer's `env`, `model` and `hardware` tables as the scope merges them (once per layer: lint composes it
    often)."""
    known: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None = layer.memo.get("top")
    if known is None:
        env = {k: env_value(v) for k, v in layer.data.env.items()}
        known = layer.memo["top"] = (env, layer.data.model.written(), layer.data.hardware.written())
    return known


def merge_top_layer(top: Scope, layer: Layer, layer_unsets: list[Unset], missed: Missed) -> None:
    """Merge one layer's top-level `serve`, `env`, `model` and `hardware` into `top`, then apply its unsets."""
    top.merge(("serve",), layer.serve, layer.location)
    env, model, hardware = _top_tables(layer)
    top.merge(("env",), env, layer.location)
    top.merge(("model",), model, layer.location)
    top.merge(("hardware",), hardware, layer.location)
    for unset in layer_unsets:
        if unset.path[0] not in SCOPES:
            continue
        if not top.unset(unset.path, unset.origin):  # a miss changes nothing: what is there is what was
            missed.append((unset, effective_keys(k for k in top.entries if k[0] == unset.path[0])))


def _merge_top(layers: list[Layer], unsets: list[list[Unset]]) -> tuple[Scope, list[Finding]]:
    """The top-level `serve`, `env`, `model` and `hardware` of every layer, merged in order with their unsets."""
    top = Scope()
    missed: Missed = []
    for layer, layer_unsets in zip(layers, unsets, strict=True):
        merge_top_layer(top, layer, layer_unsets, missed)
    return top, missed_findings(top, missed, layers)


def compose_layers(
    spec: str, layers: list[Layer], findings: list[Finding], gpus: Mapping[str, Gpu] | None = None
) -> Stack:
    """Merge linearised layers (DESIGN section 5 steps 2-4a): the top level, each role (roles.py), references."""
    unsets: list[list[Unset]] = []
    for position, layer in enumerate(layers):
        paths, problems = unset_paths(layer, position)
        findings.extend(problems)
        unsets.append(paths)
    top, problems = _merge_top(layers, unsets)
    findings.extend(problems)
    roles, problems, unapplied = compose_roles(layers, unsets, top)
    findings.extend(problems)
    findings.extend(resolve_references(roles, layers))
    stack = Stack(spec, layers, roles, findings, unapplied=unapplied)
    if gpus is not None:  # the repository's own [gpus] besides the catalogue
        stack.gpus = gpus
    return stack


def compose(layer_index: LayerIndex, spec: str) -> Stack:
    """Compose a stack named on the command line: `a+b+c` (usage errors raise)."""
    names = layer_index.parse_stack(spec)
    layers, findings = linearise(layer_index, names)
    if not findings:
        require_deployable(layer_index, spec, names, layers)
    return compose_layers(spec, layers, findings, layer_index.gpus)


def require_deployable(layer_index: LayerIndex, spec: str, names: list[str], layers: list[Layer]) -> None:
    """A stack on the command line must name a layer that is not abstract (a usage error otherwise)."""
    chosen = [layer for layer in layers if layer.name in names]
    if chosen and all(layer.data.layer.abstract for layer in chosen):
        raise UsageError(
            f"stack {spec!r} names only abstract layers",
            hint="abstract layers are mixins: compose them with a deployable layer, e.g. "
            f"{spec}+{next(iter(n for n in layer_index.files if n not in names), 'LAYER')}",
        )
