"""`profilekit show`: the effective configuration of a stack."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from profilekit.cli.app import app, check_format, command, open_session, out, redactor, warn
from profilekit.cli.completion import complete_role, complete_stack
from profilekit.errors import EXIT_OK

if TYPE_CHECKING:
    from profilekit.compose import Stack


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
        roles[name] = redactor().value(view)  # a secret value written in a layer is never shown
    return roles


@app.command()
@command
def show(
    stacks: Annotated[
        list[str] | None,
        typer.Argument(
            help="Stacks: layer names or layer files joined by '+', e.g. base+replayssm",
            show_default=False,
            metavar="STACK",
            autocompletion=complete_stack,
        ),
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Every deployable layer and every [lint] stacks entry.")] = False,
    role: Annotated[str | None, typer.Option("--role", help="Only this role.", autocompletion=complete_role)] = None,
    fmt: Annotated[str, typer.Option("--format", help="toml or json")] = "toml",
) -> int:
    """Print the effective configuration of a stack (of several: {"stacks": [...]}, one entry per stack)."""
    from profilekit.stacks import chosen_stacks

    check_format(fmt, ("toml", "json"))
    session = open_session()
    views: list[dict[str, Any]] = []
    for spec in chosen_stacks(session, stacks or [], every=every):
        composed = session.stack(spec)
        warn(session.warnings(composed))
        views.append(
            {
                "stack": composed.spec,
                "layers": composed.layer_names,
                "roles": _role_view(composed, session.role_names(composed, role)),
            }
        )
    data = views[0] if len(views) == 1 else {"stacks": views}
    if fmt == "json":
        out(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        from profilekit.tomlwrite import dumps

        out(dumps(data))
    return EXIT_OK
