"""`profilekit set` and `unset`: edit one key of a layer file, keeping its comments and layout."""

from __future__ import annotations

from typing import Annotated

import typer

from profilekit.cli.app import app, command
from profilekit.cli.candidates import complete_layer, complete_set_key, complete_stack, complete_unset_key

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
    from profilekit.cli.commands import editing as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.set_value(layer=layer, key=key, value=value, check=check)


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
    from profilekit.cli.commands import editing as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.unset_value(layer=layer, key=key, check=check)
