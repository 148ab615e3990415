"""Audit this machine for what changes vLLM's effective configuration: the installed release, plugins, the shell,
and the GPUs (what `nvidia-smi` / `rocm-smi` list, against what a stack's roles declare in `[hardware]`).

Nothing here imports vLLM or loads a plugin: the installed release and the plugins are read from package
metadata (`importlib.metadata`). Given a stack, the shell's relevant variables are laid over each role's env
the way the launch script does it (`templates/launch.sh.j2` exports the role's env, so a role that sets a
variable wins) and the rule engine runs on the result: the findings that appear only then are the shell's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from importlib.metadata import PackageNotFoundError, entry_points, version
from typing import TYPE_CHECKING

from profilekit.compose.model import RoleConfig, Stack
from profilekit.errors import Finding, Location, Severity
from profilekit.hardware import CATALOGUE
from profilekit.hardware.host import COMMANDS, Listing, identify, is_model, list_gpus
from profilekit.records import record
from profilekit.redact import SECRET_VALUE, Redactor, is_secret
from profilekit.render.hosts import gpu_needs
from profilekit.rules.env import ENV_FILE_RULES, env_history
from profilekit.vllm.environ import describe, is_relevant
from profilekit.vllm.envs import PREFIX, known_env_names
from profilekit.vllm.plugins import PLUGIN_GROUPS, plugin_loads
from profilekit.vllm.versions import SUPPORTED

if TYPE_CHECKING:
    from profilekit.session import Session

# the origin of a value the shell gives a role: no file holds it
SHELL = "<shell environment>"


@record(frozen=True, slots=True)
class Release:
    installed: str | None  # the `vllm` distribution's version; None when none is installed
    target: str

    @property
    def matches(self) -> bool:
        return self.installed is None or _public(self.installed) == self.target

    @property
    def supported(self) -> bool:
        """profilekit has the catalogues and rules of the installed release (it could target it)."""
        return self.installed is None or _public(self.installed) in SUPPORTED


@record(frozen=True, slots=True)
class Plugin:
    group: str
    name: str
    target: str  # `module:attribute`, as the entry point declares it (never imported)
    distribution: str  # `name version` of the distribution that declares it
    does: str
    loads: bool  # VLLM_PLUGINS lets it load
    changes_config: bool  # it loads and its group can change the effective configuration


@record(frozen=True, slots=True)
class Variable:
    name: str
    value: str | None  # None: a secret-looking value, never shown
    does: str
    unknown: str = ""  # a `VLLM_*` name the target release does not know: what happened to it, and a fix
    overridden_by: tuple[str, ...] = ()  # roles whose own env sets it (the shell's value does not reach them)
    reaches: tuple[str, ...] = ()  # roles that see the shell's value

    @property
    def secret(self) -> bool:
        return self.value is None


@record(frozen=True, slots=True)
class ShellFinding:
    """A rule finding the stack has only because of the shell's environment, and the variables behind it."""

    variables: tuple[str, ...]
    finding: Finding
    # the stack breaks the same rule in the same role without the shell too (with another message)
    also_without_shell: bool = False


@record(slots=True)
class SecretNeed:
    role: str
    name: str
    present: bool  # the shell holds it (never its value)


@record(frozen=True, slots=True)
class HostGpu:
    """One GPU a tool lists, and the GPU of the catalogue (or `[gpus]`) it is."""

    tool: str
    name: str
    gpu: str | None  # the catalogue's name; None: no GPU profilekit knows


@record(frozen=True, slots=True)
class GpuCheck:
    """A GPU model the stack's roles declare, against this host."""

    gpu: str
    device: str
    need: int  # GPUs the roles use together, on one host
    roles: tuple[str, ...]
    tool: str
    have: int | None  # None: the tool is missing or failed (`problem`)
    problem: str = ""

    @property
    def short(self) -> bool:
        return self.have is not None and self.have < self.need


@record(slots=True)
class Audit:
    release: Release
    plugins: list[Plugin]
    variables: list[Variable]
    stack: str | None = None
    findings: list[ShellFinding] = field(default_factory=list)
    secrets: list[SecretNeed] = field(default_factory=list)
    gpus: list[HostGpu] = field(default_factory=list)
    gpu_tools: list[Listing] = field(default_factory=list)  # what each tool said (its problem when it said nothing)
    gpu_checks: list[GpuCheck] = field(default_factory=list)
    undeclared: list[str] = field(default_factory=list)  # GPU roles that declare no GPU

    @property
    def changes(self) -> list[str]:
        """What would change the effective configuration, one short phrase each (empty: nothing)."""
        out = [
            f"finding {f.finding.rule}" + (f" (role {f.finding.role})" if f.finding.role else "") for f in self.findings
        ]
        out += [f"plugin {p.name} ({p.group})" for p in self.plugins if p.changes_config]
        if not self.release.matches:
            out.append(f"vLLM {self.release.installed} installed, {self.release.target} targeted")
        out += [f"GPU {c.gpu}: the roles need {c.need}, this host has {c.have}" for c in self.gpu_checks if c.short]
        # without a stack, any launch from this shell sees every variable; with one, those no role overrides
        out += [f"variable {v.name}" for v in self.variables if self.stack is None or v.reaches]
        return out


def _public(version: str) -> str:
    """`0.33.0+cu128` is release 0.33.0."""
    return version.split("+", 1)[0]


def installed_release(target: str) -> Release:
    try:
        return Release(version("vllm"), target)
    except PackageNotFoundError:
        return Release(None, target)


def installed_plugins(environ: Mapping[str, str]) -> list[Plugin]:
    """The entry points of vLLM's plugin groups, read from metadata only: nothing is imported or run."""
    allowed = environ["VLLM_PLUGINS"].split(",") if "VLLM_PLUGINS" in environ else None
    plugins: list[Plugin] = []
    for group in PLUGIN_GROUPS:
        for point in sorted(entry_points(group=group.name), key=lambda p: p.name):
            dist = point.dist
            loads = plugin_loads(group, point.name, allowed)
            plugins.append(
                Plugin(
                    group.name,
                    point.name,
                    point.value,
                    f"{dist.name} {dist.version}" if dist is not None else "",
                    group.does,
                    loads,
                    loads and group.changes_config,
                )
            )
    return plugins


def _variables(environ: Mapping[str, str], version: str) -> list[Variable]:
    known = known_env_names(version)
    out: list[Variable] = []
    for name in sorted(n for n in environ if is_relevant(n)):
        value = environ[name]
        unknown = ""
        if name.startswith(PREFIX) and known is not None and name not in known:
            history, fix = env_history(version, name)
            unknown = f"vLLM {version} has no environment variable {name}{history}; {fix}"
        out.append(Variable(name, None if is_secret(name, value) else value, describe(name, version), unknown))
    return out


def _redactor(environ: Mapping[str, str]) -> Redactor:
    """Every secret-looking value in the environment: no message doctor returns may carry one."""
    found = {v for n, v in environ.items() if is_secret(n, v) and len(v.strip()) >= 4}
    found.update(m.group(0) for v in environ.values() for m in SECRET_VALUE.finditer(v))
    return Redactor(found)


def overlay(stack: Stack, environ: Mapping[str, str], names: list[str]) -> Stack:
    """`stack` as its processes would run from this shell: each role gets the shell's value of each of `names`
    that its own env does not set (the launch script exports the role's env over the inherited one)."""
    roles: dict[str, RoleConfig] = {}
    for role_name, role in stack.roles.items():
        scope = role.scope.copy()
        for name in names:
            if role.entry("env", name) is None:
                scope.assign(("env", name), environ[name], Location(SHELL, 0, 0, key=f"env.{name}"))
        roles[role_name] = RoleConfig(role.name, scope, role.command)
    return Stack(stack.spec, stack.layers, roles, stack.findings, gpus=stack.gpus)


def _key(finding: Finding) -> tuple[str, str | None, str, str]:
    return finding.rule, finding.role, finding.severity.value, finding.message


def _behind(finding: Finding, names: list[str]) -> tuple[str, ...]:
    """The shell variables a finding stems from: those it locates, else those its message names."""
    located = [loc.key.removeprefix("env.") for loc in finding.locations if loc.file == SHELL]
    if located:
        return tuple(dict.fromkeys(located))
    named = [n for n in names if n in finding.message]
    return tuple(named or names)


def shell_findings(session: Session, stack: Stack, environ: Mapping[str, str], names: list[str]) -> list[ShellFinding]:
    """The findings `stack` has only when its roles inherit `names` from `environ`."""
    if not names:
        return []
    before = {_key(f) for f in session.check(stack)}
    broken = {key[:2] for key in before}
    out: list[ShellFinding] = []
    for finding in session.check(overlay(stack, environ, names)):
        if _key(finding) in before or finding.rule in ENV_FILE_RULES:
            continue
        if finding.rule == "unknown-env-var" and finding.severity is Severity.WARNING:
            continue  # the variable list says it already, with its did-you-mean
        # a location in no file is the shell's: kept out of the finding, which names the variables instead
        finding.locations = [loc for loc in finding.locations if loc.file != SHELL]
        out.append(ShellFinding(_behind(finding, names), finding, _key(finding)[:2] in broken))
    return out


def host_gpus(listings: list[Listing], stack: Stack | None) -> list[HostGpu]:
    """Every GPU the tools list, each with the catalogue GPU it is (the stack's `[gpus]` too, when given)."""
    known = stack.gpus if stack is not None else CATALOGUE
    found: list[HostGpu] = []
    for listing in listings:
        for name in listing.names:
            gpu = identify(name, known)
            found.append(HostGpu(listing.tool, name, gpu.name if gpu is not None else None))
    return found


def gpu_checks(stack: Stack, listings: dict[str, Listing]) -> tuple[list[GpuCheck], list[str]]:
    """Each GPU model the roles declare against the host's GPUs of it, and the GPU roles that declare none."""
    roles = list(stack.roles.values())
    checks: list[GpuCheck] = []
    for gpu, need in gpu_needs(stack, roles):
        users = tuple(r.name for r in roles if r.is_vllm and stack.gpu(r.name) is gpu)
        listing = listings[gpu.platform]
        have = sum(1 for name in listing.names if is_model(name, gpu)) if listing.ran else None
        checks.append(GpuCheck(gpu.name, gpu.device_name, need, users, listing.tool, have, listing.problem))
    undeclared = [r.name for r in roles if r.is_vllm and stack.gpu(r.name) is None]
    return checks, undeclared


def audit(session: Session, environ: Mapping[str, str], *, stack: Stack | None = None) -> Audit:
    """Everything on this machine, seen from `environ`, that changes what `session`'s release and `stack` mean."""
    version = session.version
    variables = _variables(environ, version)
    result = Audit(installed_release(version), installed_plugins(environ), variables)
    listings = {platform: list_gpus(platform, environ.get("PATH")) for platform in COMMANDS}
    result.gpu_tools = list(listings.values())
    result.gpus = host_gpus(result.gpu_tools, stack)
    redactor = _redactor(environ)
    if stack is None:
        return result
    result.gpu_checks, result.undeclared = gpu_checks(stack, listings)
    result.stack = stack.spec
    names = [v.name for v in variables]
    result.variables = [
        Variable(
            v.name,
            v.value,
            v.does,
            v.unknown,
            tuple(r for r, role in stack.roles.items() if role.entry("env", v.name) is not None),
            tuple(r for r, role in stack.roles.items() if role.entry("env", v.name) is None),
        )
        for v in variables
    ]
    found = shell_findings(session, stack, environ, names)
    result.findings = [ShellFinding(f.variables, redactor.finding(f.finding), f.also_without_shell) for f in found]
    result.secrets = [
        SecretNeed(r, name, name in environ)
        for r, role in stack.roles.items()
        for name, value in role.env.items()
        if isinstance(value, dict)
    ]
    return result
