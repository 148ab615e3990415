"""`profilekit list`: the layers of the repository."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from profilekit.cli.common import check_format, open_session, out, print_findings
from profilekit.compose.linearise import linearise
from profilekit.compose.names import reference_findings
from profilekit.errors import EXIT_FINDINGS, EXIT_OK, Finding
from profilekit.rules.options import layer_option_findings
from profilekit.session import distinct

if TYPE_CHECKING:
    from profilekit.load.layers import Layer
    from profilekit.session import Session


def _file_problems(session: Session, layer: Layer) -> list[Finding]:
    """What is wrong inside one layer file, as `lint` reports it before composing anything: names that match
    no layer and `serve` keys the target release does not have (the rules are lint's)."""
    problems = reference_findings(session.layers, layer)
    if session.catalogue is not None:
        problems += layer_option_findings(layer, session.catalogue)
    return problems


_EXTENDS_RULES = ("extends-cycle", "unknown-layer")


def list_layers(*, fmt: str) -> int:
    """List the layers with description, group, extends and abstract; exit 1 when a file has errors."""
    check_format(fmt, ("text", "json"))
    session = open_session()
    rows: list[dict[str, Any]] = []
    problems: list[Finding] = list(session.config_findings)

    # one walk over every layer's `extends`, linear in the repository: each cycle and each unknown name is
    # reported once. Walking each layer's own would be quadratic in a long chain, and would report an n-layer
    # cycle n times (5,000 layers: 80 s and 1.4 MB of findings).
    _order, found = linearise(session.layers, list(session.layers.files))
    problems += [f for f in found if f.rule in _EXTENDS_RULES]  # a file's own problems are added below
    for name in session.layers.files:
        layer, findings = session.layers.get(name)
        problems += findings
        if layer is None:
            continue
        problems += _file_problems(session, layer)
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
    problems = distinct(problems)
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
            print_findings(problems)
    return EXIT_FINDINGS if any(f.is_error for f in problems) else EXIT_OK
