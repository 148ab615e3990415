"""The `script` and `env` targets: per role `R.sh` (its env exported, then `exec` of its command) and `R.env`;
`up.sh` for a stack of several roles on one host; and `manifest.json`, the digest of every file rendered."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from profilekit import __version__
from profilekit.compose.model import RoleConfig, Stack
from profilekit.load.layers import Layer
from profilekit.output import MANIFEST, Rendered
from profilekit.quoting import comment_text, env_file_value, shell_quote
from profilekit.render.context import (
    UP_SCRIPT,
    VLLM_CONFIG,
    health_probe,
    role_argv,
    several_hosts,
    stack_context,
    template_context,
)
from profilekit.render.hosts import gpu_needs
from profilekit.render.templating import Sandbox, render_template
from profilekit.rules.env import split_env
from profilekit.vllm.catalogue import Catalogue

TEMPLATE_FILES = {"script": "launch.sh.j2", "env": "role.env.j2", "up": "up.sh.j2"}


def script_files(
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
    from profilekit.render.vllm_config import config_file_name, config_text, launch_words  # noqa: PLC0415 - loaded when chosen

    argv, path = launch_words(role)
    return {
        config_file_name(role): Rendered(config_text(stack, role, version=version, catalogue=catalogue, templates=env)),
        f"{role.name}.sh": _launch_script(env, ctx, role, argv=argv, tail=path),
    }


def _up_script(env: Sandbox, stack: Stack, roles: list[RoleConfig], version: str, catalogue: Catalogue | None) -> str:
    """`up.sh`: every role on this host, vLLM roles first (health-checked), then the command roles."""
    ordered = [role for role in roles if role.is_vllm] + [role for role in roles if not role.is_vllm]
    probes = [health_probe(role, catalogue) if role.is_vllm else ("", "", "") for role in ordered]
    width = max(len(role.name) for role in ordered)

    def words(values: list[str]) -> str:
        return " ".join(shell_quote(value) for value in values)

    def listed(names: list[str]) -> str:
        return comment_text(", ".join(names)) or "none"

    needs = gpu_needs(stack, ordered)
    summary = ", ".join(f"{count} x {gpu.name}" for gpu, count in needs) or "none declared, so none is checked"
    return _render_template(
        env,
        TEMPLATE_FILES["up"],
        {
            **stack_context(stack, version),
            "gpu_summary": comment_text(summary),
            "gpu_names": words([gpu.name for gpu, _count in needs]),
            "gpu_devices": words([gpu.device_name for gpu, _count in needs]),
            "gpu_platforms": words([gpu.platform for gpu, _count in needs]),
            "gpu_needs": words([str(count) for _gpu, count in needs]),
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
