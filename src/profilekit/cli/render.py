"""`profilekit render`: launch scripts, env files and a manifest for a stack."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from profilekit.cli.app import app, command, err, open_session, out, print_findings
from profilekit.errors import EXIT_FINDINGS, EXIT_OK, Finding

if TYPE_CHECKING:
    from profilekit.session import Session


def _default_out(session: Session, spec: str) -> Path:
    import re

    return session.root / "build" / re.sub(r"[^A-Za-z0-9._+-]", "_", spec)


@app.command()
@command
def render(
    stack: Annotated[str, typer.Argument(help="Layers joined by '+'")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Output folder (default: build/STACK).")] = None,
    role: Annotated[str | None, typer.Option("--role", help="Only this role.")] = None,
    print_: Annotated[bool, typer.Option("--print", help="Print one role's launch script instead.")] = False,
    target: Annotated[list[str] | None, typer.Option("--target", help="script, env (repeatable; default both)")] = None,
) -> int:
    """Write launch scripts, env files and a manifest for a stack."""
    from profilekit.errors import UsageError
    from profilekit.output import write_outputs
    from profilekit.render import DEFAULT_TARGETS, render_stack

    targets = tuple(target or DEFAULT_TARGETS)
    for t in targets:
        if t not in DEFAULT_TARGETS:
            raise UsageError(f"unknown render target {t!r}", hint="targets: " + ", ".join(DEFAULT_TARGETS))
    session = open_session()
    composed = session.stack(stack)
    roles = session.role_names(composed, role)
    if print_ and len(roles) > 1:
        raise UsageError(
            f"--print needs --role: stack {composed.spec!r} has roles " + ", ".join(roles),
            hint=f"add --role {roles[0]}",
        )
    findings = session.check(composed)
    if any(f.is_error for f in findings):
        print_findings(findings)
        err(f"nothing rendered: {composed.spec} has errors")
        return EXIT_FINDINGS
    if findings:
        err(_text(findings))
    files, problems = render_stack(
        composed,
        version=session.version,
        catalogue=session.catalogue,
        roles=roles,
        targets=("script",) if print_ else targets,
        team_templates=session.templates_dir(),
    )
    if problems:
        print_findings(problems)
        return EXIT_FINDINGS
    if print_:
        out(files[f"{roles[0]}.sh"].text)
        return EXIT_OK
    destination = out_dir if out_dir is not None else _default_out(session, composed.spec)
    for path in write_outputs(destination, files):
        out(_display_path(path))
    return EXIT_OK


def _text(findings: list[Finding]) -> str:
    from profilekit.report import format_text

    return format_text(findings)


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
