"""`profilekit check` and `profilekit lint`: findings in text, JSON, GitHub, SARIF or Markdown form."""

from __future__ import annotations

from profilekit.cli.common import (
    TEXT_OR_JSON,
    G,
    check_format,
    exit_for,
    open_session,
    out,
    print_findings,
    print_report,
    redactor,
)
from profilekit.errors import EXIT_FINDINGS, EXIT_OK, Finding, FindingsError, UsageError
from profilekit.report.formats import FORMATS
from profilekit.session import Session, chosen_stacks


def check(
    *,
    stacks: list[str] | None,
    every: bool,
    fmt: str,
    strict: bool,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
) -> int:
    """Run every check on one or more stacks; `select` and `ignore` choose the rules whose warnings are shown."""
    check_format(fmt, FORMATS)
    session = open_session()
    selection, problems = session.selection(select, ignore)
    specs = chosen_stacks(session, stacks or [], every=every)
    checked: list[tuple[str, list[Finding]]] = []
    for spec in specs:
        try:
            composed = session.stack(spec)
            checked.append((composed.spec, session.check(composed) + session.stack_file_problems([composed])))
        except FindingsError as exc:
            checked.append((spec, exc.findings))
    report = session.report([*problems, *(f for _name, found in checked for f in found)], selection)
    clean = [name for name, found in checked if not session.report(found, selection).findings]
    findings = report.findings
    if fmt == "markdown":
        from profilekit.report.markdown import format_check  # noqa: PLC0415 - only --format markdown

        named = ", ".join(specs)
        shown = redactor().findings(findings)
        out(format_check(shown, stack=named, version=session.version, ignored=len(report.ignored)))
        return exit_for(findings, strict=strict)
    print_findings(findings, fmt, version=session.version, ignored=report.ignored)
    if fmt == "text":
        for spec in clean:
            out(f"{spec}: no problems found (vLLM {session.version})")
    return exit_for(findings, strict=strict)


# ---- lint ---------------------------------------------------------------------------------------


def lint(
    *,
    fmt: str,
    strict: bool,
    combinations: str | None,
    to_release: str | None,
    sources: bool,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
) -> int:
    """Check the whole repository: every file, every deployable layer, every [lint] stack, layer combinations."""
    from profilekit.lint.repository import lint_repository  # noqa: PLC0415 - lint's own modules: check loads none

    check_format(fmt, FORMATS)
    if combinations is not None and combinations not in ("none", "pairs", "all"):
        raise UsageError(f"unknown --combinations {combinations!r}", hint="choose one of: none, pairs, all")
    if to_release is not None:
        if select is not None or ignore is not None:
            raise UsageError(
                "--to-release reports what changes between releases, and --select and --ignore do not choose among it",
                hint="drop --select and --ignore, or --to-release",
            )
        return _lint_to_release(to_release, fmt, strict=strict, combinations=combinations)
    try:
        session = open_session()
    except FindingsError as exc:  # a broken profilekit.toml is a finding of the lint, in the asked format
        findings = sorted(exc.findings, key=lambda f: f.sort_key())
        print_findings(findings, fmt, version="")
        return EXIT_FINDINGS
    selection, _problems = session.selection(select, ignore)  # lint reports profilekit.toml's unknown ids itself
    units = None
    if not G.no_cache:
        from profilekit.lint.cache import LintCache  # noqa: PLC0415 - lint's own modules: check loads none

        units = LintCache(session)
    report = lint_repository(session, combinations=combinations, units=units, sources=sources, selection=selection)
    if fmt == "markdown":
        from profilekit.cli.commands.capacity import markdown_table  # noqa: PLC0415 - only --format markdown
        from profilekit.report.markdown import format_lint  # noqa: PLC0415 - only --format markdown

        summary = format_lint(report, redactor().findings(report.findings), version=session.version)
        out(summary + markdown_table(session, report.stacks))
        return exit_for(report.findings, strict=strict)
    print_findings(report.findings, fmt, version=session.version, ignored=report.ignored)
    if fmt == "text" and not report.findings:
        what = f"{report.files} files, {len(report.stacks)} stacks"
        if report.combinations:
            what += f", {report.combinations} combinations"
        out(f"lint: {what} checked, no problems found (vLLM {session.version})")
    return exit_for(report.findings, strict=strict)


def _lint_to_release(to_release: str, fmt: str, *, strict: bool, combinations: str | None) -> int:
    """`lint --to-release X`: exit 1 when the new release gives error findings the current one does not
    (with `--strict`, any new finding)."""
    from profilekit.upgrade.repository import repo_json, repo_text, upgrade_repository  # noqa: PLC0415 - only --to-release

    check_format(fmt, TEXT_OR_JSON)
    old = open_session()
    new = Session.open(repo=G.repo, vllm_version=to_release)
    report = upgrade_repository(old, new, combinations=combinations)
    redact = redactor()
    print_report(repo_json(report, redact), repo_text(report, redact), fmt)
    appear = [c.finding for c in report.findings if c.change == "appears"]
    return EXIT_FINDINGS if any(f.is_error or strict for f in appear) else EXIT_OK
