"""`profilekit render`: launch scripts, env files and a manifest for one or more stacks."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.cli.common import err, open_session, out, print_findings
from profilekit.errors import EXIT_FINDINGS, EXIT_OK, Finding, UsageError
from profilekit.output import write_outputs
from profilekit.render.context import DEFAULT_TARGETS, POD_TARGETS, TARGETS, VLLM_CONFIG, several_hosts
from profilekit.render.stack import render_stack, waived
from profilekit.session import chosen_stacks

if TYPE_CHECKING:
    from profilekit.compose.model import Stack
    from profilekit.output import Rendered
    from profilekit.rules.selection import Selection
    from profilekit.session import Session


def _folder_name(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]", "_", spec)


def _targets(given: list[str] | None) -> tuple[str, ...]:
    """`--target script,env` and `--target script --target env` alike."""
    targets = [t.strip() for value in given or [] for t in value.split(",") if t.strip()]
    for t in targets:
        if t not in TARGETS:
            close = difflib.get_close_matches(t, TARGETS, n=1)
            hint = (f"did you mean {close[0]!r}? " if close else "") + "targets: " + ", ".join(TARGETS)
            raise UsageError(f"unknown render target {t!r}", hint=hint)
    if "script" in targets and VLLM_CONFIG in targets:
        raise UsageError(
            f"--target script and --target {VLLM_CONFIG} both write each role's R.sh",
            hint=f"choose one: {VLLM_CONFIG} writes R.yaml and an R.sh that runs `vllm serve MODEL --config R.yaml`",
        )
    return tuple(dict.fromkeys(targets)) or DEFAULT_TARGETS


def render(
    *,
    stacks: list[str] | None,
    every: bool,
    out_dir: Path | None,
    role: str | None,
    print_: bool,
    target: list[str] | None,
    explain: bool,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
) -> int:
    """Write launch scripts, env files and a manifest for each stack; a stack with errors stops them all.

    `select` and `ignore` choose the rules whose warnings are printed; an error always stops the render.
    """
    targets = _targets(target)
    session = open_session()
    selection = session.selection(select, ignore)
    specs = chosen_stacks(session, stacks or [], every=every)
    _refuse_printing(specs, targets, print_=print_, explain=explain, target_given=bool(target))
    composed = [session.stack(spec) for spec in specs]
    _refuse_roles(session, composed, role, targets, print_=print_)
    chosen = ("script",) if print_ else targets
    if not _checks_pass(session, composed, chosen, selection):
        return EXIT_FINDINGS
    if explain:
        _explain(session, composed[0], role)
        return EXIT_OK
    rendered = _render_all(session, composed, role, chosen)
    if rendered is None:
        return EXIT_FINDINGS
    if print_:
        stack, files = rendered[0]
        out(files[f"{session.role_names(stack, role)[0]}.sh"].text)
        return EXIT_OK
    _write_all(session, rendered, out_dir, role, targets)
    return EXIT_OK


def _refuse_printing(
    specs: list[str], targets: tuple[str, ...], *, print_: bool, explain: bool, target_given: bool
) -> None:
    """`--print` and `--explain` print one thing of one stack instead of writing: combinations that cannot."""
    if print_ and explain:
        raise UsageError("--print and --explain each print instead of writing: choose one")
    if print_ and target_given and "script" not in targets:
        raise UsageError(
            f"--print prints one role's script of the script target, which --target {','.join(targets)} does not render",
            hint="drop --print to write the files, or --target to print the script",
        )
    for flag, what in (("--print", "one script"), ("--explain", "one stack's provenance")):
        if (print_ if flag == "--print" else explain) and len(specs) > 1:
            raise UsageError(f"{flag} prints {what}: name one stack", hint=f"e.g. render {specs[0]} {flag}")


def _refuse_roles(
    session: Session, composed: list[Stack], role: str | None, targets: tuple[str, ...], *, print_: bool
) -> None:
    """Roles the options cannot render: several for `--print`, only command roles for `--target vllm-config`."""
    for stack in composed:
        roles = session.role_names(stack, role)
        if print_ and len(roles) > 1:
            raise UsageError(
                f"--print needs --role: stack {stack.spec!r} has roles " + ", ".join(roles),
                hint=f"add --role {roles[0]}",
            )
        if targets == ("vllm-config",) and not any(stack.roles[name].is_vllm for name in roles):
            raise UsageError(
                f"--target vllm-config writes files for vLLM roles, and {', '.join(roles)} "
                f"{'is a command role' if len(roles) == 1 else 'are command roles'}",
                hint="render command roles with --target script",
            )


def _render_all(
    session: Session, composed: list[Stack], role: str | None, targets: tuple[str, ...]
) -> list[tuple[Stack, dict[str, Rendered]]] | None:
    """Every stack's files, or None (its findings printed) when one stack cannot be written: then none is."""
    rendered: list[tuple[Stack, dict[str, Rendered]]] = []
    for stack in composed:
        files, problems = _render(session, stack, role, targets)
        if problems:
            print_findings(problems)
            return None
        rendered.append((stack, files))
    return rendered


def _write_all(
    session: Session,
    rendered: list[tuple[Stack, dict[str, Rendered]]],
    out_dir: Path | None,
    role: str | None,
    targets: tuple[str, ...],
) -> None:
    """Write each stack's files into its folder, with the notes on what a target left out."""
    for stack, files in rendered:
        _write(session, stack, files, out_dir, several=len(rendered) > 1, role=role)
        if "script" in targets and role is None:
            _note_several_hosts(stack)
        if "k8s" in targets:
            _note_misspelt_k8s_settings(session, stack)
        if "slurm" in targets:
            _note_misspelt_slurm_settings(session, stack)
        if "slurm" in targets and role is not None and len(stack.roles) > 1:
            err("note: job.sbatch not written: it starts every role of the stack; render without --role for it")


def _explain(session: Session, stack: Stack, role: str | None) -> None:
    """Each role's rendered arguments and env entries, each with the file, line and layer that set it."""
    from profilekit.render.provenance import role_provenance  # noqa: PLC0415 - only --explain reads provenance

    for name in session.role_names(stack, role):
        for item in role_provenance(stack.roles[name], session.catalogue):
            out(f"[{name}] {item.text}")
            for origin in item.origins:
                out(f"    set at {origin.provenance()}")


def _checks_pass(
    session: Session, stacks: list[Stack], targets: tuple[str, ...], selection: tuple[Selection, list[Finding]]
) -> bool:
    """Check every stack before anything is written: errors in one leave every output folder as it was.

    The findings no chosen target needs (`render.waived`: on k8s, roles sharing one host) are named in a note
    instead. The rule selection (with profilekit.toml's unknown ids, which are errors) chooses the warnings shown.
    """
    findings = [(stack, session.check(stack) + session.stack_file_problems([stack])) for stack in stacks]
    skipped = [f for _stack, found in findings for f in found if waived(f, targets)]
    findings = [(stack, [f for f in found if not waived(f, targets)]) for stack, found in findings]
    if skipped:
        shown = ", ".join(dict.fromkeys(f.rule for f in skipped))
        why = (
            "each role runs in its own pod and no shell reads its env"
            if set(targets) <= POD_TARGETS
            else "each role runs on a host of its own"
        )
        err(
            f"note: {len(skipped)} finding{'s' if len(skipped) > 1 else ''} ({shown}) not applied to --target "
            f"{','.join(targets)}: {why}; `check` reports them for the script and env targets"
        )
    chosen, problems = selection  # problems: profilekit.toml's rule ids that name no rule
    failed = [stack.spec for stack, found in findings if any(f.is_error for f in found)]
    report = session.report([*problems, *(f for _stack, found in findings for f in found)], chosen)
    if failed or any(f.is_error for f in problems):
        print_findings(report.findings, ignored=report.ignored)
        named = ", ".join(failed) or "profilekit.toml"
        err(f"nothing rendered: {named} {'has' if len(failed) <= 1 else 'have'} errors")
        return False
    if report.findings or report.ignored:
        from profilekit.report.formats import format_text, summary_line  # noqa: PLC0415 - only a render with warnings prints them

        if report.findings:
            err(format_text(report.findings))
        if report.ignored:
            err(summary_line(report.findings, len(report.ignored)))
    return True


def _render(
    session: Session, stack: Stack, role: str | None, targets: tuple[str, ...]
) -> tuple[dict[str, Rendered], list[Finding]]:
    return render_stack(
        stack,
        version=session.version,
        catalogue=session.catalogue,
        roles=session.role_names(stack, role),
        targets=targets,
        team_templates=session.templates_dir(),
        root=session.root,
        labels={source.tree: source.prefix for source in session.sources},
        k8s=session.config.render.k8s,
        slurm=session.config.render.slurm,
    )


def _write(
    session: Session, stack: Stack, files: dict[str, Rendered], out_dir: Path | None, *, several: bool, role: str | None
) -> None:
    if out_dir is None:
        destination = session.root / "build" / _folder_name(stack.spec)
    else:
        destination = out_dir / _folder_name(stack.spec) if several else out_dir
    for path in write_outputs(destination, files, partial=role is not None):
        out(_display_path(path))
    if role is not None and len(stack.roles) > 1:
        others = ", ".join(name for name in stack.roles if name != role)
        err(
            f"rendered role {role} only; the files of roles {others} in {_display_path(destination)} were left as they were"
        )


def _note_several_hosts(stack: Stack) -> None:
    """Say why a stack with several roles got no up.sh: its roles name different hosts."""
    note = several_hosts(list(stack.roles.values())) if len(stack.roles) > 1 else None
    if note:
        err(f"note: {note}")


def _note_misspelt_k8s_settings(session: Session, stack: Stack) -> None:
    from profilekit.render.k8s import misspelt_settings  # noqa: PLC0415 - only --target k8s

    for note in misspelt_settings(stack, session.config.render.k8s):
        err(f"note: {note}")


def _note_misspelt_slurm_settings(session: Session, stack: Stack) -> None:
    from profilekit.render.slurm import misspelt_settings  # noqa: PLC0415 - only --target slurm

    for note in misspelt_settings(stack, session.config.render.slurm):
        err(f"note: {note}")


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
