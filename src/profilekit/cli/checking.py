"""`profilekit check` and `profilekit lint`: findings in text, JSON, GitHub, SARIF or Markdown form."""

from __future__ import annotations

from typing import Annotated

import typer

from profilekit.cli.app import G, app, check_format, command, exit_for, open_session, out, print_findings, redactor
from profilekit.cli.completion import complete_stack
from profilekit.errors import EXIT_FINDINGS, Finding, FindingsError

FORMAT_HELP = (
    "text; json; github (workflow annotations); sarif (code scanning); "
    "markdown (for $GITHUB_STEP_SUMMARY and pull-request comments)"
)


STACKS_HELP = "Stacks: layer names or layer files joined by '+' (e.g. base+replayssm, profiles/qwen.toml)"
ALL_HELP = "Every deployable layer and every [lint] stacks entry."


@app.command()
@command
def check(
    stacks: Annotated[
        list[str] | None,
        typer.Argument(help=STACKS_HELP, show_default=False, metavar="STACK", autocompletion=complete_stack),
    ] = None,
    every: Annotated[bool, typer.Option("--all", help=ALL_HELP)] = False,
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "text",
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too.")] = False,
) -> int:
    """Run every check on one or more stacks."""
    from profilekit.report import FORMATS
    from profilekit.stacks import chosen_stacks, distinct

    check_format(fmt, FORMATS)
    session = open_session()
    specs = chosen_stacks(session, stacks or [], every=every)
    findings: list[Finding] = []
    clean: list[str] = []
    for spec in specs:
        try:
            composed = session.stack(spec)
            name, found = composed.spec, session.check(composed)
        except FindingsError as exc:
            name, found = spec, exc.findings
        findings += found
        if not found:
            clean.append(name)
    findings = distinct(findings)
    if fmt == "markdown":
        from profilekit.markdown import format_check

        named = ", ".join(specs)
        out(format_check(redactor().findings(findings), stack=named, version=session.version))
        return exit_for(findings, strict=strict)
    print_findings(findings, fmt, version=session.version)
    if fmt == "text":
        for spec in clean:
            out(f"{spec}: no problems found (vLLM {session.version})")
    return exit_for(findings, strict=strict)


# ---- lint ---------------------------------------------------------------------------------------


@app.command()
@command
def lint(
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "text",
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too.")] = False,
    combinations: Annotated[
        str | None,
        typer.Option("--combinations", help="none, pairs or all (default: [lint] combinations)"),
    ] = None,
    to_release: Annotated[
        str | None, typer.Option("--to-release", help="What upgrading vLLM to this release changes (text, json).")
    ] = None,
    sources: Annotated[
        bool, typer.Option("--sources", help="Lint the layers of every [sources] entry too, not only those used.")
    ] = False,
) -> int:
    """Check the whole repository: every file, every deployable layer, every [lint] stack, layer combinations."""
    from profilekit.errors import UsageError
    from profilekit.lint import lint_repository
    from profilekit.report import FORMATS

    check_format(fmt, FORMATS)
    if combinations is not None and combinations not in ("none", "pairs", "all"):
        raise UsageError(f"unknown --combinations {combinations!r}", hint="choose one of: none, pairs, all")
    if to_release is not None:
        from profilekit.cli.diff import lint_to_release

        return lint_to_release(to_release, fmt, strict=strict, combinations=combinations)
    try:
        session = open_session()
    except FindingsError as exc:  # a broken profilekit.toml is a finding of the lint, in the asked format
        findings = sorted(exc.findings, key=lambda f: f.sort_key())
        print_findings(findings, fmt, version="")
        return EXIT_FINDINGS
    units = None
    if not G.no_cache:
        from profilekit.lintcache import LintCache

        units = LintCache(session)
    report = lint_repository(session, combinations=combinations, units=units, sources=sources)
    if fmt == "markdown":
        from profilekit.markdown import format_lint

        out(format_lint(report, redactor().findings(report.findings), version=session.version))
        return exit_for(report.findings, strict=strict)
    print_findings(report.findings, fmt, version=session.version)
    if fmt == "text" and not report.findings:
        what = f"{report.files} files, {len(report.stacks)} stacks"
        if report.combinations:
            what += f", {report.combinations} combinations"
        out(f"lint: {what} checked, no problems found (vLLM {session.version})")
    return exit_for(report.findings, strict=strict)
