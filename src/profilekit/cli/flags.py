"""`profilekit flags`: search the flag catalogue of the targeted release, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from profilekit.cli.app import G, app, check_format, command, err, out
from profilekit.errors import EXIT_FINDINGS, EXIT_OK


def _flags_version() -> str:
    return target_release(G.repo, G.vllm_version)


def target_release(repo: Path | None, vllm_version: str | None) -> str:
    """The target release without loading the repository's layers (and without pydantic): `--vllm-version`,
    else `[vllm] version` of the repository found (`--repo`, or upwards), else the default release."""
    import tomllib

    from profilekit.errors import UsageError
    from profilekit.layers import REPO_MARKER, find_repo
    from profilekit.vllm.versions import resolve_version

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


# `flags -O` searches for vLLM's -O short form instead of failing as an unknown option of `flags`
@app.command(context_settings={"ignore_unknown_options": True})
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

    check_format(fmt, ("text", "json"))
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
