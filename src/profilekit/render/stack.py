"""Render a composed stack with the chosen targets: {path: Rendered}, never disk; a failing value or template
gives findings and no file at all."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.errors import Finding
from profilekit.load.layerdata import K8sSection, SlurmSection
from profilekit.output import MANIFEST, Rendered
from profilekit.render.context import (
    DEFAULT_TARGETS,
    POD_TARGETS,
    SEPARATE_HOST_TARGETS,
    ConfigUnwritable,
    LoopbackUnrewritable,
    builtin_templates,
)
from profilekit.render.nodes import unrenderable
from profilekit.render.script import manifest, script_files
from profilekit.render.templating import TemplateFailure, environment
from profilekit.rules.env import ENV_FILE_RULES, env_findings
from profilekit.rules.host import one_host_only

if TYPE_CHECKING:
    from profilekit.compose.model import Stack
    from profilekit.render.templating import Sandbox
    from profilekit.vllm.catalogue import Catalogue


def _environment(team_dir: Path | None, root: Path | None, labels: dict[Path, str] | None = None) -> Sandbox:
    folders = [*([team_dir] if team_dir is not None else []), builtin_templates()]
    return environment(folders, root=root, labels=labels)


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
    findings: list[Finding] = []
    chosen = [stack.roles[name] for name in (roles or list(stack.roles))]
    for role in chosen:
        findings += [f for f in env_findings(stack, role) if not waived(f, targets)]
    findings += unrenderable(stack, chosen, targets)
    if findings:
        return {}, findings
    env = _environment(team_templates, root, labels)
    try:  # a failing template, in any target, leaves no file at all: the render writes nothing
        files = script_files(env, stack, chosen, version=version, catalogue=catalogue, targets=targets)
        if "k8s" in targets:
            from profilekit.render.k8s import render_k8s  # noqa: PLC0415 - each target loads when chosen: a script render loads none

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
            from profilekit.render.slurm import render_slurm  # noqa: PLC0415 - loaded when chosen, as k8s

            job = render_slurm(
                stack, version=version, catalogue=catalogue, settings=slurm or SlurmSection(), root=root, templates=env
            )
            files = _with_files(files, job, stack, version=version)
    except (TemplateFailure, ConfigUnwritable) as failure:
        return {}, [failure.finding]
    except LoopbackUnrewritable as failure:
        return {}, list(failure.findings)
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
