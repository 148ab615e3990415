"""Render a composed stack into launch scripts, env files and a manifest: {path: text}, never disk."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profilekit import __version__
from profilekit.errors import Finding
from profilekit.output import MANIFEST, Rendered
from profilekit.quoting import comment_text, env_file_value, shell_quote
from profilekit.rules.env import ENV_FILE_RULES, env_findings, split_env
from profilekit.rules.host import one_host_only
from profilekit.vllm.argv import render_argv

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig, Stack
    from profilekit.load.layerdata import K8sSection, SlurmSection
    from profilekit.load.layers import Layer
    from profilekit.templating import Sandbox
    from profilekit.vllm.catalogue import Catalogue

DEFAULT_TARGETS = ("script", "env")
VLLM_CONFIG = "vllm-config"
TARGETS = (*DEFAULT_TARGETS, VLLM_CONFIG, "k8s", "slurm")
# targets that run every role in a pod of its own, whose env no bash and no env file reads
POD_TARGETS = frozenset({"k8s"})
# targets that run every role on a host of its own (a pod, a SLURM node)
SEPARATE_HOST_TARGETS = POD_TARGETS | {"slurm"}
TEMPLATE_FILES = {"script": "launch.sh.j2", "env": "role.env.j2", "up": "up.sh.j2"}
UP_SCRIPT = "up.sh"
DEFAULT_HTTP_PORT = 8000  # vLLM's `--port` default in every supported release
_WILDCARD = {"", "0.0.0.0", "::", "[::]", "*"}


def builtin_templates() -> Path:
    """The templates shipped in the wheel, or the source checkout's top-level `templates/`.

    Found beside the package, not through importlib.resources (tempfile, shutil and random with it, for a
    folder that always lies there: wheels install unpacked)."""
    packaged = Path(__file__).resolve().parent / "templates"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "templates"


def _environment(team_dir: Path | None, root: Path | None, labels: dict[Path, str] | None = None) -> Sandbox:
    from profilekit.templating import environment

    folders = [*([team_dir] if team_dir is not None else []), builtin_templates()]
    return environment(folders, root=root, labels=labels)


def role_argv(role: RoleConfig, catalogue: Catalogue | None) -> list[str]:
    """The full command of a role: `vllm serve MODEL ARGS...` or its own command."""
    if role.command is not None:
        return list(role.command)
    return ["vllm", "serve", *render_argv(role.serve, catalogue)]


def stack_context(stack: Stack, version: str) -> dict[str, Any]:
    """What every template of a stack is given: the versions, and the stack and its layers as comment text."""
    return {
        "profilekit_version": __version__,
        # free text that templates write into `#` comments: a layer's file name may hold a newline
        "stack": comment_text(stack.spec),
        "layers": header_layers(stack),
        "vllm_version": version,
    }


def template_context(stack: Stack, role: RoleConfig, version: str) -> dict[str, Any]:
    """What every template of one role is given: `stack_context` and the role's name as comment text."""
    return {**stack_context(stack, version), "role": comment_text(role.name)}


def header_layers(stack: Stack) -> str:
    """The layers of a stack in merge order, each with its file, for one `#` comment line of a header."""
    return comment_text(", ".join(f"{layer.name} ({layer.file})" for layer in stack.layers))


def render_stack(
    stack: Stack,
    *,
    version: str,
    catalogue: Catalogue | None,
    roles: list[str] | None = None,
    targets: tuple[str, ...] = DEFAULT_TARGETS,
    team_templates: Path | None = None,
    root: Path | None = None,
    labels: dict[Path, str] | None = None,
    k8s: K8sSection | None = None,
    slurm: SlurmSection | None = None,
) -> tuple[dict[str, Rendered], list[Finding]]:
    """Every output file of the stack; findings instead of files when a value or a template cannot be written.

    `root` is the repository's: a failing team template is named by its file relative to it (or, with `labels`,
    to the source it comes from). `k8s` and `slurm` are the repository's `[render.k8s]` and `[render.slurm]`
    tables.
    """
    from profilekit.targets.vllm_config import ConfigUnwritable
    from profilekit.templating import TemplateFailure

    findings: list[Finding] = []
    chosen = [stack.roles[name] for name in (roles or list(stack.roles))]
    for role in chosen:
        findings += [f for f in env_findings(stack, role) if not waived(f, targets)]
    if findings:
        return {}, findings
    env = _environment(team_templates, root, labels)
    try:  # a failing template, in any target, leaves no file at all: the render writes nothing
        files = _files(env, stack, chosen, version=version, catalogue=catalogue, targets=targets)
        if "k8s" in targets:
            from profilekit.load.layerdata import K8sSection
            from profilekit.targets.k8s import render_k8s

            manifests = render_k8s(
                stack,
                chosen,
                version=version,
                catalogue=catalogue,
                settings=k8s or K8sSection(),
                root=root,
                templates=env,
            )
            files = _with_files(files, manifests, stack, version=version)
        if "slurm" in targets and len(chosen) == len(stack.roles):  # job.sbatch starts every role of the stack
            from profilekit.load.layerdata import SlurmSection
            from profilekit.targets.slurm import render_slurm

            job = render_slurm(
                stack, version=version, catalogue=catalogue, settings=slurm or SlurmSection(), root=root, templates=env
            )
            files = _with_files(files, job, stack, version=version)
    except (TemplateFailure, ConfigUnwritable) as failure:
        return {}, [failure.finding]
    return files, []


def waived(finding: Finding, targets: tuple[str, ...]) -> bool:
    """Whether no target rendered needs the finding: then it does not stop render (`check` knows no target and
    reports it). On pod targets every role is its own pod (rules/host.py `one_host_only`) and no bash or env
    file reads the env (rules/env.py `ENV_FILE_RULES`); on slurm every role has a node, but bash reads its env."""
    chosen = set(targets)
    if not chosen:
        return False
    if chosen <= POD_TARGETS and finding.rule in ENV_FILE_RULES:
        return True
    return chosen <= SEPARATE_HOST_TARGETS and one_host_only(finding)


def _with_files(
    files: dict[str, Rendered], extra: dict[str, Rendered], stack: Stack, *, version: str
) -> dict[str, Rendered]:
    """`files` with a target's `extra` files, and a manifest.json that lists them all."""
    merged = {**{path: item for path, item in files.items() if path != MANIFEST}, **extra}
    return {**merged, MANIFEST: Rendered(manifest(stack, version=version, files=merged))}


def _files(
    env: Sandbox,
    stack: Stack,
    chosen: list[RoleConfig],
    *,
    version: str,
    catalogue: Catalogue | None,
    targets: tuple[str, ...],
) -> dict[str, Rendered]:
    files: dict[str, Rendered] = {}
    for role in chosen:
        plain, secrets = split_env(role)
        ctx = template_context(stack, role, version)
        if "script" in targets:
            files[f"{role.name}.sh"] = _launch_script(env, ctx, role, argv=role_argv(role, catalogue))
        if "env" in targets:
            text = _render_template(
                env,
                TEMPLATE_FILES["env"],
                {
                    **ctx,
                    "secrets": secrets,
                    "assignments": [f"{k}={env_file_value(v)}" for k, v in plain.items()],
                },
            )
            files[f"{role.name}.env"] = Rendered(text, 0o644)
        if VLLM_CONFIG in targets and role.is_vllm:
            files.update(_vllm_config_files(env, stack, role, ctx, version=version, catalogue=catalogue))
    if "script" in targets and len(chosen) > 1 and len(chosen) == len(stack.roles) and not several_hosts(chosen):
        files[UP_SCRIPT] = Rendered(_up_script(env, stack, chosen, version, catalogue), 0o755)
    files[MANIFEST] = Rendered(manifest(stack, version=version, files=files))
    return files


def _launch_script(
    env: Sandbox,
    ctx: dict[str, Any],
    role: RoleConfig,
    *,
    argv: list[str],
    tail: str = "",
) -> Rendered:
    """`R.sh`: the role's env exported, then `exec` of `argv` (and `tail`, shell text already quoted)."""
    plain, secrets = split_env(role)
    text = _render_template(
        env,
        TEMPLATE_FILES["script"],
        {
            **ctx,
            "script_name": f"{role.name}.sh",
            "secrets": secrets,
            "exports": [f"{k}={shell_quote(v)}" for k, v in plain.items()],
            "command": _command_lines(argv) + (" " + tail if tail else ""),
        },
    )
    return Rendered(text, 0o755)


def _vllm_config_files(
    env: Sandbox, stack: Stack, role: RoleConfig, ctx: dict[str, Any], *, version: str, catalogue: Catalogue | None
) -> dict[str, Rendered]:
    """`R.yaml` for `vllm serve --config` and the `R.sh` that runs it (targets/vllm_config.py)."""
    from profilekit.targets.vllm_config import config_file_name, config_text, launch_words

    argv, path = launch_words(role)
    return {
        config_file_name(role): Rendered(config_text(stack, role, version=version, catalogue=catalogue, templates=env)),
        f"{role.name}.sh": _launch_script(env, ctx, role, argv=argv, tail=path),
    }


def several_hosts(roles: list[RoleConfig]) -> str | None:
    """Why the roles cannot all start on one host (up.sh does not apply), or None.

    Roles name their host with `VLLM_NIXL_SIDE_CHANNEL_HOST`, as the one-host rules read it (rules/host.py).
    """
    from profilekit.rules.host import host_of

    hosts = {role.name: host for role in roles if (host := host_of(role)) is not None}
    if len(set(hosts.values())) < 2:
        return None
    named = ", ".join(f"{name} on {host}" for name, host in hosts.items())
    return f"{UP_SCRIPT} not written: the roles run on several hosts ({named}, by VLLM_NIXL_SIDE_CHANNEL_HOST)"


def health_probe(role: RoleConfig, catalogue: Catalogue | None) -> tuple[str, str, str]:
    """How up.sh asks a vLLM role for `/health`: (http | https | unix, address or socket path, port).

    A wildcard bind address (vLLM's default binds every address) is asked on the loopback address.
    """
    serve = role.serve
    uds = serve.get("uds")
    if isinstance(uds, str) and uds:
        return "unix", uds, ""
    host = serve.get("host")
    address = host.strip() if isinstance(host, str) else ""
    if address in _WILDCARD:
        address = "::1" if address in {"::", "[::]"} else "127.0.0.1"
    address = address.removeprefix("[").removesuffix("]")
    port = serve.get("port")
    if not isinstance(port, int) or isinstance(port, bool):
        flag = catalogue.flag("port") if catalogue is not None else None
        port = flag.default if flag is not None and isinstance(flag.default, int) else DEFAULT_HTTP_PORT
    kind = "https" if serve.get("ssl_certfile") else "http"
    return kind, address, str(port)


def _up_script(env: Sandbox, stack: Stack, roles: list[RoleConfig], version: str, catalogue: Catalogue | None) -> str:
    """`up.sh`: every role on this host, vLLM roles first (health-checked), then the command roles."""
    ordered = [role for role in roles if role.is_vllm] + [role for role in roles if not role.is_vllm]
    probes = [health_probe(role, catalogue) if role.is_vllm else ("", "", "") for role in ordered]
    width = max(len(role.name) for role in ordered)

    def words(values: list[str]) -> str:
        return " ".join(shell_quote(value) for value in values)

    def listed(names: list[str]) -> str:
        return comment_text(", ".join(names)) or "none"

    return _render_template(
        env,
        TEMPLATE_FILES["up"],
        {
            **stack_context(stack, version),
            "vllm_roles": listed([role.name for role in ordered if role.is_vllm]),
            "command_roles": listed([role.name for role in ordered if not role.is_vllm]),
            "names": words([role.name for role in ordered]),
            "labels": words([role.name.ljust(width) for role in ordered]),
            "probes": words([probe[0] for probe in probes]),
            "addresses": words([probe[1] for probe in probes]),
            "ports": words([probe[2] for probe in probes]),
        },
    )


def _render_template(env: Sandbox, name: str, context: dict[str, Any]) -> str:
    from profilekit.templating import render_template

    return render_template(env, name, context)


def _command_lines(argv: list[str]) -> str:
    """The quoted command, one option and its values per line: `exec vllm serve MODEL \\` then options."""
    lines: list[list[str]] = [[]]
    for index, arg in enumerate(argv):
        if arg.startswith("-") and index > 0 and lines[-1]:
            lines.append([])
        lines[-1].append(shell_quote(arg))
    return " \\\n  ".join(" ".join(words) for words in lines)


def _manifest_layer(layer: Layer) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": layer.name, "file": layer.file, "sha256": layer.sha256}
    if layer.source is not None:  # a layer of a source: where it came from, whole
        source = layer.source
        entry["source"] = {"name": source.name, "git": source.git, "rev": source.rev, "commit": source.commit}
    return entry


def manifest(stack: Stack, *, version: str, files: dict[str, Rendered]) -> str:
    data = {
        "stack": stack.spec,
        "layers": [_manifest_layer(layer) for layer in stack.layers],
        "vllm_version": version,
        "profilekit_version": __version__,
        "files": [
            {"path": path, "sha256": hashlib.sha256(item.text.encode("utf-8")).hexdigest()}
            for path, item in sorted(files.items())
        ],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
