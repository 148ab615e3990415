"""`profilekit flags`: search the flag catalogue of the targeted release, offline."""

from __future__ import annotations

from profilekit.cli.common import check_format, err, out, release_without_layers
from profilekit.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from profilekit.vllm.catalogue import load_catalogue
from profilekit.vllm.flagsearch import as_json, as_text, search


def flags(*, pattern: str | None = None, fmt: str = "text") -> int:
    """`profilekit flags`, as cli/parsers/flags.py declares it."""
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
