"""Which roles a stack has, and what each one holds (DESIGN sections 2 and 5.3; docs/ROLES.md).

A role exists when a layer of the stack defines it: a `[roles.X]` table with `serve` keys or a
`command`. A `[roles.X]` table holding only `env` adds to a role defined elsewhere; naming a role no
layer defines is the error `unknown-role`, never a new role. A stack whose layers define no role has
one role, `serve`. Within one layer, its tables merge first and its `unset` entries apply after them.
"""

from __future__ import annotations

import difflib
from dataclasses import field
from typing import TYPE_CHECKING, Any

from profilekit.compose.model import DEFAULT_ROLE, RoleConfig, Scope, Unset, env_value
from profilekit.compose.unsets import effective_keys, unset_removes_nothing
from profilekit.errors import Finding, Location, Severity
from profilekit.records import record
from profilekit.tomlio.positions import format_key

if TYPE_CHECKING:
    from profilekit.load.layers import Layer
    from profilekit.tomlio.positions import Path as KeyPath


def defines_role(layer: Layer, role: str) -> bool:
    """Whether `layer` defines `role` (serve keys or a command), rather than only adding env to it."""
    spec = layer.data.roles.get(role)
    return spec is not None and (spec.command is not None or bool(layer.role_serve.get(role)))


@record(slots=True)
class _Plan:
    """The roles of a stack after walking its layers in merge order: what defines, removes and adds to each."""

    alive: dict[str, bool] = field(default_factory=dict)  # every role ever defined, in order of first definition
    command: dict[str, tuple[list[str], Location] | None] = field(default_factory=dict)
    removed_by: dict[str, Unset] = field(default_factory=dict)  # the unset that last removed a role
    removed_command: dict[str, tuple[list[str], Location] | None] = field(default_factory=dict)
    # `[roles.X]` tables that only add env, not yet matched to a definition: (role, layer)
    additions: list[tuple[str, Layer]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def names(self) -> list[str]:
        return [name for name, alive in self.alive.items() if alive]


def _plan_roles(layers: list[Layer], unsets: list[list[Unset]]) -> _Plan:
    plan = _Plan()
    for layer, layer_unsets in zip(layers, unsets, strict=True):
        for role, spec in layer.data.roles.items():
            if defines_role(layer, role):
                plan.alive[role] = True
            else:
                plan.additions.append((role, layer))
            if spec.command is not None:
                plan.command[role] = (list(spec.command), layer.location(("roles", role, "command")))
        for unset in layer_unsets:
            if unset.path[0] != "roles" or len(unset.path) > 3:
                continue
            role = str(unset.path[1])
            if len(unset.path) == 2:
                _remove_role(plan, unset, role)
            elif plan.command.get(role) is None or not plan.alive.get(role):
                why = f"role {role!r} has no command up to layer {unset.origin.layer!r}"
                commands = [format_key(("roles", name, "command")) for name in plan.names() if plan.command.get(name)]
                plan.findings.append(unset_removes_nothing(unset, why, commands))
            else:
                plan.command[role] = None
    return plan


def _remove_role(plan: _Plan, unset: Unset, role: str) -> None:
    if not plan.alive.get(role):
        why = f"no layer up to {unset.origin.layer!r} defines role {role!r}"
        plan.findings.append(unset_removes_nothing(unset, why, _role_keys(plan)))
        return
    plan.alive[role] = False
    plan.removed_command[role] = plan.command.get(role)
    plan.command[role] = None
    plan.removed_by[role] = unset
    plan.additions = [(name, layer) for name, layer in plan.additions if name != role]


def _role_keys(plan: _Plan) -> list[str]:
    return [format_key(("roles", name)) for name in plan.names()]


def compose_roles(
    layers: list[Layer], unsets: list[list[Unset]], top: Scope
) -> tuple[dict[str, RoleConfig], list[Finding]]:
    """Every role of the stack, composed on top of the merged top level; findings for names that match nothing."""
    plan = _plan_roles(layers, unsets)
    findings = list(plan.findings)
    names = plan.names() or [DEFAULT_ROLE]
    roles: dict[str, RoleConfig] = {}
    # roles removed before the end are composed too: their unsets may have removed something on the way
    for role in dict.fromkeys([*names, *plan.alive]):
        command = plan.command.get(role) if role in names else plan.removed_command.get(role)
        config, missed = _compose_role(role, command, layers, unsets, top)
        findings += missed
        if role in names:
            roles[role] = config
    composed = set(names) | set(plan.alive)
    for unset in (u for layer_unsets in unsets for u in layer_unsets):
        if unset.path[0] == "roles" and len(unset.path) >= 4 and unset.path[1] not in composed:
            findings.append(_unset_in_unknown_role(unset, roles))
    findings += [_unknown_role(role, layer, names, plan) for role, layer in plan.additions if role not in names]
    return roles, findings


def _compose_role(
    role: str,
    command: tuple[list[str], Location] | None,
    layers: list[Layer],
    unsets: list[list[Unset]],
    top: Scope,
) -> tuple[RoleConfig, list[Finding]]:
    """One role: a vLLM role starts from the merged top level, a command role from nothing but its own env."""

    def fresh() -> Scope:
        return Scope() if command else top.copy()

    scope = fresh()
    findings: list[Finding] = []
    for layer, layer_unsets in zip(layers, unsets, strict=True):
        table = _role_table(layer, role)

        def locate(path: KeyPath, _layer: Layer = layer) -> Location:
            return _layer.location(("roles", role, *path))

        if not command:
            scope.merge(("serve",), table["serve"], locate)
        scope.merge(("env",), table["env"], locate)
        for unset in layer_unsets:
            if unset.path[0] != "roles" or unset.path[1] != role:
                continue
            if len(unset.path) == 2:
                scope = fresh()
            elif len(unset.path) >= 4 and not scope.unset(unset.path[2:], unset.origin):
                candidates = effective_keys((k for k in scope.entries if k[0] == unset.path[2]), ("roles", role))
                why = f"role {role!r} has no {format_key(unset.path[2:])} up to layer {unset.origin.layer!r}"
                findings.append(unset_removes_nothing(unset, why, candidates))
    if command:
        scope.assign(("command",), command[0], command[1])
    return RoleConfig(role, scope, command[0] if command else None), findings


def _role_table(layer: Layer, role: str) -> dict[str, Any]:
    spec = layer.data.roles.get(role)
    if spec is None:
        return {"serve": {}, "env": {}}
    return {
        "serve": layer.role_serve.get(role, {}),
        "env": {k: env_value(v) for k, v in spec.env.items()},
    }


def _unset_in_unknown_role(unset: Unset, roles: dict[str, RoleConfig]) -> Finding:
    role = str(unset.path[1])
    rest = unset.path[2:]
    candidates = [format_key(("roles", name, *rest)) for name in roles]
    return unset_removes_nothing(unset, f"no layer of the stack defines role {role!r}", candidates)


def _unknown_role(role: str, layer: Layer, names: list[str], plan: _Plan) -> Finding:
    """`unknown-role`: a `[roles.X]` table that only adds env, for a role no layer of the stack defines."""
    removed = plan.removed_by.get(role)
    if removed is not None:
        why = f"which layer {removed.origin.layer!r} removes before it (unset {removed.written!r})"
    else:
        why = "which no layer of the stack defines"
    close = difflib.get_close_matches(role, names, n=1, cutoff=0.6)
    if close:
        fix = f"did you mean {close[0]!r}?"
    elif names == [DEFAULT_ROLE] and not plan.alive:
        fix = (
            f"this stack has one role, {DEFAULT_ROLE!r}: put the variables in [env], or compose the layer "
            f"with a layer that defines role {role!r}"
        )
    else:
        fix = f"the roles of this stack are {', '.join(names)}; or define role {role!r} with serve keys or a command"
    return Finding(
        "unknown-role",
        Severity.ERROR,
        f"[roles.{format_key((role,))}] only adds env to role {role!r}, {why} (a layer defines a role with "
        "serve keys or a command)",
        [layer.location(("roles", role))],
        fix=fix,
    )
