"""What the names a layer writes resolve to: each `conflicts` and `requires` entry to a layer of the repository or
a capability (derived by profilekit or provided by a layer), each `[roles.X]` table to a role some layer of the
repository declares; `unknown-layer`, `unknown-capability` and `unknown-role` otherwise."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from profilekit.compose.model import DEFAULT_ROLE
from profilekit.errors import Finding, Location, Severity
from profilekit.hardware import close_names
from profilekit.tomlio.positions import format_key

if TYPE_CHECKING:
    from profilekit.compose.index import LayerIndex
    from profilekit.load.layers import Layer


def reference_findings(layer_index: LayerIndex, layer: Layer) -> list[Finding]:
    """`conflicts` and `requires` entries that name no layer (`unknown-layer`) or no capability (`unknown-capability`).

    A capability exists when profilekit derives it (DERIVED_CAPABILITIES) or a layer of the repository
    `provides` it; any other name would make the entry silently never match.
    """
    findings: list[Finding] = []
    own = set(layer.data.layer.provides)
    for field_name in ("conflicts", "requires"):
        for index, ref in enumerate(getattr(layer.data.layer, field_name)):
            loc = layer.location(("layer", field_name, index))
            if not ref.startswith("@"):
                if ref not in layer_index.files:
                    fix = layer_index.suggest(ref) or "fix the name, or write @capability for a capability"
                    message = f"layer.{field_name}[{index}] names no layer: {ref!r}"
                    findings.append(Finding("unknown-layer", Severity.ERROR, message, [loc], fix=fix))
                continue
            cap = ref[1:]
            if cap in DERIVED_CAPABILITIES or cap in own or cap in layer_index.provided():
                continue
            findings.append(_unknown_capability(layer_index, field_name, index, ref, loc))
    return findings + role_findings(layer_index, layer) + hardware_findings(layer_index, layer)


def hardware_findings(layer_index: LayerIndex, layer: Layer) -> list[Finding]:
    """`unknown-gpu`: a `[hardware] gpu` (or `[roles.R.hardware] gpu`) that names no GPU of profilekit's catalogue
    or of profilekit.toml's [gpus]: every verdict that depends on the GPU would be made for the wrong one."""
    written: list[tuple[tuple[str, ...], str | None]] = [(("hardware", "gpu"), layer.data.hardware.gpu)]
    written += [(("roles", role, "hardware", "gpu"), spec.hardware.gpu) for role, spec in layer.data.roles.items()]
    findings: list[Finding] = []
    for path, gpu in written:
        if gpu is None or gpu in layer_index.gpus:
            continue
        close = close_names(gpu, list(layer_index.gpus))
        fix = (
            f"did you mean {' or '.join(repr(c) for c in close[:2])}?"
            if close
            else f"the GPUs profilekit knows are {', '.join(layer_index.gpus)}."
        )
        findings.append(
            Finding(
                "unknown-gpu",
                Severity.ERROR,
                f"{format_key(path)} = {gpu!r} names no GPU of profilekit's catalogue or of profilekit.toml's [gpus]",
                [layer.location(path)],
                fix=f"{fix} A GPU of your own goes in profilekit.toml as [gpus.NAME] (docs/HARDWARE.md)",
            )
        )
    return findings


def role_findings(layer_index: LayerIndex, layer: Layer) -> list[Finding]:
    """`unknown-role`: a `[roles.X]` table for a role that no layer of the repository or its sources declares.

    A role declared elsewhere but not by any layer of a stack only does not apply there (`Stack.unapplied`); a
    name nobody declares is a typo or a layer written before roles were declared, and would apply nowhere.
    """
    undeclared = [role for role, spec in layer.data.roles.items() if spec.kind is None and role != DEFAULT_ROLE]
    if not undeclared:
        return []
    declared = layer_index.declared_roles()
    return [_unknown_role(layer, role, sorted(declared)) for role in undeclared if role not in declared]


def _unknown_role(layer: Layer, role: str, declared: list[str]) -> Finding:
    spec = layer.data.roles[role]
    shown = format_key(("roles", role))
    close = difflib.get_close_matches(role, declared, n=1, cutoff=0.6)
    if close:
        fix = f"did you mean {close[0]!r}?"
    elif spec.command is not None or layer.role_serve.get(role):  # defined the way layers did before declarations
        kind = "command" if spec.command is not None else "vllm"
        fix = f'declare the role where it is defined: write kind = "{kind}" in [{shown}] of this layer'
    elif declared:
        fix = f'the roles of the repository are {", ".join(declared)}; or declare the role in the layer that defines it: [{shown}] kind = "vllm" or "command"'
    else:
        fix = (
            f"a stack without declared roles has one role, {DEFAULT_ROLE!r}: put the values in [serve] and [env]; or "
            f'declare the role in the layer that defines it: [{shown}] kind = "vllm" or "command"'
        )
    return Finding(
        "unknown-role",
        Severity.ERROR,
        f"[{shown}] names role {role!r}, which no layer of the repository declares",
        [layer.location(("roles", role))],
        fix=fix,
    )


def _unknown_capability(layer_index: LayerIndex, field_name: str, index: int, ref: str, loc: Location) -> Finding:
    provided = sorted(layer_index.provided())
    known = [f"@{c}" for c in (*DERIVED_CAPABILITIES, *provided)]
    close = difflib.get_close_matches(ref, known, n=1, cutoff=0.6)
    if close:
        fix = f"did you mean {close[0]!r}?"
    else:
        fix = "capabilities: " + ", ".join(f"@{c}" for c in DERIVED_CAPABILITIES) + " (derived)"
        if provided:
            fix += ", " + ", ".join(f"@{c}" for c in provided) + " (provided by layers)"
        fix += "; or add it to the `provides` of the layers that bring it"
    effect = "never matches" if field_name == "conflicts" else "can never be met"
    return Finding(
        "unknown-capability",
        Severity.ERROR,
        f"layer.{field_name}[{index}] names no capability: {ref!r} is neither derived by profilekit nor provided "
        f"by a layer of the repository, so the entry {effect}",
        [loc],
        fix=fix,
    )


DERIVED_CAPABILITIES = (
    "kv-connector",
    "kv-offload",
    "replayssm",
    "speculative-decoding",
    "prefix-caching",
    "pd-disaggregation",
    "hybrid-model",
)
