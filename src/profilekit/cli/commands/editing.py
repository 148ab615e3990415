"""`profilekit set` and `unset`: edit one key of a layer file, keeping its comments and layout."""

from __future__ import annotations

from collections.abc import Callable

from profilekit.cli.common import err, open_session, out, print_findings
from profilekit.edit.keys import edit_layer, key_argument, parse_value, set_key, unset_key, write_layer_text
from profilekit.errors import EXIT_FINDINGS, EXIT_OK


def set_value(*, layer: str, key: str, value: str, check: list[str] | None = None) -> int:
    """`profilekit set`, as cli/parsers/editing.py declares it."""
    path = key_argument(key)
    parsed = parse_value(value)
    return _edit(layer, key, lambda text: set_key(text, path, parsed), check or [], "set")


def unset_value(*, layer: str, key: str, check: list[str] | None = None) -> int:
    """`profilekit unset`, as cli/parsers/editing.py declares it."""
    path = key_argument(key)
    return _edit(layer, key, lambda text: unset_key(text, path), check or [], "unset")


def _edit(layer: str, key: str, change: Callable[[str], str], stacks: list[str], verb: str) -> int:
    session = open_session()
    path, text, errors = edit_layer(session, layer, change, stacks=stacks)
    shown = path.relative_to(session.root).as_posix()
    if errors:
        print_findings(errors)
        err(f"nothing written: the {verb} of {key} would bring {len(errors)} error(s) to {shown}")
        return EXIT_FINDINGS
    write_layer_text(path, text)
    out(f"{shown}: {verb} {key}")
    return EXIT_OK
