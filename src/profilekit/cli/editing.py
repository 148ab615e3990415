"""`profilekit set` and `unset`: edit one key of a layer file, keeping its comments and layout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from profilekit.cli.app import app, command, err, open_session, out, print_findings
from profilekit.cli.completion import complete_layer, complete_set_key, complete_stack, complete_unset_key
from profilekit.errors import EXIT_FINDINGS, EXIT_OK

CHECK_HELP = "Also compose and check this stack with the edit; refuse it if it brings an error (repeatable)."


# the arguments `set` and `unset` share
LayerArgument = Annotated[
    str,
    typer.Argument(help="The layer to edit: its name or its file.", show_default=False, autocompletion=complete_layer),
]
CheckOption = Annotated[
    list[str] | None, typer.Option("--check", metavar="STACK", help=CHECK_HELP, autocompletion=complete_stack)
]


@app.command("set")
@command
def set_value(
    layer: LayerArgument,
    key: Annotated[
        str,
        typer.Argument(
            help="A TOML key: serve.max_num_seqs, roles.prefill.serve.port, env.X", autocompletion=complete_set_key
        ),
    ],
    value: Annotated[str, typer.Argument(help="A TOML value (64, 32.5, true, [1, 2]); a bare word is a string.")],
    check: CheckOption = None,
) -> int:
    """Set KEY in a layer file to VALUE; comments, order and layout stay as they are. Checked before it is written."""
    from profilekit.edit.keys import parse_key, parse_value, set_key

    path = parse_key(key)
    parsed = parse_value(value)
    return _edit(layer, key, lambda text: set_key(text, path, parsed), check or [], "set")


@app.command("unset")
@command
def unset_value(
    layer: LayerArgument,
    key: Annotated[
        str,
        typer.Argument(help="A TOML key written in that file.", show_default=False, autocompletion=complete_unset_key),
    ],
    check: CheckOption = None,
) -> int:
    """Delete KEY from a layer file (not `[layer] unset`, which removes values of the layers below)."""
    from profilekit.edit.keys import parse_key, unset_key

    path = parse_key(key)
    return _edit(layer, key, lambda text: unset_key(text, path), check or [], "unset")


def _edit(layer: str, key: str, change: Callable[[str], str], stacks: list[str], verb: str) -> int:
    from profilekit.edit.keys import edit_layer, write_layer_text

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
