"""`profilekit explain`: each effective value with its origin and what it overrode."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from profilekit.cli.app import app, check_format, command, open_session, out
from profilekit.errors import EXIT_OK

if TYPE_CHECKING:
    from profilekit.compose import Entry


def _value_text(value: Any) -> str:
    from profilekit.compose import UNSET

    if value is UNSET:
        return "(unset: vLLM's default applies)"
    if isinstance(value, dict) and value.get("secret") is True and len(value) == 1:
        return "{ secret = true }"
    return json.dumps(value, ensure_ascii=False)


def _entry_json(role: str, key: str, entry: Entry) -> dict[str, Any]:
    from profilekit.compose import UNSET

    def value(v: Any) -> dict[str, Any]:
        return {"value": None, "unset": True} if v is UNSET else {"value": v}

    return {
        "role": role,
        "key": key,
        **value(entry.value),
        "origin": entry.origin.as_dict(),
        "overridden": [{**value(a.value), "origin": a.origin.as_dict()} for a in entry.overridden],
    }


@app.command()
@command
def explain(
    stack: Annotated[str, typer.Argument(help="Layers joined by '+'")],
    key: Annotated[
        str | None, typer.Argument(help="Only entries at or below this key, e.g. serve.max_num_seqs")
    ] = None,
    role: Annotated[str | None, typer.Option("--role", help="Only this role.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> int:
    """Show each effective value with its origin and what it overrode."""
    from profilekit.errors import UsageError
    from profilekit.tomlpos import format_key, parse_key

    check_format(fmt, ("text", "json"))
    session = open_session()
    composed = session.stack(stack)
    prefix: tuple[str | int, ...] = ()
    if key is not None:
        try:
            prefix = parse_key(key)
        except ValueError as exc:
            raise UsageError(str(exc), hint="write a dotted key such as serve.max_num_seqs or env.HF_TOKEN") from None
        if prefix and prefix[0] == "serve" and len(prefix) > 1:
            from profilekit.layers import serve_dest

            prefix = ("serve", serve_dest(str(prefix[1]), session.catalogue), *prefix[2:])
    rows: list[tuple[str, str, Entry]] = []
    for name in session.role_names(composed, role):
        scope = composed.roles[name].scope
        items = sorted([*scope.entries.items(), *scope.removed.items()], key=lambda kv: _order(kv[0]))
        for path, entry in items:
            if path[: len(prefix)] == prefix:
                rows.append((name, format_key(path), entry))
    if fmt == "json":
        out(
            json.dumps(
                {"stack": composed.spec, "entries": [_entry_json(r, k, e) for r, k, e in rows]},
                indent=2,
                ensure_ascii=False,
            )
        )
        return EXIT_OK
    if not rows:
        what = f"{key!r} is" if key else "nothing is"
        out(f"{what} not set by any layer of {composed.spec}; vLLM's default applies")
        return EXIT_OK
    for name, k, entry in rows:
        out(f"[{name}] {k} = {_value_text(entry.value)}")
        verb = "unset at" if _is_unset(entry.value) else "set at"
        out(f"    {verb} {entry.origin}  ({entry.origin.key}, layer {entry.origin.layer})")
        for old in reversed(entry.overridden):
            what = "unset" if _is_unset(old.value) else _value_text(old.value)
            out(f"    overrides {what} from {old.origin}  ({old.origin.key}, layer {old.origin.layer})")
    return EXIT_OK


def _is_unset(value: Any) -> bool:
    from profilekit.compose import UNSET

    return value is UNSET


def _order(path: tuple[str | int, ...]) -> tuple[int, tuple[str, ...]]:
    scope_rank = {"model": 0, "serve": 1, "command": 1, "env": 2}
    return scope_rank.get(str(path[0]), 3), tuple(str(p) for p in path)
