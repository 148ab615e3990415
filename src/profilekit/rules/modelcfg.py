"""The model's shape as vLLM derives it from config.json, `max_model_len` against the model's positions, and
the warning that names the checks a missing config.json keeps from running.

Sources: `vllm/transformers_utils/model_arch_config_convertor.py` (heads, KV heads, layers, the keys
`derive_max_model_len_and_key` reads), `vllm/config/model.py` `_get_and_verify_max_len` and
`_get_and_verify_dtype` (every release 0.27.0-0.33.0; the RoPE types whose factor scales the length change
in 0.30.0).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from profilekit.errors import Finding, Location, Severity
from profilekit.records import record
from profilekit.rules import order
from profilekit.rules.engine import Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.vllm.catalogue import human_readable_int_or_auto
from profilekit.vllm.modelshape import ModelShape, as_int, as_num

CONFIG_FIX = (
    'give profilekit the model\'s config.json: [model] config = "path/to/config.json" (a file or the model '
    "folder, relative to the repository root), or serve a local model folder"
)


def serve_int(f: RoleFacts, key: str, default: int | None = None) -> int | None:
    """An integer option as vLLM parses it ('8k' and 'auto' included); None when unset (and no default) or
    not an integer (`invalid-value` reports that)."""
    value = f.serve.get(key, default)
    if isinstance(value, str):
        try:
            return human_readable_int_or_auto(value)
        except ValueError:
            return None
    return as_int(value)


def serve_bool(f: RoleFacts, key: str) -> bool | None:
    value = f.serve.get(key)
    return value if isinstance(value, bool) else None


def shown(value: Any) -> str:
    """A value as a layer writes it (TOML/JSON literal)."""
    return json.dumps(value, default=str)


def shape(f: RoleFacts) -> ModelShape | None:
    """The role's model shape, or None when profilekit has no config.json for it."""
    raw = f.model.config
    return ModelShape.of(raw) if raw is not None else None


def allow_long_max_model_len(f: RoleFacts) -> bool:
    """`VLLM_ALLOW_LONG_MAX_MODEL_LEN` as vllm/envs.py reads it ("1" or "true")."""
    raw = f.env_value("VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    return raw is not None and raw.strip().lower() in ("1", "true")


def written_max_model_len(f: RoleFacts) -> int | None:
    """The max_model_len a layer sets (None: unset, -1/"auto" or not an integer: vLLM derives it)."""
    value = serve_int(f, "max_model_len")
    return value if value is not None and value > 0 else None


def derived_max_model_len(f: RoleFacts) -> int | None:
    """`ModelConfig.max_model_len` after `_get_and_verify_max_len`; None when it needs an unknown config.json."""
    written = written_max_model_len(f)
    if written is not None:
        return written
    s = shape(f)
    found = s.positions(f.version, disable_sliding_window=sliding_window_disabled(f)) if s is not None else None
    if s is None or found is None:
        return None
    if any(rp["rope_type"] == "longrope" for rp in s.rope()):
        orig = as_num(s.raw.get("original_max_position_embeddings"))
        return int(orig if orig is not None else found[0])
    return int(found[0])


def sliding_window_disabled(f: RoleFacts) -> bool:
    return f.serve.get("disable_sliding_window") is True


MSG_LONG = (
    "User-specified max_model_len ({mml}) is greater than the derived max_model_len ({key}={derived} or "
    "model_max_length={model_max_length} in model's config.json). To allow overriding this maximum, set the env "
    "var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the "
    "model uses relative position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the "
    "model uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA array "
    "out-of-bounds error."
)


@rule(
    "max-model-len-positions",
    Severity.ERROR,
    "max_model_len above the positions the model's config.json allows (needs the config.json)",
    source="vllm/config/model.py _get_and_verify_max_len",
)
def max_model_len_positions(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    mml = written_max_model_len(f)
    s = shape(f)
    if mml is None or s is None or allow_long_max_model_len(f):
        return []
    found = s.positions(f.version, disable_sliding_window=sliding_window_disabled(f))
    if found is None:
        return []
    derived, key = found
    if mml <= derived:
        return []
    model_max_length = as_num(s.raw.get("model_max_length"))
    if model_max_length is not None and mml <= model_max_length:
        return []
    shown_mml = s.raw.get("model_max_length")
    message = MSG_LONG.format(mml=mml, key=key, derived=float(derived), model_max_length=shown_mml)
    return [
        Hit(
            "max-model-len-positions",
            f"max_model_len = {mml} is more than the model allows ({key} = {_plain(derived)} in its config.json); "
            f'vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", "max_model_len"), *f.model.locations],
            f'set max_model_len to {_plain(derived)} or less, or set env VLLM_ALLOW_LONG_MAX_MODEL_LEN = "1" '
            "(only for a model whose positions really extend that far)",
            role=f.role.name,
            order=order.built("ModelConfig", f.version),
        )
    ]


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


# ---- the checks a missing config.json keeps from running ---------------------------------------


@record(frozen=True, slots=True)
class Undecided:
    """One check that could not run for want of the model's config.json (or of a key in it)."""

    check: str  # what vLLM compares, e.g. "tensor_parallel_size = 3 against the attention heads"
    locations: tuple[Location, ...] = ()


# Each family of cross-field rules adds a function naming, for one role, the checks it could not run.
Needs = Callable[[RoleFacts], list[Undecided]]
NEEDS: list[Needs] = []


def needs(check: Needs) -> Needs:
    NEEDS.append(check)
    return check


def lacking(s: ModelShape | None, keys: str) -> str:
    """Why a check could not run: no config.json at all (""), or a config.json without those keys."""
    return "" if s is None else f" (the config.json has no {keys})"


@needs
def _max_model_len_needs(f: RoleFacts) -> list[Undecided]:
    mml = written_max_model_len(f)
    if mml is None or allow_long_max_model_len(f):
        return []
    s = shape(f)
    if s is not None and s.positions(f.version) is not None:
        return []
    why = lacking(s, "max_position_embeddings or other length key")
    return [
        Undecided(f"max_model_len = {mml} against the model's positions{why}", tuple(f.loc("serve", "max_model_len")))
    ]


@rule(
    "model-facts-missing",
    Severity.WARNING,
    "cross-field checks that need the model's config.json could not run; reported once per model (an error "
    "with --strict)",
    source="vllm/config/model.py, vllm/config/vllm.py (the checks against the model's config.json)",
)
def model_facts_missing(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    undecided = [item for check in NEEDS for item in check(f)]
    if not undecided:
        return []
    problem = f" ({f.model.problem})" if f.model.problem else ""
    model = f"model {f.model.model!r}" if f.model.model else "this role's model"
    if f.model.config is None:
        why = f"profilekit does not have that file{problem}"
    else:
        why = "the file lacks the keys they read"
    return [
        Hit(
            "model-facts-missing",
            f"vLLM {f.version}'s checks against the config.json of {model} did not run: {why}",
            [*f.model.locations, *(loc for u in undecided for loc in u.locations)],
            config_fix(f.model.model) if f.model.config is None else LACKING_FIX,
            role=f.role.name,
            notes=list(dict.fromkeys(f"{NOT_CHECKED}{u.check}" for u in undecided)),
        )
    ]


NOT_CHECKED = "not checked: "
# a config.json profilekit has, without the keys a check reads: giving the file again would not help
LACKING_FIX = (
    "add the keys each `not checked` note names to that config.json, as the model's published config.json has "
    "them, or name a complete one"
)


def config_fix(model: str | None) -> str:
    """How to give profilekit a model's config.json: once for the repository, in one layer, or as a folder."""
    if model is None or "/" not in model or model.startswith((".", "/", "~")):
        return CONFIG_FIX
    return (
        f'give profilekit the model\'s config.json once, in profilekit.toml: [models."{model}"] config = '
        '"path/to/config.json" (relative to the repository root); or in a layer, [model] config = "...", or serve '
        "a local model folder"
    )


# the stacks a merged `model-facts-missing` note names, then how many more
_PLACES_SHOWN = 6


def once_per_model(findings: list[Finding]) -> list[Finding]:
    """`model-facts-missing` once per model, however many stacks and roles serve it (check, lint and render).

    The engine finds it per role; the findings about one model (the same message and fix) become one, at every
    location of theirs, its notes naming each check that did not run and, when they differ, the stacks and
    roles it did not run for.
    """
    groups: dict[tuple[str, str], list[Finding]] = {}
    kept: list[Finding] = []
    for finding in findings:
        if finding.rule == "model-facts-missing":
            groups.setdefault((finding.message, finding.fix), []).append(finding)
        else:
            kept.append(finding)
    return kept + [_merged(group) for group in groups.values()]


def _merged(group: list[Finding]) -> Finding:
    if len(group) == 1:
        return group[0]
    first = group[0]
    stacks = {f.stack for f in group}
    roles = {f.role for f in group}
    stack = first.stack if len(stacks) == 1 else None
    role = first.role if len(roles) == 1 else None
    where: dict[str, dict[str | None, list[str]]] = {}  # note -> stack -> roles
    for f in group:
        for note in f.notes:
            roles_of = where.setdefault(note, {}).setdefault(f.stack, [])
            if f.role is not None and f.role not in roles_of:
                roles_of.append(f.role)
    notes = [note + _places(places, stack is None, role is None) for note, places in where.items()]
    locations = list(dict.fromkeys(loc for f in group for loc in f.locations))
    return Finding(first.rule, first.severity, first.message, locations, first.fix, stack, role, notes)


def _places(places: dict[str | None, list[str]], stacks: bool, roles: bool) -> str:
    """` (stack a, roles prefill, decode; stack b, role serve)`: what a merged note was found for."""
    parts: list[str] = []
    for stack, names in places.items():
        words = [f"stack {stack}"] if stacks and stack is not None else []
        if roles and names:
            words.append(("role " if len(names) == 1 else "roles ") + ", ".join(names))
        if words:
            parts.append(", ".join(words))
    if not parts:
        return ""
    more = len(parts) - _PLACES_SHOWN
    shown = "; ".join(parts[:_PLACES_SHOWN]) + (f"; and {more} more" if more > 0 else "")
    return f" ({shown})"
