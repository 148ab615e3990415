"""The per-role facts of an upgrade: options and env variables the new release treats differently, and defaults
that change under the stack. What each knows comes from the generated catalogues (flags, `vllm/envs.py` names
and renames) and from the rules' per-role facts (prefix caching, the Mamba cache mode); profilekit.upgrade
puts them together.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from profilekit.records import record
from profilekit.vllm.envs import PREFIX, known_env_names, renames
from profilekit.vllm.versions import version_key

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig
    from profilekit.errors import Location
    from profilekit.rules.facts import RoleFacts
    from profilekit.vllm.catalogue import Catalogue, Flag

_SUPPRESS = "==SUPPRESS=="  # argparse.SUPPRESS: the option sets nothing unless given


@record(frozen=True, slots=True)
class Impact:
    """One change the new release brings to a role: an option, an env variable, or a default."""

    kind: str  # option-removed, option-parses-differently, option-deprecated, env-removed, default-changed
    key: str
    message: str
    locations: tuple[Location, ...] = ()
    reason: str = ""
    before: Any = None  # default-changed: the value under the old release
    after: Any = None


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# ---- options the stack sets ---------------------------------------------------------------------


def option_impacts(role: RoleConfig, old: Catalogue, new: Catalogue) -> list[Impact]:
    """Options `role` sets that the new release no longer has, parses differently, or deprecates."""
    out: list[Impact] = []
    for dest, value in role.serve.items():
        was, now = old.flag(dest), new.flag(dest)
        if was is None or dest == "model":
            continue  # an option the old release does not know is its unknown-option finding
        where = tuple(role.origins("serve", dest)[:1])
        key = f"serve.{dest}"
        if now is None:
            out.append(_removed(key, was, new, where))
            continue
        changes = parse_changes(was, now, value)
        if changes:
            message = f"vLLM {new.version} reads {now.option} differently: " + "; ".join(changes)
            out.append(Impact("option-parses-differently", key, message, where, _help(now)))
        if now.deprecated and not was.deprecated:
            message = f"{now.option} is deprecated in vLLM {new.version}"
            out.append(Impact("option-deprecated", key, message, where, _help(now)))
    return out


def _removed(key: str, was: Flag, new: Catalogue, where: tuple[Location, ...]) -> Impact:
    close = new.suggest(was.dest)
    message = f"vLLM {new.version} has no option {was.option}"
    if close is not None:
        message += f" (did you mean {close!r}?)"
    return Impact("option-removed", key, message, where, _help(was) if was.deprecated else "")


def _help(flag: Flag) -> str:
    return f"vLLM's help: {flag.help}" if flag.help else ""


def _choices(flag: Flag) -> set[Any] | None:
    """argparse's choices, with the string "None" and None alike (catalogues of different releases differ)."""
    if flag.choices is None:
        return None
    return {None if c == "None" else c for c in flag.choices}


def parse_changes(was: Flag, now: Flag, value: Any) -> list[str]:
    """How the new release's parser reads the option differently, as short phrases."""
    out: list[str] = []
    if was.is_bool != now.is_bool:
        out.append("it is a switch now" if now.is_bool else "it takes a value now, not a switch")
    elif was.type != now.type and not was.is_bool:
        out.append(f"the value is converted by {now.type} (was {was.type})")
    if was.takes_many != now.takes_many or was.is_append != now.is_append:
        out.append("it takes several values now" if now.takes_many or now.is_append else "it takes one value now")
    before, after = _choices(was), _choices(now)
    if before is not None and after is None:
        out.append("argparse no longer limits its choices (the value is checked when the config is built)")
    elif before is not None and after is not None and before - after:
        gone = sorted(str(c) for c in before - after)
        phrase = "choice " + ", ".join(repr(c) for c in gone) + (" is" if len(gone) == 1 else " are") + " gone"
        values = value if isinstance(value, list) else [value]
        hit = [v for v in values if v in before - after]
        if hit:
            phrase += f": the value {_shown(hit[0])} written here is refused"
        out.append(phrase)
    return out


# ---- env variables ------------------------------------------------------------------------------


def env_impacts(role: RoleConfig, old: str, new: str) -> list[Impact]:
    """`VLLM_*` variables of `role` that the old release's `vllm/envs.py` knows and the new one does not."""
    known_old, known_new = known_env_names(old), known_env_names(new)
    if known_old is None or known_new is None:
        return []
    out: list[Impact] = []
    for name in role.env:
        if not name.startswith(PREFIX) or name not in known_old or name in known_new:
            continue
        where = tuple(role.origins("env", name)[:1])
        message = f"vLLM {new}'s vllm/envs.py no longer knows {name} (vLLM warns and ignores it)"
        out.append(Impact("env-removed", f"env.{name}", message, where, _rename_reason(name, old, new)))
    return out


def _rename_reason(name: str, old: str, new: str) -> str:
    for rename in renames():
        if rename.old != name or not version_key(old) < version_key(rename.release) <= version_key(new):
            continue
        if rename.new is not None:
            value = f" = {_shown(rename.value)}" if rename.value else ""
            return f"vLLM {rename.release} renamed it to {rename.new}{value}"
        if rename.option is not None:
            return f"vLLM {rename.release} replaced it by the option {rename.option}"
    return ""


# ---- defaults under the stack -------------------------------------------------------------------


def default_impacts(
    role: RoleConfig, old: RoleFacts | None, new: RoleFacts | None, cat_old: Catalogue, cat_new: Catalogue
) -> list[Impact]:
    """Defaults that change under the role: what vLLM derives for its model, then options it leaves unset."""
    out = derived_impacts(old, new) if old is not None and new is not None else []
    covered = {impact.key for impact in out}
    serve = role.serve
    for dest, was in cat_old.flags.items():
        now = cat_new.flag(dest)
        if now is None or dest in serve or f"serve.{dest}" in covered:
            continue
        before, after = _default(was), _default(now)
        if before == after:
            continue
        message = f"{now.option} defaults to {_default_text(after)} (was {_default_text(before)}); no layer sets it"
        reason = _help(now) if now.deprecated else ""
        out.append(Impact("default-changed", f"serve.{dest}", message, (), reason, before, after))
    return out


def _default_text(value: Any) -> str:
    return "None (vLLM decides at start-up)" if value is None else _shown(value)


def _default(flag: Flag) -> Any:
    return None if flag.default == _SUPPRESS else flag.default


_PREFIX_REASON = (
    "vLLM 0.27.x keeps prefix caching opt-in for hybrid (Mamba) models; from 0.28.0 it is on by default for "
    "every generative model (EngineArgs._set_default_chunked_prefill_and_prefix_caching_args)"
)
_MODE_REASON = (
    "the Mamba cache mode follows prefix caching (MambaModelConfig.verify_and_update_config): on gives 'align' "
    "(0.27.x: 'all' for models with Mamba prefix caching), off gives 'none'; 0.32.0 dropped 'all' and 0.33.0 "
    "ignores --mamba-cache-mode"
)
_MODE_IMPLIES = {
    "align": "chunked prefill is required and mamba_block_size defaults to block_size",
    "none": "no Mamba state is cached between requests and mamba_block_size defaults to max_model_len",
    "all": "every Mamba state is cached (0.27.x prefix caching for hybrid models)",
}


def _on(value: bool | None) -> str:
    return "on" if value else "off"


def derived_impacts(old: RoleFacts, new: RoleFacts) -> list[Impact]:
    """Prefix caching and the Mamba cache mode, as vLLM derives them for the role's model in each release."""
    out: list[Impact] = []
    where = tuple(new.model.locations[:1])
    arch = new.model.architecture or "this model"
    pc_old, pc_new = old.prefix_caching, new.prefix_caching
    if new.prefix_caching_explicit is None and None not in (pc_old, pc_new) and pc_old != pc_new:
        message = f"prefix caching is {_on(pc_new)} by default for {arch} (was {_on(pc_old)}); no layer sets it"
        out.append(
            Impact("default-changed", "serve.enable_prefix_caching", message, where, _PREFIX_REASON, pc_old, pc_new)
        )
    mode_old, mode_new = old.mamba_cache_mode, new.mamba_cache_mode
    if new.model.hybrid and None not in (mode_old, mode_new) and mode_old != mode_new:
        assert mode_new is not None
        written = new.loc("serve", "mamba_cache_mode")
        message = f"the Mamba cache mode becomes {mode_new!r} (was {mode_old!r}): {_MODE_IMPLIES.get(mode_new, '')}"
        places = tuple(written) or where
        out.append(
            Impact("default-changed", "serve.mamba_cache_mode", message, places, _MODE_REASON, mode_old, mode_new)
        )
    return out
