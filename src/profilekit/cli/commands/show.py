"""`profilekit show`: the effective configuration of a stack."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from profilekit.cli.common import check_format, open_session, out, redactor, warn
from profilekit.compose.shape import role_shape
from profilekit.errors import EXIT_OK
from profilekit.session import chosen_stacks

if TYPE_CHECKING:
    from profilekit.compose.model import Stack


def _role_view(stack: Stack, names: list[str]) -> dict[str, Any]:
    roles: dict[str, Any] = {}
    for name in names:
        role = stack.roles[name]
        view: dict[str, Any] = {}
        if role.is_vllm:
            view["serve"] = role.serve
        else:
            view["command"] = role.command
        view["env"] = role.env
        model = role.model
        if model:
            view["model"] = model
        hardware = role.hardware
        if hardware:
            view["hardware"] = hardware
        shape = role_shape(role)
        if shape is not None:  # a role larger than one node says how it is spread
            view["shape"] = shape.describe()
        roles[name] = redactor().value(view)  # a secret value written in a layer is never shown
    return roles


def show(*, stacks: list[str] | None, every: bool, role: str | None, fmt: str) -> int:
    """Print the effective configuration of a stack (of several: {"stacks": [...]}, one entry per stack)."""
    check_format(fmt, ("toml", "json"))
    session = open_session()
    views: list[dict[str, Any]] = []
    for spec in chosen_stacks(session, stacks or [], every=every):
        composed = session.stack(spec)
        warn(session.warnings(composed))
        view: dict[str, Any] = {
            "stack": composed.spec,
            "layers": composed.layer_names,
            "roles": _role_view(composed, session.role_names(composed, role)),
        }
        unapplied = [u.as_dict(composed.spec) for u in composed.unapplied if role in (None, u.role)]
        if unapplied:  # tables for roles other stacks declare: listed, never applied
            view["not_applied"] = unapplied
        views.append(view)
    data = views[0] if len(views) == 1 else {"stacks": views}
    if fmt == "json":
        out(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        from profilekit.tomlio.write import dumps  # noqa: PLC0415 - only --format toml loads tomlkit

        out(dumps(data))
    return EXIT_OK
