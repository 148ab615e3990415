"""`profilekit import`: an existing `vllm serve` launch becomes a layer file."""

from __future__ import annotations

from typing import Annotated

import typer

from profilekit.cli.app import app, command


@app.command("import")
@command
def import_launch(
    launch: Annotated[
        list[str] | None,
        typer.Argument(
            help="A launch after --: `-- [VAR=value ...] vllm serve MODEL ...`; or a bash script, a Kubernetes "
            "manifest, a docker compose file or a systemd unit; or several scripts, each a role."
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Layer name (default: from the model), written to profiles/NAME.toml.")
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option("--role", help="NAME=FILE: import FILE as role NAME (repeat for each role of a P/D set)."),
    ] = None,
) -> int:
    """Turn an existing vllm serve launch into a layer file (VAR=value and export lines become [env])."""
    from profilekit.cli.commands import importing as body  # noqa: PLC0415 - imported when the command runs, not for --help

    return body.import_launch(launch=launch, name=name, roles=role)
