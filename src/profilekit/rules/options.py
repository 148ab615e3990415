"""`serve` keys and values judged against the targeted vLLM release: unknown, invalid and deprecated options.

What vLLM accepts lives below composition, in `profilekit.vllm` (the flag catalogue, `values.problem` for
argparse types and choices, `constraints` for the config classes' bounds, JSON keys and registries);
this module judges a stack with it. What argparse checks (option names, types, choices, the keys and
values of `json:<Config>` options) is judged on each layer where it is written: a key of a layer is
reported once, at its own location, however many roles inherit it. What the config objects check
(field bounds, registries, `speculative_config`) is judged on each role's effective configuration, as
vLLM sees it: a config object built only when another option is on (LoRAConfig with `enable_lora`)
checks nothing otherwise.

Each hit carries where vLLM makes the check: argparse (types, choices, `json:<Config>` options), the
config objects `create_engine_config` builds (field bounds, enum conversions, registries), or
`VllmConfig.__post_init__` (the reasoning parser).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from profilekit.compose.references import has_references
from profilekit.errors import Finding, Location, Severity
from profilekit.rules.engine import (
    STAGE_ARGPARSE,
    STAGE_CONFIG_OBJECTS,
    STAGE_POST_INIT,
    Context,
    Hit,
    stack_rule,
)
from profilekit.rules.multimodal import is_multimodal
from profilekit.tomlio.positions import format_key
from profilekit.vllm.constraints import (
    SPEC_SHORTHANDS,
    ValueProblem,
    argparse_problems,
    config_problems,
    conversion_rank,
    speculative_conflicts,
    speculative_origin,
    speculative_view,
)
from profilekit.vllm.values import problem

if TYPE_CHECKING:
    from profilekit.compose.model import Stack
    from profilekit.load.layers import Layer
    from profilekit.rules.facts import RoleFacts
    from profilekit.tomlio.positions import Path as KeyPath
    from profilekit.vllm.catalogue import Catalogue, Flag

SOURCE = "vllm/engine/arg_utils.py (EngineArgs.add_cli_args), vllm/config/*.py (field constraints)"
# keys other rules judge with their own message (rules/kv.py: kv-role-invalid)
_JUDGED_ELSEWHERE = {("kv_transfer_config", "kv_role")}

Order = tuple[int, ...] | None


def option_findings(stack: Stack, catalogue: Catalogue) -> list[Finding]:
    """Every unknown, invalid or deprecated `serve` option written by the layers of `stack`."""
    findings: list[Finding] = []
    for layer in stack.layers:
        findings += layer_option_findings(layer, catalogue)
    for finding in findings:
        finding.stack = stack.spec
    return findings


def layer_option_findings(layer: Layer, catalogue: Catalogue) -> list[Finding]:
    """The option findings of one layer file (lint judges each file once): its `serve` table and each role's."""
    out: list[Finding] = []
    for hit in layer_option_hits(layer, catalogue):
        out.append(
            Finding(hit.rule, hit.severity or Severity.ERROR, hit.message, hit.locations, hit.fix, role=hit.role)
        )
    return out


# id(layer) -> (the layer, its catalogue's release, its hits): a layer file is judged once per process, however
# many stacks it is part of (lint composes it into hundreds); the layer is kept so its id stays its own
_LAYER_HITS: dict[int, tuple[Layer, str, list[Hit]]] = {}


def layer_option_hits(layer: Layer, catalogue: Catalogue) -> list[Hit]:
    """The option hits of one layer file: its `serve` table and each role's (hits are never changed later)."""
    known = _LAYER_HITS.get(id(layer))
    if known is not None and known[0] is layer and known[1] == catalogue.version:
        return known[2]
    hits = _table_hits(layer, ("serve",), layer.serve, catalogue, role=None)
    for role, table in layer.role_serve.items():
        hits += _table_hits(layer, ("roles", role, "serve"), table, catalogue, role=role)
    _LAYER_HITS[id(layer)] = (layer, catalogue.version, hits)
    return hits


def _stack_hits(ctx: Context, rule_id: str) -> list[Hit]:
    """The hits of one rule id: every layer where it is written, then every role's effective values."""
    if ctx.catalogue is None:
        return []
    hits: list[Hit] | None = ctx.memo.get("option-hits")
    if hits is None:  # four rules read these: derive them once per stack
        hits = [hit for layer in ctx.stack.layers_that("holds") for hit in layer_option_hits(layer, ctx.catalogue)]
        for facts in ctx.facts.values():
            hits += _resolved_hits(ctx.catalogue, facts)
            hits += _role_hits(ctx.catalogue, facts)
        ctx.memo["option-hits"] = hits
    return [hit for hit in hits if hit.rule == rule_id]


@stack_rule(
    "unknown-option",
    Severity.ERROR,
    "a `serve` key, or a key of a JSON-valued option, the targeted vLLM does not have",
    source=SOURCE,
)
def unknown_option(ctx: Context) -> Iterable[Hit]:
    return _stack_hits(ctx, "unknown-option")


@stack_rule(
    "invalid-value",
    Severity.ERROR,
    "a value of the wrong type, not among the choices, outside a config field's bounds, or not in vLLM's registry",
    source=SOURCE,
)
def invalid_value(ctx: Context) -> Iterable[Hit]:
    return _stack_hits(ctx, "invalid-value")


@stack_rule(
    "value-reads-as-none",
    Severity.WARNING,
    "a value ('' or 'None') vLLM reads as no value: it starts as if the option were left out",
    source="vllm/engine/arg_utils.py optional_type",
)
def value_reads_as_none(ctx: Context) -> Iterable[Hit]:
    return _stack_hits(ctx, "value-reads-as-none")


@stack_rule("deprecated-option", Severity.WARNING, "an option the targeted release deprecates", source=SOURCE)
def deprecated_option(ctx: Context) -> Iterable[Hit]:
    return _stack_hits(ctx, "deprecated-option")


def _role_hits(catalogue: Catalogue, f: RoleFacts) -> list[Hit]:
    """What the config objects refuse in one role's effective values (vLLM's own order: `Where`)."""
    hits = _multimodal_hits(catalogue, f)
    for dest, value in _effective(catalogue, f):
        flag = catalogue.flag(dest)
        if flag is None:
            continue
        for bad in config_problems(flag, value, f.version, serve=f.serve):
            path = (
                (*speculative_origin(f.serve, str(bad.path[0])), *bad.path[1:])
                if _spec(dest, bad)
                else (dest, *bad.path)
            )
            hits.append(
                Hit(
                    "unknown-option" if bad.unknown_key else "invalid-value",
                    f"{format_key(('serve', *path))}: {bad.message}",
                    f.loc("serve", *_keys(path)) or f.locs("serve", dest),
                    bad.fix,
                    role=f.role.name,
                    order=_order(bad),
                )
            )
    return hits


# ModelConfig hands these to MultiModalConfig, which it builds only for a multimodal model; a text-only
# model ignores them (every release 0.27.0-0.33.0: vllm/config/model.py __post_init__)
_MULTIMODAL_ONLY = ("mm_encoder_attn_backend",)
# MultiModalConfig._validate_mm_encoder_attn_backend (every release 0.27.0-0.33.0), before the enum lookup
_XFORMERS_REMOVED = (
    "Attention backend 'XFORMERS' has been removed (See PR #29262 for details). Please select a supported attention "
    "backend."
)


def _multimodal_hits(catalogue: Catalogue, f: RoleFacts) -> list[Hit]:
    """An encoder option's value vLLM refuses, when the role's config.json shows a multimodal model."""
    if not is_multimodal(f):
        return []
    hits: list[Hit] = []
    for dest in _MULTIMODAL_ONLY:
        flag, value = catalogue.flag(dest), f.serve.get(dest)
        found = problem(flag, value, f.version) if flag is not None and isinstance(value, str) else None
        if flag is None or found is None or found.warning:
            continue
        message, fix = found.message, found.fix
        if isinstance(value, str) and value.upper() == "XFORMERS":  # the field validator's own refusal, checked first
            message = f'vLLM {f.version} refuses {value!r}: "{_XFORMERS_REMOVED}"'
            fix = "remove mm_encoder_attn_backend for vLLM's choice, or " + (fix or "choose a supported backend")
        hits.append(
            Hit(
                "invalid-value",
                f"{format_key(('serve', dest))}: {message}",
                f.locs("serve", dest),
                fix,
                role=f.role.name,
                order=(STAGE_CONFIG_OBJECTS, conversion_rank(flag, f.version) or 0),
            )
        )
    return hits


def _effective(catalogue: Catalogue, f: RoleFacts) -> list[tuple[str, Any]]:
    """The role's options as the config objects see them: `--spec-*` merged into `speculative_config`.

    An unknown option or a value argparse refuses is left out: it is reported where it is written.
    """
    out: list[tuple[str, Any]] = []
    for dest, value in f.serve.items():
        flag = catalogue.flag(dest)
        if flag is None or dest in _SHORTHANDS or dest == "speculative_config":
            continue
        if problem(flag, value, f.version) is None:
            out.append((dest, value))
    shorthands = [dest for dest in ("speculative_config", *_SHORTHANDS) if dest in f.serve]
    flags = [catalogue.flag(dest) for dest in shorthands]
    if shorthands and all(
        flag is not None and problem(flag, f.serve[dest], f.version) is None
        for dest, flag in zip(shorthands, flags, strict=True)
    ):
        view = speculative_view(f.serve)
        if view is not None and not speculative_conflicts(f.serve):
            out.append(("speculative_config", view))
    return out


_SHORTHANDS = tuple(dest for dest, _key, _option in SPEC_SHORTHANDS)


def _keys(path: tuple[str | int, ...]) -> tuple[str, ...]:
    """The table keys of a value's path, up to the first array item (an effective entry is the whole array)."""
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            break
        out.append(part)
    return tuple(out)


def _spec(dest: str, bad: ValueProblem) -> bool:
    return dest == "speculative_config" and bool(bad.path)


def _order(found: ValueProblem) -> Order:
    stage = {"argparse": STAGE_ARGPARSE, "config": STAGE_CONFIG_OBJECTS, "post_init": STAGE_POST_INIT}.get(
        found.where.stage
    )
    if stage is None:
        return None
    return (stage, found.where.rank) if found.where.step is None else (stage, found.where.rank, found.where.step)


def _table_hits(
    layer: Layer, prefix: KeyPath, table: dict[str, Any], catalogue: Catalogue, *, role: str | None
) -> list[Hit]:
    hits: list[Hit] = []
    version = catalogue.version
    for key, value in table.items():
        flag = catalogue.resolve(key)
        if flag is None:
            hits.append(_unknown(layer, prefix, key, value, catalogue, role=role))
            continue
        where = layer.location((*prefix, key))
        name = format_key((*prefix, flag.dest))
        if flag.deprecated:
            hits.append(
                Hit(
                    "deprecated-option",
                    f"{name}: vLLM {version} deprecates option {flag.dest!r}" + (f": {flag.help}" if flag.help else ""),
                    [where],
                    fix=f"remove {flag.dest} from this layer" + _deprecation_hint(flag),
                    role=role,
                    severity=Severity.WARNING,
                )
            )
        if has_references(value):
            continue  # the layer wrote references: judged on each role's resolved value (_resolved_hits)

        def locate(path: KeyPath, _key: str = key) -> Location:
            return layer.location((*prefix, _key, *path))

        hits += _value_hits(flag, value, version, prefix, locate=locate, role=role)
    return hits


def _value_hits(
    flag: Flag,
    value: Any,
    version: str,
    prefix: KeyPath,
    *,
    locate: Callable[[KeyPath], Location],
    role: str | None,
) -> list[Hit]:
    """What argparse refuses in one option's value, each located by `locate` (a path below the option)."""
    hits: list[Hit] = []
    found = problem(flag, value, version)
    if found is not None and flag.dest in _MULTIMODAL_ONLY and isinstance(value, str):
        return hits  # judged per role: vLLM converts it only for a multimodal model (_multimodal_hits)
    if found is not None and found.warning:
        hits.append(
            Hit(
                "value-reads-as-none",
                f"{format_key((*prefix, flag.dest, *found.path))}: {found.message}",
                [locate(found.path)],
                fix=found.fix,
                role=role,
                severity=Severity.WARNING,
            )
        )
        return hits
    if found is not None:
        # argparse refuses most bad values; an enum-typed option (`mamba_backend`) fails only when
        # create_engine_config converts it
        order = (
            (STAGE_CONFIG_OBJECTS, conversion_rank(flag, version) or 0) if flag.enum_members else (STAGE_ARGPARSE, 0)
        )
        hits.append(
            Hit(
                "invalid-value",
                f"{format_key((*prefix, flag.dest, *found.path))}: {found.message}",
                [locate(found.path)],
                fix=found.fix,
                role=role,
                order=order,
            )
        )
        return hits
    for bad in argparse_problems(flag, value, version):
        if (flag.dest, *bad.path[:1]) in _JUDGED_ELSEWHERE:
            continue
        hits.append(
            Hit(
                "unknown-option" if bad.unknown_key else "invalid-value",
                f"{format_key((*prefix, flag.dest, *map(str, bad.path)))}: {bad.message}",
                [locate(bad.path)],
                fix=bad.fix,
                role=role,
                order=_order(bad),
            )
        )
    return hits


def _resolved_hits(catalogue: Catalogue, f: RoleFacts) -> list[Hit]:
    """What argparse refuses in a role's values that references wrote (the layer could not judge them as written)."""
    hits: list[Hit] = []
    entries = f.role.scope.entries
    for dest, value in f.serve.items():
        flag = catalogue.flag(dest)
        resolved = [e.origin for k, e in entries.items() if k[:2] == ("serve", dest) and e.resolution is not None]
        if flag is None or not resolved:
            continue

        def locate(path: KeyPath, _dest: str = dest, _first: Location = resolved[0]) -> Location:
            entry = entries.get(("serve", _dest, *_keys(path)))
            return entry.origin if entry is not None else _first

        hits += _value_hits(flag, value, catalogue.version, ("serve",), locate=locate, role=f.role.name)
    return hits


def _deprecation_hint(flag: Flag) -> str:
    text = flag.help
    marker = "Use "
    if marker in text:
        return "; " + text[text.index(marker) :].rstrip(".").replace("Use ", "use ", 1)
    return ""


def _unknown(layer: Layer, prefix: KeyPath, key: str, value: Any, catalogue: Catalogue, *, role: str | None) -> Hit:
    version = catalogue.version
    spelled = key.replace("-", "_")
    negated = catalogue.negated(key)
    if negated is not None:
        flag, option = negated
        fix = f"write {flag.dest} = {str(not value).lower() if isinstance(value, bool) else 'false'} ({option} sets {flag.dest} to false)"
    else:
        close = catalogue.suggest(key)
        fix = (
            f"did you mean {close!r}?"
            if close
            else f"`profilekit flags {spelled}` searches the options of vLLM {version}"
        )
    return Hit(
        "unknown-option",
        f"{format_key((*prefix, spelled))}: vLLM {version} has no option {spelled!r}",
        [layer.location((*prefix, key))],
        fix=fix,
        role=role,
        order=(STAGE_ARGPARSE, 0),
    )
