"""Team templates for the Python-written targets (vllm-config, k8s, slurm): rendered, and their output checked.

A team's templates folder may hold one of TEMPLATES; the target then renders it in the sandbox (templating.py)
with what its built-in writer computed, and writes its output only when that output is what the target must
write: YAML that parses (k8s: each document a mapping with apiVersion and kind), a batch script `bash -n`
accepts. Anything else is a `template-error` naming the template file, and the render writes nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import TYPE_CHECKING, Any

import yaml

from profilekit.quoting import comment_text
from profilekit.render.templating import has_template, output_failure, render_template

if TYPE_CHECKING:
    from profilekit.render.templating import Sandbox

VLLM_CONFIG = "vllm-config.yaml.j2"
K8S = "k8s.yaml.j2"
KUSTOMIZATION = "kustomization.yaml.j2"
SLURM = "slurm.sbatch.j2"
TEMPLATES = (VLLM_CONFIG, K8S, KUSTOMIZATION, SLURM)
BASH_CHECK_SECONDS = 10
_BASH_LINE = re.compile(r"^bash: line (\d+):")


def team_template(env: Sandbox | None, name: str) -> bool:
    """Whether the team's folder holds the template `name` (the built-in targets have none of TEMPLATES)."""
    return env is not None and has_template(env, name)


def render_yaml(env: Sandbox, name: str, context: dict[str, Any], *, k8s: bool = False) -> str:
    """The template's output, once it parses as YAML: one mapping, or (`k8s`) mappings with apiVersion and kind."""
    text = render_template(env, name, context)
    fix = "fix the template so that its output is " + ("Kubernetes objects in YAML" if k8s else "one YAML mapping")
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} of the rendered output (not of the template)" if mark is not None else "it"
        problem = ": ".join(
            str(part) for part in (getattr(exc, "context", None), getattr(exc, "problem", None)) if part
        )
        why = comment_text(problem or str(exc))
        raise output_failure(env, name, f"rendered YAML that does not parse: {where}: {why}", fix=fix) from None
    if not k8s and (len(documents) != 1 or not isinstance(documents[0], dict)):
        raise output_failure(env, name, "rendered no YAML mapping: the file must be one mapping of keys", fix=fix)
    if k8s and not documents:
        raise output_failure(env, name, "rendered no YAML document: it must hold Kubernetes objects", fix=fix)
    for index, document in enumerate(documents if k8s else [], start=1):
        if not isinstance(document, dict) or not all(
            isinstance(document.get(key), str) for key in ("apiVersion", "kind")
        ):
            raise output_failure(
                env,
                name,
                f"rendered YAML document {index} that is not a Kubernetes object (a mapping with apiVersion and kind)",
                fix=fix,
            )
    return text


def render_bash(env: Sandbox, name: str, context: dict[str, Any]) -> str:
    """The template's output, once `bash -n` reads it without a syntax error."""
    text = render_template(env, name, context)
    fix = "fix the template so that its output passes `bash -n`"
    try:
        checked = subprocess.run(
            ["bash", "-n"],
            input=text,
            capture_output=True,
            text=True,
            timeout=BASH_CHECK_SECONDS,
            check=False,
            # bash's messages in English whatever the locale, as the finding quotes them
            env={"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise output_failure(env, name, f"rendered a script that `bash -n` could not check: {exc}", fix=fix) from None
    if checked.returncode != 0:
        why = "; ".join(
            _BASH_LINE.sub(r"line \1 of the rendered output (not of the template):", line)
            for line in checked.stderr.splitlines()
            if line.strip()
        )
        raise output_failure(env, name, f"rendered a script that `bash -n` refuses: {comment_text(why)}", fix=fix)
    return text


__all__ = ["K8S", "KUSTOMIZATION", "SLURM", "TEMPLATES", "VLLM_CONFIG", "render_bash", "render_yaml", "team_template"]
