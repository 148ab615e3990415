"""Rules about a role's environment: values no env file can carry, and `VLLM_*` names the release does not know.

Rendering asks this module (`env_findings`) before it writes env files; judging never imports rendering.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from profilekit.errors import Finding, Location, Severity
from profilekit.quoting import env_file_value
from profilekit.rules.engine import RULES, STAGE_CONFIG_OBJECTS, Context, Hit, stack_rule
from profilekit.vllm.envs import PREFIX, closest_env_name, known_env_names, releases_knowing, renames
from profilekit.vllm.versions import version_key

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig, Stack
    from profilekit.rules.facts import RoleFacts

# Names bash keeps for itself (bash(1), "Shell Variables"): exporting one of the first kind stops the launch
# script (`set -e`), and bash gives the process its own value for the second kind, or none at all, whatever the
# layer wrote. Found by the pipeline fuzzer; each was tried with `bash -c "export NAME=v1; exec env"`.
BASH_READONLY = frozenset({"BASHOPTS", "BASH_VERSINFO", "EUID", "PPID", "SHELLOPTS", "UID"})
BASH_DYNAMIC = frozenset(
    {
        "_", "BASHPID", "BASH_ALIASES", "BASH_ARGC", "BASH_ARGV", "BASH_CMDS", "BASH_COMMAND", "BASH_LINENO",
        "BASH_SOURCE", "BASH_SUBSHELL", "BASH_XTRACEFD", "DIRSTACK", "EPOCHREALTIME", "EPOCHSECONDS", "FUNCNAME",
        "GROUPS", "HISTCMD", "LINENO", "OPTIND", "PIPESTATUS", "RANDOM", "SECONDS", "SHLVL", "SRANDOM",
    }
)  # fmt: skip
# Names bash does not take over from the environment it starts in (it sets its own): a secret of one of these
# names, passed on from the launching environment, would reach the process with bash's value.
BASH_NOT_INHERITED = frozenset({"BASH", "BASH_VERSION", "COMP_WORDBREAKS", "IFS", "OLDPWD", "OPTERR", "PS4", "PWD"})

# `validate_environ` is the first check of EngineArgs.create_engine_config, before any config object is built
_VALIDATE_ENVIRON = (STAGE_CONFIG_OBJECTS, -1)


def split_env(role: RoleConfig) -> tuple[dict[str, str], list[str]]:
    """A role's env as (plain values, names of secrets)."""
    plain: dict[str, str] = {}
    secrets: list[str] = []
    for name, value in role.env.items():
        if isinstance(value, dict):
            secrets.append(name)
        else:
            plain[name] = value
    return plain, secrets


def _unrepresentable(role: RoleConfig) -> list[Hit]:
    hits: list[Hit] = []
    plain, _ = split_env(role)
    for name, value in plain.items():
        if env_file_value(value) is None:
            entry = role.entry("env", name)
            hits.append(
                Hit(
                    "env-unrepresentable",
                    f"env.{name}: no env-file syntax reads this value the same in bash and python-dotenv "
                    "(a single quote together with `$` or a backtick, a `${...}` that python-dotenv would expand, "
                    "or a NUL or carriage return)",
                    [entry.origin] if entry else [],
                    f"change the value of {name}, or pass it as a secret from the launching environment",
                    role=role.name,
                )
            )
    return hits


def _bash_reserved(role: RoleConfig) -> list[Hit]:
    hits: list[Hit] = []
    for name, value in role.env.items():
        if name in BASH_READONLY:
            why = "is read-only in bash: exporting it stops the launch script"
        elif name in BASH_DYNAMIC:
            why = "is set by bash itself: the process would get bash's value, not this one"
        elif name in BASH_NOT_INHERITED and isinstance(value, dict):
            why = "is set by bash itself: the process would get bash's value, not the secret"
        else:
            continue
        origins = role.origins("env", name)  # a secret's origin is its `{ secret = true }` table's key
        hits.append(
            Hit(
                "env-bash-reserved",
                f"env.{name}: {name} {why}",
                origins[:1],
                f"rename {name}: bash keeps it for itself, so no launch script can pass it to the process",
                role=role.name,
            )
        )
    return hits


@stack_rule(
    "env-bash-reserved",
    Severity.ERROR,
    "an env name bash keeps for itself (UID, RANDOM, SHLVL, ...): no launch script can pass its value",
    source="bash(1) Shell Variables",
)
def env_bash_reserved(ctx: Context) -> Iterable[Hit]:
    return [hit for role in ctx.stack.roles.values() for hit in _bash_reserved(role)]


@stack_rule(
    "env-unrepresentable",
    Severity.ERROR,
    "an env value no env-file syntax reads alike in bash and python-dotenv",
    source="python-dotenv and bash quoting (quoting.py)",
)
def env_unrepresentable(ctx: Context) -> Iterable[Hit]:
    return [hit for role in ctx.stack.roles.values() for hit in _unrepresentable(role)]


# what only a launch script (bash) and an env file (bash and python-dotenv) cannot carry: targets that write
# neither waive them, and `doctor` leaves them out of what the shell adds (a value a process inherits from the
# shell that launches it is written to no file)
ENV_FILE_RULES = frozenset({"env-bash-reserved", "env-unrepresentable"})


def env_findings(stack: Stack, role: RoleConfig) -> list[Finding]:
    """`env-bash-reserved` and `env-unrepresentable` for one role: what rendering checks before it writes files."""
    return [
        Finding(h.rule, RULES[h.rule].severity, h.message, h.locations, h.fix, stack=stack.spec, role=h.role)
        for h in _bash_reserved(role) + _unrepresentable(role)
    ]


@stack_rule(
    "unknown-env-var",
    Severity.WARNING,
    "a VLLM_* variable the targeted release does not know (an error with fail_on_environ_validation)",
    source="vllm/envs.py environment_variables; validate_environ",
)
def unknown_env_var(ctx: Context) -> Iterable[Hit]:
    """vLLM only warns about an unknown `VLLM_*` variable, so this is a warning; a role that sets
    `fail_on_environ_validation` makes vLLM refuse to start, so there it is an error."""
    known = known_env_names(ctx.version)
    if known is None:
        return []
    hits: list[Hit] = []
    # a warning once per place the variable is written, however many roles it reaches
    warned: dict[tuple[str, Location], list[str]] = {}
    for facts in ctx.facts.values():
        strict = facts.serve.get("fail_on_environ_validation") is True
        for name in facts.role.env:
            if not name.startswith(PREFIX) or name in known:
                continue
            entry = facts.role.entry("env", name)
            origin = entry.origin if entry is not None else Location("", 0, 0)
            if strict:
                hits.append(_unknown(ctx, name, origin, facts))
            else:
                warned.setdefault((name, origin), []).append(facts.role.name)
    for (name, origin), roles in warned.items():
        hit = _unknown(ctx, name, origin, None)
        hit.role = roles[0] if len(roles) == 1 else None
        hits.append(hit)
    return hits


def _unknown(ctx: Context, name: str, origin: Location, strict: RoleFacts | None) -> Hit:
    said = f"Unknown vLLM environment variable detected: {name}"
    history, fix = env_history(ctx.version, name)
    locations = [origin]
    if strict is None:
        consequence = f'it starts anyway and logs "{said}"'
    else:
        consequence = f'with fail_on_environ_validation it refuses to start: "{said}"'
        locations += strict.loc("serve", "fail_on_environ_validation")
    return Hit(
        "unknown-env-var",
        f"env.{name}: vLLM {ctx.version} has no environment variable {name}{history}; {consequence}",
        locations,
        fix,
        role=strict.role.name if strict is not None else None,
        severity=Severity.ERROR if strict is not None else None,
        order=_VALIDATE_ENVIRON if strict is not None else None,
    )


def env_history(version: str, name: str) -> tuple[str, str]:
    """What other releases did with a `VLLM_*` name `version` does not know (renamed, replaced by an option,
    removed, not yet added; `""` when none knew it), and a fix (a did-you-mean when the name is misspelt).

    `doctor` says the same of the names in the shell's environment."""
    target = version_key(version)
    for move in renames():
        later = target >= version_key(move.release)
        if move.old == name and later and move.new:
            value = f" = {json.dumps(move.value)}" if move.value else ""
            return f" (vLLM {move.release} renamed it {move.new})", f"write {move.new}{value} instead"
        if move.old == name and later and move.option:
            return (
                f" (vLLM {move.release} replaced it by the option {move.option})",
                f"set serve.{move.option} instead",
            )
        if move.new == name and not later:
            return (
                f" (it is new in vLLM {move.release}; earlier releases read {move.old})",
                f"write {move.old} for vLLM {version}",
            )
    releases = releases_knowing(name)
    if releases:
        span = releases[0] if len(releases) == 1 else f"{releases[0]}–{releases[-1]}"
        return f" (vLLM {span} read it)", "remove it, or target a release that reads it"
    close = closest_env_name(name, version)
    if close is not None:
        return "", f"did you mean {close!r}?"
    return "", f"remove it, or check the name against vllm/envs.py of vLLM {version}"
