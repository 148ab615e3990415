"""`profilekit import`: an existing `vllm serve` launch becomes a layer file, then is checked as `check` would."""

from __future__ import annotations

from pathlib import Path

from profilekit.cli.common import err, open_session, out, redactor
from profilekit.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from profilekit.importing.launch import import_launch as read_launch
from profilekit.importing.launch import write_layer


def import_launch(*, launch: list[str] | None = None, name: str | None = None, roles: list[str] | None = None) -> int:
    """`profilekit import`, as cli/parsers/importing.py declares it.

    The layer is written, then its stack checked for the targeted release: the findings are printed, and when
    one is an error (vLLM would refuse the launch) the command exits 1, saying so; the layer stays written, since
    it is what runs today."""
    session = open_session()
    catalogue = session.catalogue
    if catalogue is None:
        raise UsageError(f"this build of profilekit ships no flag catalogue for vLLM {session.version}")
    imported = read_launch(
        session.root, list(launch or []), name=name, catalogue=catalogue, cwd=Path.cwd(), roles=list(roles or [])
    )
    for note in imported.notes:
        err(f"note: {note}")
    write_layer(session.root, imported)
    out(imported.path.as_posix())  # relative to the repository root, like every file profilekit names
    return _checked(imported.name, own_hosts=imported.own_hosts)


def _checked(name: str, *, own_hosts: bool) -> int:
    """The new layer's findings, as `profilekit check NAME` shows them (the repository's rule selection applied);
    roles imported from containers each have a host of their own: what holds only on one host does not apply."""
    from profilekit.report.formats import format_text  # noqa: PLC0415 - only an import with findings prints them
    from profilekit.rules.host import one_host_only  # noqa: PLC0415 - as format_text

    session = open_session()  # again: the repository now has the layer
    chosen, _problems = session.selection()
    found = [f for f in session.check(session.stack(name)) if not (own_hosts and one_host_only(f))]
    report = session.report(found, chosen)
    if report.findings:
        err(format_text(redactor().findings(report.findings)))
    errors = sum(1 for finding in report.findings if finding.is_error)
    if not errors:
        return EXIT_OK
    err(
        f"the imported launch would not start on vLLM {session.version}: {errors} error"
        f"{'s' if errors > 1 else ''} above; the layer is written as it runs today: fix it with `profilekit check "
        f"{name}`"
    )
    return EXIT_FINDINGS
