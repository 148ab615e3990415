"""`profilekit import`: an existing `vllm serve` launch becomes a layer file."""

from __future__ import annotations

from pathlib import Path

from profilekit.cli.common import err, open_session, out
from profilekit.errors import EXIT_OK, UsageError
from profilekit.importing.launch import import_launch as read_launch
from profilekit.importing.launch import write_layer


def import_launch(*, launch: list[str] | None = None, name: str | None = None) -> int:
    """`profilekit import`, as cli/parsers/importing.py declares it."""
    session = open_session()
    catalogue = session.catalogue
    if catalogue is None:
        raise UsageError(f"this build of profilekit ships no flag catalogue for vLLM {session.version}")
    imported = read_launch(session.root, list(launch or []), name=name, catalogue=catalogue, cwd=Path.cwd())
    for note in imported.notes:
        err(f"note: {note}")
    write_layer(session.root, imported)
    out(imported.path.as_posix())  # relative to the repository root, like every file profilekit names
    return EXIT_OK
