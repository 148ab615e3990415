"""Which roles a stack has, and what each one holds (DESIGN sections 2 and 5.3; docs/ROLES.md).

A role exists in a stack when a layer of the stack declares it: `[roles.X] kind = "vllm"` or
`kind = "command"`. Any other `[roles.X]` table adds to a role the stack declares, wherever it stands in the
merge order; for a role the stack does not declare it applies nowhere and creates nothing (`Stack.unapplied`:
one site layer serves single-role and P/D stacks alike), and a role no layer of the repository declares is
`unknown-role` (compose/names.py). A stack whose layers declare no role has one role, `serve`. Within one
layer, its tables merge first and its `unset` entries apply after them.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from profilekit.compose.model import DEFAULT_ROLE, RoleConfig, Scope, Unapplied, Unset, env_value
from profilekit.compose.unsets import effective_keys, unset_removes_nothing
from profilekit.errors import Finding, Location, Severity
from profilekit.records import record
from profilekit.tomlio.positions import format_key

if TYPE_CHECKING:
    from profilekit.load.layers import Layer
    from profilekit.tomlio.positions import Path as KeyPath


def declares_role(layer: Layer, role: str) -> bool:
    """Whether `layer` declares `role` (`[roles.X] kind = ...`), rather than only adding to it."""
    spec = layer.data.roles.get(role)
    return spec is not None and spec.kind is not None


@record(slots=True)
class _Plan:
    """The roles of a stack after walking its layers in merge order: what defines, removes and adds to each."""

    alive: dict[str, bool] = field(default_factory=dict)  # every role ever declared, in order of first declaration
    kinds: dict[str, tuple[str, Location]] = field(default_factory=dict)  # the kind each role was declared with
    command: dict[str, tuple[list[str], Location] | None] = field(default_factory=dict)
    removed_by: dict[str, Unset] = field(default_factory=dict)  # the unset that last removed a role
    removed_command: dict[str, tuple[list[str], Location] | None] = field(default_factory=dict)
    # `[roles.X]` tables that do not declare X, not yet matched to a declaration: (role, layer)
    additions: list[tuple[str, Layer]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def names(self) -> list[str]:
        return [name for name, alive in self.alive.items() if alive]


def _plan_roles(layers: list[Layer], unsets: list[list[Unset]]) -> _Plan:
    plan = _Plan()
    for layer, layer_unsets in zip(layers, unsets, strict=True):
        for role, spec in layer.data.roles.items():
            if spec.kind is not None:
                _declare(plan, layer, role, spec.kind)
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


def _declare(plan: _Plan, layer: Layer, role: str, kind: str) -> None:
    """`[roles.X] kind = ...`: X exists from here on; a second declaration must name the same kind."""
    where = layer.location(("roles", role, "kind"))
    first = plan.kinds.get(role)
    if first is not None and first[0] != kind and plan.alive.get(role):
        plan.findings.append(
            Finding(
                "role-kind-mismatch",
                Severity.ERROR,
                f"roles.{format_key((role,))}.kind = {kind!r}, but layer {first[1].layer!r} declares role {role!r} "
                f"kind = {first[0]!r}",
                [where, first[1]],
                fix=f"a role is one kind in every layer: write kind = {first[0]!r}, or give the role another name",
            )
        )
        return
    plan.alive[role] = True
    plan.kinds[role] = (kind, where)


def _remove_role(plan: _Plan, unset: Unset, role: str) -> None:
    if not plan.alive.get(role):
        why = f"no layer up to {unset.origin.layer!r} declares role {role!r}"
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
) -> tuple[dict[str, RoleConfig], list[Finding], list[Unapplied]]:
    """Every role of the stack, composed on top of the merged top level; findings for names that match nothing;
    the `[roles.X]` tables of roles the stack does not declare, which apply nowhere."""
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
    findings += _kind_findings(plan, roles)
    composed = set(names) | set(plan.alive)
    for unset in (u for layer_unsets in unsets for u in layer_unsets):
        if unset.path[0] == "roles" and len(unset.path) >= 4 and unset.path[1] not in composed:
            findings.append(_unset_in_unknown_role(unset, roles))
    unapplied: list[Unapplied] = []
    for role, layer in plan.additions:
        if role in names:
            continue
        removed = plan.removed_by.get(role)
        if removed is not None:
            findings.append(_added_after_removal(role, layer, names, removed))
        else:
            unapplied.append(Unapplied(role, layer.location(("roles", role)), layer.name))
    return roles, findings, unapplied


def _kind_findings(plan: _Plan, roles: dict[str, RoleConfig]) -> list[Finding]:
    """A `vllm` role given a command, a `command` role left without one: the kind says what the role runs."""
    findings: list[Finding] = []
    for name, config in roles.items():
        declared = plan.kinds.get(name)
        if declared is None:
            continue
        kind, where = declared
        if kind == "vllm" and config.command is not None:
            origin = config.scope.entries[("command",)].origin
            message = f"role {name!r} is declared kind = 'vllm' but layer {origin.layer!r} gives it a command"
            fix = 'a vLLM role runs `vllm serve`: remove the command, or declare the role kind = "command"'
            findings.append(Finding("role-kind-mismatch", Severity.ERROR, message, [origin, where], fix=fix))
        elif kind == "command" and config.command is None:
            message = f"role {name!r} is declared kind = 'command' but no layer of the stack gives it a command"
            fix = f'set roles.{format_key((name,))}.command = ["PROGRAM", "ARG", ...], or declare it kind = "vllm"'
            findings.append(Finding("role-kind-mismatch", Severity.ERROR, message, [where], fix=fix))
    return findings


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
        scope.merge(("hardware",), table["hardware"], locate)
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
        return {"serve": {}, "env": {}, "hardware": {}}
    return {
        "serve": layer.role_serve.get(role, {}),
        "env": {k: env_value(v) for k, v in spec.env.items()},
        "hardware": spec.hardware.written(),
    }


def _unset_in_unknown_role(unset: Unset, roles: dict[str, RoleConfig]) -> Finding:
    role = str(unset.path[1])
    rest = unset.path[2:]
    candidates = [format_key(("roles", name, *rest)) for name in roles]
    return unset_removes_nothing(unset, f"no layer of the stack defines role {role!r}", candidates)


def _added_after_removal(role: str, layer: Layer, names: list[str], removed: Unset) -> Finding:
    """`unknown-role`: a `[roles.X]` table that adds to a role an earlier layer of the stack removed."""
    others = f"the roles of this stack are {', '.join(names)}; or " if names else ""
    return Finding(
        "unknown-role",
        Severity.ERROR,
        f"[roles.{format_key((role,))}] adds to role {role!r}, which layer {removed.origin.layer!r} removes "
        f"before it (unset {removed.written!r})",
        [layer.location(("roles", role)), removed.origin],
        fix=f"{others}declare role {role!r} again after the unset ([roles.{format_key((role,))}] kind = ...)",
    )
