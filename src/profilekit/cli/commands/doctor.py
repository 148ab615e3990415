"""`profilekit doctor`: what on this machine changes vLLM's effective configuration (never cached: it reads the
environment and the installed packages, which the cache does not record)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from profilekit.cli.common import check_format, open_session, out
from profilekit.doctor import audit
from profilekit.errors import EXIT_FINDINGS, EXIT_OK
from profilekit.quoting import shell_quote
from profilekit.report.formats import format_text
from profilekit.vllm.versions import SUPPORTED

if TYPE_CHECKING:
    from profilekit.doctor import Audit, Variable

FORMATS = ("text", "json")


def doctor(*, stack: str | None = None, fmt: str = "text") -> int:
    """`profilekit doctor`, as cli/parsers/doctor.py declares it."""
    check_format(fmt, FORMATS)
    session = open_session()
    composed = session.stack(stack) if stack is not None else None
    result = audit(session, dict(os.environ), stack=composed)
    out(json.dumps(_json(result), indent=2, ensure_ascii=False) if fmt == "json" else _text(result))
    return EXIT_FINDINGS if result.changes else EXIT_OK


def _assignment(v: Variable) -> str:
    return f"{v.name} (secret-looking value, not shown)" if v.value is None else f"{v.name}={shell_quote(v.value)}"


def _text(a: Audit) -> str:
    """The audit as `doctor` prints it: one section after the other, then what changes the configuration."""
    seen = f" with stack {a.stack}" if a.stack else ""
    lines = [f"profilekit doctor: this machine against vLLM {a.release.target}{seen}"]
    lines += ["", "vLLM release", *_release_lines(a)]
    lines += ["", "vLLM plugins (read from package metadata; none was loaded)", *_plugin_lines(a)]
    lines += ["", "environment (variables that change what vLLM runs)", *_variable_lines(a)]
    lines += ["", "GPUs of this host (nvidia-smi, rocm-smi)", *_gpu_lines(a)]
    if a.stack:
        lines += ["", f"GPUs {a.stack} declares ([hardware] gpu), against this host", *_declared_lines(a)]
    if a.stack:
        lines += ["", f"findings the shell's environment adds to {a.stack}", *_finding_lines(a)]
    if a.secrets:
        lines += ["", "secrets the stack takes from the launching shell (values never shown)"]
        for need in a.secrets:
            state = "set in this shell" if need.present else "NOT set in this shell: the launch script will stop"
            lines.append(f"  secret {need.name} (role {need.role}): {state}")
    lines += ["", _changes_line(a)]
    return "\n".join(lines)


def _release_lines(a: Audit) -> list[str]:
    installed = a.release.installed
    if installed is None:
        return [f"  not installed here (the checks describe vLLM {a.release.target})"]
    if a.release.matches:
        return [f"  installed {installed}: the release the checks describe"]
    if a.release.supported:
        other = "or target what is installed ([vllm] version or --vllm-version)"
    else:
        other = f"profilekit has no rules for {installed} (it knows {', '.join(SUPPORTED)})"
    return [
        f"  installed {installed}, but the checks describe vLLM {a.release.target}",
        f"    fix: install vllm=={a.release.target}; {other}",
    ]


def _plugin_lines(a: Audit) -> list[str]:
    if not a.plugins:
        return ["  none installed"]
    lines: list[str] = []
    for p in a.plugins:
        origin = f" (from {p.distribution})" if p.distribution else ""
        lines.append(f"  {p.group}: {p.name} = {p.target}{origin}")
        lines.append(f"    {p.does}")
        if not p.loads:
            lines.append("    not loaded: VLLM_PLUGINS does not name it")
    return lines


def _variable_lines(a: Audit) -> list[str]:
    if not a.variables:
        return ["  none set"]
    lines: list[str] = []
    for v in a.variables:
        lines.append(f"  {_assignment(v)}")
        if v.does:
            lines.append(f"    {v.does}")
        if v.unknown:
            lines.append(f"    unknown: {v.unknown}")
        if v.overridden_by:
            lines.append(f"    ignored by role {', '.join(v.overridden_by)}: its env sets {v.name} itself")
        if v.reaches and a.stack:
            lines.append(f"    reaches role {', '.join(v.reaches)}")
    return lines


def _gpu_lines(a: Audit) -> list[str]:
    lines: list[str] = []
    for listing in a.gpu_tools:
        if not listing.ran:
            lines.append(f"  {listing.problem}")
            continue
        mine = [g for g in a.gpus if g.tool == listing.tool]
        if not mine:
            lines.append(f"  {listing.tool}: no GPU")
        for name in dict.fromkeys(g.name for g in mine):
            count = sum(1 for g in mine if g.name == name)
            known = next(g.gpu for g in mine if g.name == name)
            what = f"{known} of the catalogue" if known else "no GPU of the catalogue: declare it in [gpus]"
            lines.append(f"  {listing.tool}: {count} x {name} ({what})")
    return lines


def _declared_lines(a: Audit) -> list[str]:
    lines: list[str] = []
    for check in a.gpu_checks:
        roles = f"role{'s' if len(check.roles) > 1 else ''} {', '.join(check.roles)}"
        head = f"  {check.need} x {check.gpu} ({check.device!r}) for {roles}: "
        if check.have is None:
            lines.append(head + f"not compared: {check.problem}")
        elif check.short:
            lines.append(head + f"this host has {check.have}")
            lines.append(
                "    fix: run the stack on a host with them, or declare the GPU this host has ([hardware] gpu)"
            )
        else:
            lines.append(head + f"this host has {check.have}")
    if a.undeclared:
        roles = (
            f"roles {', '.join(a.undeclared)} declare" if len(a.undeclared) > 1 else f"role {a.undeclared[0]} declares"
        )
        lines.append(f"  {roles} no GPU: nothing to compare (docs/HARDWARE.md)")
    return lines or ["  no role uses a GPU"]


def _finding_lines(a: Audit) -> list[str]:
    if not a.findings:
        return ["  none"]
    lines: list[str] = []
    for shell in a.findings:
        f = shell.finding
        role = f" in role {f.role}" if f.role else ""
        lines.append(f"  because of {', '.join(shell.variables)}{role}:")
        lines += [f"    {line}" for line in format_text([f]).splitlines()]
        if shell.also_without_shell:
            lines.append(f"        (without the shell's value the stack breaks {f.rule} too: see profilekit check)")
        else:
            lines.append(f"        or: unset {' '.join(shell.variables)} in the shell that launches it")
    return lines


def _changes_line(a: Audit) -> str:
    changes = a.changes
    if not changes:
        return "nothing here changes the effective configuration"
    things = "1 thing changes" if len(changes) == 1 else f"{len(changes)} things change"
    return f"{things} the effective configuration: {'; '.join(changes)}"


def _json(a: Audit) -> dict[str, Any]:
    variables: list[dict[str, Any]] = []
    for v in a.variables:
        entry: dict[str, Any] = {"name": v.name, "secret": v.secret, "does": v.does}
        if v.value is not None:
            entry["value"] = v.value
        if v.unknown:
            entry["unknown"] = v.unknown
        if a.stack:
            entry["overridden_by"], entry["reaches"] = list(v.overridden_by), list(v.reaches)
        variables.append(entry)
    data: dict[str, Any] = {
        "vllm_version": a.release.target,
        "installed_vllm": a.release.installed,
        "release_matches": a.release.matches,
        "installed_supported": a.release.supported,
        "plugins": [
            {
                "group": p.group,
                "name": p.name,
                "target": p.target,
                "distribution": p.distribution,
                "does": p.does,
                "loads": p.loads,
                "changes_config": p.changes_config,
            }
            for p in a.plugins
        ],
        "environment": variables,
        "gpus": [{"tool": g.tool, "name": g.name, "gpu": g.gpu} for g in a.gpus],
        "gpu_tools": [{"tool": t.tool, "ran": t.ran, "problem": t.problem} for t in a.gpu_tools],
    }
    if a.stack:
        data["stack"] = a.stack
        data["findings"] = [
            {**s.finding.as_dict(), "variables": list(s.variables), "also_without_shell": s.also_without_shell}
            for s in a.findings
        ]
        data["secrets"] = [{"role": s.role, "name": s.name, "present": s.present} for s in a.secrets]
        data["declared_gpus"] = [
            {
                "gpu": c.gpu,
                "device": c.device,
                "need": c.need,
                "roles": list(c.roles),
                "tool": c.tool,
                "have": c.have,
                "problem": c.problem,
            }
            for c in a.gpu_checks
        ]
        data["roles_without_gpu"] = list(a.undeclared)
    data["changes"] = a.changes
    return data
