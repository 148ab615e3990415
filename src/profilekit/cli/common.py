"""What every command shares — the global options, printing, the session, exceptions turned into exit codes —
without typer: the hot commands run through `cli.fastpath` without importing it (typer and the pydantic
adapters it builds for each parameter are a third of a cold `check`). `cli.app` builds the typer app on this.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profilekit.cli.ending import EXIT_INTERRUPTED, silence_stdout, write_all
from profilekit.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_OK,
    Finding,
    FindingsError,
    Ignored,
    ProfilekitError,
    UsageError,
)
from profilekit.redact import Redactor

if TYPE_CHECKING:
    from profilekit.session import Session

# global options a user may also write after the command (`profilekit check STACK --repo R`)
GLOBAL_VALUED = ("--repo", "--vllm-version")
GLOBAL_FLAGS = ("--debug", "--no-cache")


def hoist_global_options(args: list[str]) -> list[str]:
    """Move the global options written anywhere before a `--` in front of the command, in their order.

    Arguments after `--` are left alone (`import -- vllm serve ... --debug` is vLLM's own argv); a valued
    option without its value stays where it is, for click to report.
    """
    hoisted: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest += args[index:]
            break
        if arg in GLOBAL_FLAGS or ("=" in arg and arg.split("=", 1)[0] in GLOBAL_VALUED):
            hoisted.append(arg)
        elif arg in GLOBAL_VALUED and index + 1 < len(args):
            hoisted += args[index : index + 2]
            index += 1
        else:
            rest.append(arg)
        index += 1
    return hoisted + rest


class _Globals:
    repo: Path | None = None
    vllm_version: str | None = None
    debug: bool = False
    no_cache: bool = False  # also read before typer runs: profilekit.cli.replay.command_of
    session: Session | None = None  # the repository the command opened, once it has


G = _Globals()


def set_globals(*, repo: Path | None, vllm_version: str | None, debug: bool, no_cache: bool) -> None:
    """The global options of this run (typer's `main_options` and the fast path alike); no session opened yet."""
    G.repo, G.vllm_version, G.debug, G.no_cache, G.session = repo, vllm_version, debug, no_cache, None


def redactor() -> Redactor:
    """The redaction rule for what this command prints: the secrets of every layer it has read."""
    return G.session.redactor() if G.session is not None else Redactor()


def out(text: str) -> None:
    """Print to stdout; like everything profilekit prints, without a secret value in it."""
    text = redactor().text(text)
    write_all(sys.stdout, text if text.endswith("\n") or not text else text + "\n")


def err(text: str) -> None:
    text = redactor().text(text)
    write_all(sys.stderr, text if text.endswith("\n") else text + "\n")


def print_findings(
    findings: list[Finding], fmt: str = "text", *, version: str = "", ignored: list[Ignored] | None = None
) -> None:
    """Findings in `fmt`; `ignored`: the warnings a rule selection left out, counted (SARIF: suppressed results)."""
    # the formats load only when findings are printed
    from profilekit.report.formats import format_github, format_json, format_sarif, format_text, summary_line  # noqa: PLC0415

    # redacted before formatting: escaping (JSON, Markdown) must not hide a secret's spelling from the redactor
    findings = redactor().findings(findings)
    left_out = [Ignored(redactor().finding(item.finding), item.by, item.reason) for item in ignored or []]
    if fmt == "markdown":
        from profilekit.report.markdown import format_lint  # noqa: PLC0415 - only --format markdown loads it

        text = format_lint(None, findings, version=version)
    elif fmt == "json":
        text = format_json(findings, version=version, ignored=left_out)
    elif fmt == "github":
        text = format_github(findings, prefix=_work_tree_prefix())
    elif fmt == "sarif":
        text = format_sarif(findings, left_out, prefix=_work_tree_prefix())
    else:
        text = format_text(findings)
    if text:
        out(text)
    if fmt == "text" and (findings or left_out):
        out(summary_line(findings, len(left_out)))


def _work_tree_prefix() -> str:
    """The profile repository's folder in its git work tree (`deploy/`), which GitHub's paths start from; empty
    at the work tree's root or outside git."""
    from profilekit.load.layers import find_repo  # noqa: PLC0415 - only the CI formats place the repository in git
    from profilekit.load.worktree import path_in_work_tree  # noqa: PLC0415 - as find_repo: only the CI formats

    if G.session is not None:
        return path_in_work_tree(G.session.root)
    try:  # a lint whose profilekit.toml is broken has no session, and its findings are at that file all the same
        return path_in_work_tree(find_repo(None, G.repo))
    except UsageError:
        return ""


# the formats of the commands that print a report as text or as its JSON (diff, lint --to-release)
TEXT_OR_JSON = ("text", "json")


def print_report(data: object, text: str, fmt: str) -> None:
    """A report in `fmt`: `data` as indented JSON for "json", else `text` (a TEXT_OR_JSON command's output)."""
    out(json.dumps(data, indent=2, ensure_ascii=False) if fmt == "json" else text)


def warn(findings: list[Finding]) -> None:
    """Warnings of a command that reports no findings of its own (show, explain, diff): to stderr, redacted."""
    if findings:
        # the formats load only when findings are printed
        from profilekit.report.formats import format_text, summary_line  # noqa: PLC0415

        found = redactor().findings(findings)
        err(format_text(found))
        err(summary_line(found))


def run_command(body: Callable[..., int | None], /, *args: Any, **kwargs: Any) -> int:
    """Run a command's body and return its exit code; domain errors become messages and exit codes, never a
    traceback (except with --debug, where an internal error is raised for its traceback).

    Both parsers end here — typer through `cli.app.command`, the fast path directly — so a command fails the
    same way whichever parsed its arguments.
    """
    try:
        code = body(*args, **kwargs)
    except FindingsError as exc:
        findings = sorted(exc.findings, key=lambda f: f.sort_key())
        # the formats load only when findings are printed
        from profilekit.report.formats import format_text, summary_line  # noqa: PLC0415

        err(format_text(findings))
        err(summary_line(findings))
        return EXIT_FINDINGS
    except ProfilekitError as exc:
        err(f"profilekit: error: {exc.message}")
        if exc.hint:
            err(f"  hint: {exc.hint}")
        return exc.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`profilekit lint | head -1`): stop quietly, as a tool that SIGPIPE ends does
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if G.debug:
            raise
        err(f"profilekit: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)")
        return EXIT_INTERNAL
    return code or EXIT_OK


def open_session() -> Session:
    from profilekit.session import Session  # noqa: PLC0415 - --version and --help parse here and open no repository

    G.session = Session.open(repo=G.repo, vllm_version=G.vllm_version)
    return G.session


def release_without_layers() -> str:
    """The target release of this run's global options, without loading the layers: for `flags` and `schema`."""
    return target_release(G.repo, G.vllm_version)


def target_release(repo: Path | None, vllm_version: str | None) -> str:
    """The target release (`vllm_version`, else `[vllm] version` if a repository is found at or above `repo`, else
    the newest), without loading the repository's layers (and without pydantic): for `flags`, `schema`, completion."""
    import tomllib  # noqa: PLC0415 - flags and completion read only [vllm] version, without the layers

    from profilekit.load.layers import REPO_MARKER, find_repo  # noqa: PLC0415 - as tomllib: not for --version or --help
    from profilekit.vllm.versions import resolve_version  # noqa: PLC0415 - as tomllib: not for --version or --help

    if vllm_version is not None:
        return resolve_version(vllm_version, None)
    try:
        root = find_repo(None, repo)
    except UsageError:
        if repo is not None:
            raise
        return resolve_version(None, None)
    try:
        data = tomllib.loads((root / REPO_MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read {REPO_MARKER}: {exc}", hint="fix it, or pass --vllm-version X.Y.Z") from None
    section = data.get("vllm")
    configured = section.get("version") if isinstance(section, dict) else None
    return resolve_version(None, configured if isinstance(configured, str) else None)


def check_format(fmt: str, allowed: tuple[str, ...]) -> None:
    if fmt not in allowed:
        raise UsageError(f"unknown format {fmt!r}", hint="choose one of: " + ", ".join(allowed))


def exit_for(findings: list[Finding], *, strict: bool) -> int:
    if any(f.is_error for f in findings) or (strict and findings):
        return EXIT_FINDINGS
    return EXIT_OK
