"""Text and JSON forms of `profilekit diff` (stacks and releases); every value passes through the Redactor."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from profilekit.quoting import shell_quote

if TYPE_CHECKING:
    from profilekit.diff.stacks import KeyChange, LineChange, RoleDiff, Side, StackDiff
    from profilekit.redact import Redactor

SECRET_REFERENCE = "<secret: from the launching environment>"


def value_text(value: Any, redact: Redactor) -> str:
    if isinstance(value, dict) and value == {"secret": True}:
        return "{ secret = true }"
    return json.dumps(redact.value(value), ensure_ascii=False)


def _side_lines(label: str, side: Side | None) -> list[str]:
    if side is None:
        return []
    verb = "unset at " if side.unset else ""
    return [f"      {label}: {verb}{side.origin.provenance()}"]


def key_text(change: KeyChange, redact: Redactor, labels: tuple[str, str] = ("a", "b")) -> list[str]:
    a, b = change.a, change.b
    if change.change == "changed":
        assert a is not None and b is not None
        head = f"  ~ {change.key}: {value_text(a.value, redact)} -> {value_text(b.value, redact)}"
    elif change.change == "added":
        assert b is not None
        head = f"  + {change.key} = {value_text(b.value, redact)}"
    else:
        assert a is not None
        head = f"  - {change.key} = {value_text(a.value, redact)}"
    return [head, *_side_lines(labels[0], a), *_side_lines(labels[1], b)]


def line_text(line: LineChange, *, env: bool) -> str:
    if env:
        name, *value = line.words
        shown = f"{name}={value[0]}" if value else f"{name}={SECRET_REFERENCE}"
        return f"    {line.op} {shown}"
    return f"    {line.op} " + " ".join(shell_quote(word) for word in line.words)


def rendered_text(role: RoleDiff) -> list[str]:
    """The change in what `render` writes: the command line and the env."""
    out: list[str] = []
    if role.command_line:
        out += ["  command line:", *(line_text(line, env=False) for line in role.command_line)]
    if role.env:
        out += ["  env:", *(line_text(line, env=True) for line in role.env)]
    return out


def role_header(role: RoleDiff, only: dict[str, str]) -> str:
    return f"[{role.role}]" + (f" only in {only[role.presence]}" if role.presence != "both" else "")


def stack_diff_text(diff: StackDiff, redact: Redactor, labels: tuple[str, str] = ("a", "b")) -> str:
    """`--- a: STACK_A`, `+++ b: STACK_B`, then per differing role its keys and rendered lines, then a summary.

    `labels` name the sides (`update` compares one stack before and after a source moved)."""
    lines = [f"--- {labels[0]}: {diff.a.spec}", f"+++ {labels[1]}: {diff.b.spec}"]
    only = {"a": f"{labels[0]} ({diff.a.spec})", "b": f"{labels[1]} ({diff.b.spec})"}
    for role in diff.changed:
        lines.append(role_header(role, only))
        for change in role.keys:
            lines += key_text(change, redact, labels)
        lines += rendered_text(role)
    lines.append(_summary(diff))
    return "\n".join(lines)


def _summary(diff: StackDiff) -> str:
    if diff.equal:
        return f"no differences (vLLM {diff.version})"
    counts = {"changed": 0, "added": 0, "removed": 0}
    for role in diff.changed:
        for change in role.keys:
            counts[change.change] += 1
    n = len(diff.changed)
    keys = ", ".join(f"{count} {what}" for what, count in counts.items())
    return f"{n} role{'s' if n != 1 else ''} differ{'s' if n == 1 else ''}: {keys} keys (vLLM {diff.version})"


# ---- JSON ---------------------------------------------------------------------------------------


def side_json(side: Side | None, redact: Redactor) -> dict[str, Any] | None:
    if side is None:
        return None
    if side.unset:
        return {"value": None, "unset": True, "origin": side.origin.as_dict()}
    return {"value": redact.value(side.value), "origin": side.origin.as_dict()}


def line_json(line: LineChange, *, env: bool) -> dict[str, Any]:
    if not env:
        return {"op": line.op, "args": list(line.words)}
    name, *value = line.words
    return {"op": line.op, "name": name, **({"value": value[0]} if value else {"secret": True})}


def role_json(role: RoleDiff, redact: Redactor) -> dict[str, Any]:
    return {
        "role": role.role,
        "in": role.presence,
        "keys": [
            {"key": c.key, "change": c.change, "a": side_json(c.a, redact), "b": side_json(c.b, redact)}
            for c in role.keys
        ],
        "command_line": [redact.value(line_json(line, env=False)) for line in role.command_line],
        "env": [redact.value(line_json(line, env=True)) for line in role.env],
    }


def stack_diff_json(diff: StackDiff, redact: Redactor) -> dict[str, Any]:
    return {
        "a": {"stack": diff.a.spec, "layers": diff.a.layer_names},
        "b": {"stack": diff.b.spec, "layers": diff.b.layer_names},
        "vllm_version": diff.version,
        "equal": diff.equal,
        "roles": [role_json(role, redact) for role in diff.changed],
    }
