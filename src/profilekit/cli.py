"""The command line: options in, pipeline calls, text out, exit code out. The only module that prints."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from profilekit import __version__
from profilekit.errors import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, Finding, FindingsError, ProfilekitError

if TYPE_CHECKING:
    from profilekit.compose import Entry, Stack
    from profilekit.session import Session

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Compose typed vLLM deployment profiles, check them against vLLM's own rules, render launch scripts.",
)

F = TypeVar("F", bound=Callable[..., Any])


class _Globals:
    repo: Path | None = None
    vllm_version: str | None = None
    debug: bool = False


G = _Globals()


def out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


def err(text: str) -> None:
    sys.stderr.write(text if text.endswith("\n") else text + "\n")


def _print_findings(findings: list[Finding], fmt: str = "text", *, version: str = "") -> None:
    from profilekit.report import format_findings, summary_line

    text = format_findings(findings, fmt, version=version)
    if text:
        out(text)
    if fmt == "text" and findings:
        out(summary_line(findings))


def command(fn: F) -> F:
    """Run a command; map domain errors to messages and exit codes, never to a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            code = fn(*args, **kwargs)
        except FindingsError as exc:
            findings = sorted(exc.findings, key=lambda f: f.sort_key())
            from profilekit.report import format_text, summary_line

            err(format_text(findings))
            err(summary_line(findings))
            raise typer.Exit(EXIT_FINDINGS) from None
        except ProfilekitError as exc:
            err(f"profilekit: error: {exc.message}")
            if exc.hint:
                err(f"  hint: {exc.hint}")
            raise typer.Exit(exc.exit_code) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:
            if G.debug:
                raise
            err(f"profilekit: internal error: {type(exc).__name__}: {exc} (run with --debug for a traceback)")
            raise typer.Exit(EXIT_INTERNAL) from None
        raise typer.Exit(code or EXIT_OK)

    return wrapper  # type: ignore[return-value]


def _version_callback(value: bool) -> None:
    if value:
        out(f"profilekit {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_options(
    repo: Annotated[
        Path | None, typer.Option("--repo", help="Profile repository root (default: search upwards).")
    ] = None,
    vllm_version: Annotated[
        str | None, typer.Option("--vllm-version", help="Target vLLM release (default: [vllm] version).")
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    G.repo, G.vllm_version, G.debug = repo, vllm_version, debug


def _session() -> Session:
    from profilekit.session import Session

    return Session.open(repo=G.repo, vllm_version=G.vllm_version)


def _check_format(fmt: str, allowed: tuple[str, ...]) -> None:
    from profilekit.errors import UsageError

    if fmt not in allowed:
        raise UsageError(f"unknown format {fmt!r}", hint="choose one of: " + ", ".join(allowed))


# ---- list ---------------------------------------------------------------------------------------


@app.command("list")
@command
def list_layers(
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> int:
    """List the layers with description, group, extends and abstract."""
    _check_format(fmt, ("text", "json"))
    session = _session()
    rows: list[dict[str, Any]] = []
    problems: list[Finding] = list(session.config_findings)
    for name in session.layers.files:
        layer, findings = session.layers.get(name)
        problems += findings
        if layer is None:
            continue
        meta = layer.data.layer
        rows.append(
            {
                "name": name,
                "file": layer.file,
                "description": meta.description,
                "group": meta.group,
                "extends": list(meta.extends),
                "abstract": meta.abstract,
            }
        )
    if fmt == "json":
        out(json.dumps({"layers": rows, "findings": [f.as_dict() for f in problems]}, indent=2, ensure_ascii=False))
    else:
        width = max((len(r["name"]) for r in rows), default=4)
        for r in rows:
            tags = []
            if r["abstract"]:
                tags.append("abstract")
            if r["group"]:
                tags.append(f"group={r['group']}")
            if r["extends"]:
                tags.append("extends=" + ",".join(r["extends"]))
            suffix = f"  [{'; '.join(tags)}]" if tags else ""
            out(f"{r['name']:<{width}}  {r['description']}{suffix}".rstrip())
        if problems:
            _print_findings(sorted(problems, key=lambda f: f.sort_key()))
    return EXIT_FINDINGS if any(f.is_error for f in problems) else EXIT_OK


# ---- show ---------------------------------------------------------------------------------------


def _role_view(stack: Stack, names: list[str]) -> dict[str, Any]:
    roles: dict[str, Any] = {}
    for name in names:
        role = stack.roles[name]
        view: dict[str, Any] = {}
        if role.is_vllm:
            view["serve"] = role.serve
        else:
            view["command"] = role.command
        view["env"] = role.env
        model = role.model
        if model:
            view["model"] = model
        roles[name] = view
    return roles


@app.command()
@command
def show(
    stack: Annotated[str, typer.Argument(help="Layers joined by '+', e.g. base+replayssm")],
    role: Annotated[str | None, typer.Option("--role", help="Only this role.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="toml or json")] = "toml",
) -> int:
    """Print the effective configuration of a stack."""
    _check_format(fmt, ("toml", "json"))
    session = _session()
    composed = session.stack(stack)
    data = {
        "stack": composed.spec,
        "layers": composed.layer_names,
        "roles": _role_view(composed, session.role_names(composed, role)),
    }
    if fmt == "json":
        out(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        import tomlkit

        out(tomlkit.dumps(data))
    return EXIT_OK


# ---- explain ------------------------------------------------------------------------------------


def _value_text(value: Any) -> str:
    from profilekit.compose import UNSET

    if value is UNSET:
        return "(unset: vLLM's default applies)"
    if isinstance(value, dict) and value.get("secret") is True and len(value) == 1:
        return "{ secret = true }"
    return json.dumps(value, ensure_ascii=False)


def _entry_json(role: str, key: str, entry: Entry) -> dict[str, Any]:
    from profilekit.compose import UNSET

    def value(v: Any) -> dict[str, Any]:
        return {"value": None, "unset": True} if v is UNSET else {"value": v}

    return {
        "role": role,
        "key": key,
        **value(entry.value),
        "origin": entry.origin.as_dict(),
        "overridden": [{**value(a.value), "origin": a.origin.as_dict()} for a in entry.overridden],
    }


@app.command()
@command
def explain(
    stack: Annotated[str, typer.Argument(help="Layers joined by '+'")],
    key: Annotated[
        str | None, typer.Argument(help="Only entries at or below this key, e.g. serve.max_num_seqs")
    ] = None,
    role: Annotated[str | None, typer.Option("--role", help="Only this role.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> int:
    """Show each effective value with its origin and what it overrode."""
    from profilekit.errors import UsageError
    from profilekit.tomlpos import format_key, parse_key

    _check_format(fmt, ("text", "json"))
    session = _session()
    composed = session.stack(stack)
    prefix: tuple[str | int, ...] = ()
    if key is not None:
        try:
            prefix = parse_key(key)
        except ValueError as exc:
            raise UsageError(str(exc), hint="write a dotted key such as serve.max_num_seqs or env.HF_TOKEN") from None
        if prefix and prefix[0] == "serve" and len(prefix) > 1:
            from profilekit.layers import serve_dest

            prefix = ("serve", serve_dest(str(prefix[1]), session.catalogue), *prefix[2:])
    rows: list[tuple[str, str, Entry]] = []
    for name in session.role_names(composed, role):
        scope = composed.roles[name].scope
        items = sorted([*scope.entries.items(), *scope.removed.items()], key=lambda kv: _order(kv[0]))
        for path, entry in items:
            if path[: len(prefix)] == prefix:
                rows.append((name, format_key(path), entry))
    if fmt == "json":
        out(
            json.dumps(
                {"stack": composed.spec, "entries": [_entry_json(r, k, e) for r, k, e in rows]},
                indent=2,
                ensure_ascii=False,
            )
        )
        return EXIT_OK
    if not rows:
        what = f"{key!r} is" if key else "nothing is"
        out(f"{what} not set by any layer of {composed.spec}; vLLM's default applies")
        return EXIT_OK
    for name, k, entry in rows:
        out(f"[{name}] {k} = {_value_text(entry.value)}")
        verb = "unset at" if _is_unset(entry.value) else "set at"
        out(f"    {verb} {entry.origin}  ({entry.origin.key}, layer {entry.origin.layer})")
        for old in reversed(entry.overridden):
            what = "unset" if _is_unset(old.value) else _value_text(old.value)
            out(f"    overrides {what} from {old.origin}  ({old.origin.key}, layer {old.origin.layer})")
    return EXIT_OK


def _is_unset(value: Any) -> bool:
    from profilekit.compose import UNSET

    return value is UNSET


def _order(path: tuple[str | int, ...]) -> tuple[int, tuple[str, ...]]:
    scope_rank = {"model": 0, "serve": 1, "command": 1, "env": 2}
    return scope_rank.get(str(path[0]), 3), tuple(str(p) for p in path)


# ---- check --------------------------------------------------------------------------------------


@app.command()
@command
def check(
    stack: Annotated[str, typer.Argument(help="Layers joined by '+'")],
    fmt: Annotated[str, typer.Option("--format", help="text, json, github or sarif")] = "text",
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too.")] = False,
) -> int:
    """Run every check on one stack."""
    from profilekit.report import FORMATS

    _check_format(fmt, FORMATS)
    session = _session()
    try:
        composed = session.stack(stack)
        findings = session.check(composed)
    except FindingsError as exc:
        findings = sorted(exc.findings, key=lambda f: f.sort_key())
    _print_findings(findings, fmt, version=session.version)
    if fmt == "text" and not findings:
        out(f"{stack}: no problems found (vLLM {session.version})")
    return _exit_for(findings, strict=strict)


def _exit_for(findings: list[Finding], *, strict: bool) -> int:
    if any(f.is_error for f in findings) or (strict and findings):
        return EXIT_FINDINGS
    return EXIT_OK


# ---- lint ---------------------------------------------------------------------------------------


@app.command()
@command
def lint(
    fmt: Annotated[str, typer.Option("--format", help="text, json, github or sarif")] = "text",
    strict: Annotated[bool, typer.Option("--strict", help="Warnings fail too.")] = False,
    combinations: Annotated[
        str | None,
        typer.Option("--combinations", help="none, pairs or all (default: [lint] combinations)"),
    ] = None,
) -> int:
    """Check the whole repository: every file, every deployable layer, every [lint] stack, layer combinations."""
    from profilekit.errors import UsageError
    from profilekit.lint import lint_repository
    from profilekit.report import FORMATS

    _check_format(fmt, FORMATS)
    if combinations is not None and combinations not in ("none", "pairs", "all"):
        raise UsageError(f"unknown --combinations {combinations!r}", hint="choose one of: none, pairs, all")
    try:
        session = _session()
    except FindingsError as exc:  # a broken profilekit.toml is a finding of the lint, in the asked format
        findings = sorted(exc.findings, key=lambda f: f.sort_key())
        _print_findings(findings, fmt, version="")
        return EXIT_FINDINGS
    report = lint_repository(session, combinations=combinations)
    _print_findings(report.findings, fmt, version=session.version)
    if fmt == "text" and not report.findings:
        what = f"{report.files} files, {len(report.stacks)} stacks"
        if report.combinations:
            what += f", {report.combinations} combinations"
        out(f"lint: {what} checked, no problems found (vLLM {session.version})")
    return _exit_for(report.findings, strict=strict)


# ---- render -------------------------------------------------------------------------------------


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
    session = _session()
    composed = session.stack(stack)
    roles = session.role_names(composed, role)
    if print_ and len(roles) > 1:
        raise UsageError(
            f"--print needs --role: stack {composed.spec!r} has roles " + ", ".join(roles),
            hint=f"add --role {roles[0]}",
        )
    findings = session.check(composed)
    if any(f.is_error for f in findings):
        _print_findings(findings)
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
        _print_findings(problems)
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


# ---- import -------------------------------------------------------------------------------------


@app.command("import")
@command
def import_launch(
    launch: Annotated[
        list[str] | None,
        typer.Argument(help="A launch after --: `-- [VAR=value ...] vllm serve MODEL ...`, or a bash script file."),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Layer name (default: from the model), written to profiles/NAME.toml.")
    ] = None,
) -> int:
    """Turn an existing vllm serve launch into a layer file (VAR=value and export lines become [env])."""
    from profilekit.errors import UsageError
    from profilekit.importer import import_launch as read_launch
    from profilekit.importer import write_layer

    session = _session()
    catalogue = session.catalogue
    if catalogue is None:
        raise UsageError(f"this build of profilekit ships no flag catalogue for vLLM {session.version}")
    imported = read_launch(session.root, list(launch or []), name=name, catalogue=catalogue, cwd=Path.cwd())
    for note in imported.notes:
        err(f"note: {note}")
    write_layer(session.root, imported)
    out(imported.path.as_posix())  # relative to the repository root, like every file profilekit names
    return EXIT_OK


# ---- flags --------------------------------------------------------------------------------------


def _flags_version() -> str:
    """The target release without loading the repository's layers (and without pydantic)."""
    import tomllib

    from profilekit.errors import UsageError
    from profilekit.layers import REPO_MARKER, find_repo
    from profilekit.vllm.versions import resolve_version

    if G.vllm_version is not None:
        return resolve_version(G.vllm_version, None)
    try:
        root = find_repo(None, G.repo)
    except UsageError:
        if G.repo is not None:
            raise
        return resolve_version(None, None)
    try:
        data = tomllib.loads((root / REPO_MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read {REPO_MARKER}: {exc}", hint="fix it, or pass --vllm-version X.Y.Z") from None
    section = data.get("vllm")
    configured = section.get("version") if isinstance(section, dict) else None
    return resolve_version(None, configured if isinstance(configured, str) else None)


@app.command()
@command
def flags(
    pattern: Annotated[
        str | None, typer.Argument(help="Substring (also searched in help text) or glob (*, ?, [..]) of option names.")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> int:
    """Search the flag catalogue of the targeted vLLM release offline (exit 1 when nothing matches)."""
    from profilekit.errors import UsageError
    from profilekit.vllm.catalogue import load_catalogue
    from profilekit.vllm.flagsearch import as_json, as_text, search

    _check_format(fmt, ("text", "json"))
    version = _flags_version()
    catalogue = load_catalogue(version)
    if catalogue is None:
        raise UsageError(f"this build of profilekit ships no flag catalogue for vLLM {version}")
    found = search(catalogue, pattern)
    if fmt == "json":
        out(as_json(catalogue, found, pattern))
    elif found:
        out(as_text(found))
    if not found:
        close = catalogue.suggest(pattern or "")
        hint = f"; did you mean {close!r}?" if close else ""
        err(f"no option of vLLM {version} matches {pattern!r}{hint}")
        return EXIT_FINDINGS
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `profilekit` command and `python -m profilekit`."""
    try:
        app(args=argv, prog_name="profilekit", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return EXIT_OK
