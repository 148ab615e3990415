"""`profilekit flags`: search the flag catalogue of the targeted release, offline."""

from __future__ import annotations

from typing import Annotated

import typer

from profilekit.cli.app import app, check_format, command, err, out, release_without_layers
from profilekit.errors import EXIT_FINDINGS, EXIT_OK


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
    version = release_without_layers()
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
