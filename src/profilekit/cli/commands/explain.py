"""`profilekit explain`: each effective value with its origin and what it overrode."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from profilekit.cli.common import check_format, open_session, out, redactor, warn
from profilekit.compose.model import UNSET, Entry, Unapplied
from profilekit.compose.overrides import override_order_findings
from profilekit.compose.shape import role_shape
from profilekit.errors import EXIT_FINDINGS, EXIT_OK, ProfilekitError, UsageError
from profilekit.hardware import batch_defaults, tiers_text
from profilekit.records import record
from profilekit.session import Session
from profilekit.tomlio.positions import format_key, parse_key

# the options whose default vLLM picks by GPU (EngineArgs.get_batch_defaults)
BATCH_KEYS = ("max_num_batched_tokens", "max_num_seqs")

if TYPE_CHECKING:
    from profilekit.compose.model import Stack
    from profilekit.redact import Redactor
    from profilekit.vllm.catalogue import Catalogue, Flag

# a bare key written like an environment variable (HF_TOKEN, UCX_TLS) names env.KEY
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def _value_text(value: Any, redact: Redactor) -> str:
    if _is_unset(value):
        return "(unset: vLLM's default applies)"
    if isinstance(value, dict) and value.get("secret") is True and len(value) == 1:
        return "{ secret = true }"
    return json.dumps(redact.value(value), ensure_ascii=False)


def _entry_json(role: str, key: str, entry: Entry, redact: Redactor) -> dict[str, Any]:
    def value(v: Any) -> dict[str, Any]:
        return {"value": None, "unset": True} if _is_unset(v) else {"value": redact.value(v)}

    out: dict[str, Any] = {
        "role": role,
        "key": key,
        **value(entry.value),
        "origin": entry.origin.as_dict(),
        "overridden": [{**value(a.value), "origin": a.origin.as_dict()} for a in entry.overridden],
    }
    if entry.resolution is not None:  # a value with references: as written, and where each part came from
        out["written"] = redact.value(entry.resolution.written)
        out["references"] = [
            {
                "reference": part.text,
                "role": part.role,
                "key": part.key,
                "value": redact.value(part.value),
                "origin": part.origin.as_dict(),
            }
            for part in entry.resolution.parts
        ]
    return out


def _resolution_lines(entry: Entry, redact: Redactor) -> list[str]:
    """How a value with references was written, and where each referenced value was set."""
    if entry.resolution is None:
        return []
    lines = [f"    written as {_value_text(entry.resolution.written, redact)}"]
    for part in entry.resolution.parts:
        lines.append(f"    {part.text} = {_value_text(part.value, redact)} from {part.origin.provenance()}")
    return lines


class UnknownKey(ProfilekitError):
    """A key that names no option of the targeted vLLM release and no value of the stack: exit 1."""

    exit_code = EXIT_FINDINGS


@record(frozen=True, slots=True)
class Target:
    """What `KEY` names: a path prefix of the effective keys, a role (from `roles.R.…`), and the vLLM option."""

    prefix: tuple[str | int, ...]
    role: str | None = None
    flag: Flag | None = None  # the whole option KEY names, whose default applies where no layer sets it


def _written(stack: Stack, prefix: tuple[str | int, ...]) -> bool:
    """Whether any role holds a value (or a removal) at or below `prefix`."""
    for role in stack.roles.values():
        for path in (*role.scope.entries, *role.scope.removed):
            if path[: len(prefix)] == prefix:
                return True
    return False


def _unknown_option(name: str, catalogue: Catalogue) -> UnknownKey:
    close = catalogue.suggest(name)
    hint = f"did you mean {close!r}?" if close else f"`profilekit flags {name}` searches the options of vLLM"
    return UnknownKey(f"vLLM {catalogue.version} has no option {name!r}", hint=hint)


def resolve_key(key: str, stack: Stack, catalogue: Catalogue | None) -> Target:
    """`serve.max_num_seqs`, `max_num_seqs`, `--max-num-seqs`, `port`, `HF_TOKEN`, `roles.decode.serve.port`: the
    effective key they name (raises UnknownKey for an option the release does not have)."""
    try:
        parts: tuple[str | int, ...] = parse_key(key)
    except ValueError as exc:
        raise UsageError(str(exc), hint="write a dotted key such as serve.max_num_seqs or env.HF_TOKEN") from None
    role: str | None = None
    if parts[0] == "roles" and len(parts) >= 3:
        role, parts = str(parts[1]), parts[2:]
    head = str(parts[0])
    if head in ("serve", "env", "model", "hardware", "command"):
        if head != "serve" or len(parts) < 2 or catalogue is None:
            return Target(parts, role)
        flag = catalogue.resolve(str(parts[1]))
        if flag is not None:
            return Target(("serve", flag.dest, *parts[2:]), role, flag if len(parts) == 2 else None)
        spelled = str(parts[1]).replace("-", "_")
        if _written(stack, ("serve", spelled, *parts[2:])):
            return Target(("serve", spelled, *parts[2:]), role)  # an unknown option a layer writes
        raise _unknown_option(spelled, catalogue)
    bare = head.lstrip("-") if len(parts) == 1 else head
    flag = catalogue.resolve(bare) if catalogue is not None else None
    if flag is not None:
        return Target(("serve", flag.dest, *parts[1:]), role, flag if len(parts) == 1 else None)
    if len(parts) == 1 and (_written(stack, ("env", bare)) or _ENV_NAME.fullmatch(bare)):
        return Target(("env", bare), role)
    spelled = bare.replace("-", "_")
    if _written(stack, ("serve", spelled, *parts[1:])):
        return Target(("serve", spelled, *parts[1:]), role)
    if catalogue is None:
        return Target(("serve", spelled, *parts[1:]), role)
    raise _unknown_option(spelled, catalogue)


def _default_text(flag: Flag, version: str) -> str:
    if flag.default is None:
        return f"vLLM {version}'s default is None (vLLM decides at start-up)"
    return f"vLLM {version}'s default is {json.dumps(flag.default, ensure_ascii=False)}"


def explain(*, stack: str, key: str | None, role: str | None, fmt: str) -> int:
    """Show each effective value with its origin and what it overrode, or vLLM's default where no layer sets it."""
    check_format(fmt, ("text", "json"))
    session = open_session()
    composed = session.stack(stack)
    target = resolve_key(key, composed, session.catalogue) if key is not None else Target(())
    unapplied = [u for u in composed.unapplied if (target.role or role) in (None, u.role)]
    if target.role is not None and target.role not in composed.roles and unapplied:
        out("\n".join(_unapplied_lines(composed, unapplied, fmt)))
        return EXIT_OK
    role = _chosen_role(session, composed, target, role)
    # the values this explains that the stack's order loses (`check` reports them as override-order too)
    warn(session.warnings(composed) + override_order_findings(composed, target.prefix, role))
    rows, defaults = _rows(session, composed, target, role)
    redact = redactor()
    shown = format_key(target.prefix) if target.prefix else ""
    if fmt == "json":
        data = _explain_json(session, composed, target, rows=rows, defaults=defaults, redact=redact, shown=shown)
        if unapplied and target.role is None:
            data["not_applied"] = [u.as_dict(composed.spec) for u in unapplied]
        out(json.dumps(data, indent=2, ensure_ascii=False))
    elif not rows:
        out(_nothing_set(session, composed, target, key, shown))
    else:
        _print_rows(session, composed, target, rows=rows, defaults=defaults, redact=redact, shown=shown)
    if fmt != "json" and unapplied and target.role is None:
        out("\n".join(_unapplied_lines(composed, unapplied, fmt)))
    if fmt != "json":
        out("".join(_shape_lines(session, composed, target, role)))
    return EXIT_OK


# the values a multi-node role's shape is computed from (compose/shape.py)
SHAPE_KEYS = frozenset(
    {
        "nnodes",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "prefill_context_parallel_size",
        "data_parallel_size",
        "data_parallel_size_local",
        "gpus_per_node",
    }
)


def _shape_lines(session: Session, composed: Stack, target: Target, role: str | None) -> list[str]:
    """How each multi-node role is spread, where the explained key is one its shape is computed from (or none)."""
    prefix = target.prefix
    whole = prefix in ((), ("serve",), ("hardware",))
    if not whole and not (len(prefix) >= 2 and prefix[0] in ("serve", "hardware") and prefix[1] in SHAPE_KEYS):
        return []
    lines: list[str] = []
    for name in session.role_names(composed, role):
        shape = role_shape(composed.roles[name])
        if shape is not None:
            lines.append(f"[{name}] spans {shape.describe()}: node rank 0, the leader, serves the API")
    return [line + "\n" for line in lines]


def _unapplied_lines(composed: Stack, unapplied: list[Unapplied], fmt: str) -> list[str]:
    """The `[roles.X]` tables of roles the stack does not declare: where each is, and why it does not apply."""
    if fmt == "json":
        return [
            json.dumps({"stack": composed.spec, "not_applied": [u.as_dict(composed.spec) for u in unapplied]}, indent=2)
        ]
    return [f"[{u.role}] not applied: {u.why(composed.spec)}  ({u.origin}, layer {u.layer})" for u in unapplied]


def _chosen_role(session: Session, composed: Stack, target: Target, role: str | None) -> str | None:
    """The role to explain: `--role`, or the one a `roles.R...` key names (the two must agree)."""
    if target.role is None:
        return role
    chosen = session.role_names(composed, target.role)[0] if role in (None, target.role) else role
    if chosen != target.role:
        raise UsageError(f"the key names role {target.role!r} and --role names {chosen!r}")
    return chosen


Row = tuple[str, str, Entry]  # role, key as written, entry


def _rows(session: Session, composed: Stack, target: Target, role: str | None) -> tuple[list[Row], list[str]]:
    """Every entry at or below the key in each chosen role, and the vLLM roles where no layer sets its option."""
    prefix = target.prefix
    rows: list[Row] = []
    defaults: list[str] = []  # vLLM roles where no layer sets the option KEY names
    for name in session.role_names(composed, role):
        config = composed.roles[name]
        scope = config.scope
        items = sorted([*scope.entries.items(), *scope.removed.items()], key=lambda kv: _order(kv[0]))
        found = [(name, format_key(path), entry) for path, entry in items if path[: len(prefix)] == prefix]
        rows += found
        if target.flag is not None and config.is_vllm and not found:
            defaults.append(name)
    return rows, defaults


def _explain_json(
    session: Session,
    composed: Stack,
    target: Target,
    *,
    rows: list[Row],
    defaults: list[str],
    redact: Redactor,
    shown: str,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "stack": composed.spec,
        "entries": [_entry_json(r, k, e, redact) for r, k, e in rows],
    }
    if target.flag is not None and defaults:  # only where vLLM's default applies: the contract's shape stays
        default = redact.value(target.flag.default)
        data["defaults"] = [
            {"role": name, "key": shown, "value": default, "vllm_version": session.version} for name in defaults
        ]
    return data


def _nothing_set(session: Session, composed: Stack, target: Target, key: str | None, shown: str) -> str:
    """No layer sets anything at the key: what applies instead (vLLM's default, the launching environment)."""
    what = f"{shown} is" if key else "nothing is"
    tail = (
        _default_text(target.flag, session.version)
        if target.flag is not None
        else "the launching environment decides"
        if target.prefix[:1] == ("env",)
        else "vLLM's default applies"
    )
    if target.flag is not None and target.flag.dest in BATCH_KEYS:  # a default vLLM picks by GPU, role by role
        texts = {
            name: _gpu_default_text(composed, name, target.flag.dest, session.version) or tail
            for name, role in composed.roles.items()
            if role.is_vllm
        }
        distinct = set(texts.values())
        if len(distinct) == 1:
            tail = distinct.pop()
        elif distinct:
            tail = "; ".join(f"[{name}] {text}" for name, text in texts.items())
    return f"{what} not set by any layer of {composed.spec}; {tail}"


def _gpu_default_text(composed: Stack, role: str, dest: str, version: str) -> str | None:
    """vLLM's default of an option it picks by GPU (`get_batch_defaults`), on the GPU the role declares; None for
    an option whose default does not depend on the GPU."""
    if dest not in BATCH_KEYS:
        return None
    tiers = tiers_text(version, dest)
    gpu = composed.gpu(role)
    if gpu is None:
        return f"vLLM {version}'s default depends on the GPU, and no layer declares one ([hardware] gpu): {tiers}"
    return f"vLLM {version}'s default on {gpu.name}: {batch_defaults(version, gpu).of(dest)} ({tiers})"


def _print_rows(
    session: Session,
    composed: Stack,
    target: Target,
    *,
    rows: list[Row],
    defaults: list[str],
    redact: Redactor,
    shown: str,
) -> None:
    """Each value with where it was set, how its references resolved and what it overrode; then vLLM's defaults."""
    for name, k, entry in rows:
        out(f"[{name}] {k} = {_value_text(entry.value, redact)}")
        verb = "unset at" if _is_unset(entry.value) else "set at"
        out(f"    {verb} {entry.origin.provenance()}")
        for line in _resolution_lines(entry, redact):
            out(line)
        gpu = composed.gpus.get(entry.value) if k == "hardware.gpu" and isinstance(entry.value, str) else None
        if gpu is not None:  # what vLLM's platform sees on it, and where each figure comes from
            out(f"    is {gpu.describe()}; source: {', '.join(gpu.sources)}")
        for old in reversed(entry.overridden):
            what = "unset" if _is_unset(old.value) else _value_text(old.value, redact)
            out(f"    overrides {what} from {old.origin.provenance()}")
    for name in defaults:
        assert target.flag is not None
        text = _gpu_default_text(composed, name, target.flag.dest, session.version)
        out(f"[{name}] {shown} is not set by any layer; {text or _default_text(target.flag, session.version)}")


def _is_unset(value: Any) -> bool:
    return value is UNSET


def _order(path: tuple[str | int, ...]) -> tuple[int, tuple[str, ...]]:
    scope_rank = {"model": 0, "serve": 1, "command": 1, "env": 2}
    return scope_rank.get(str(path[0]), 3), tuple(str(p) for p in path)
