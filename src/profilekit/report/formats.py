"""Findings as text, JSON, GitHub workflow commands or SARIF 2.1.0 (Markdown: profilekit.report.markdown)."""

from __future__ import annotations

import json
from typing import Any

from profilekit import __version__
from profilekit.errors import Finding, Ignored, Location, Severity, count

FORMATS = ("text", "json", "github", "sarif", "markdown")


def plural(n: int, word: str) -> str:
    """`1 error`, `2 errors`."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_line(findings: list[Finding], ignored: int = 0) -> str:
    """`1 error, 2 warnings`, and `, 3 ignored` when a rule selection left warnings out."""
    errors, warnings = count(findings)
    return f"{plural(errors, 'error')}, {plural(warnings, 'warning')}" + (f", {ignored} ignored" if ignored else "")


def ignored_by_rule(ignored: list[Ignored]) -> dict[str, int]:
    """How many warnings of each rule a selection left out, by rule id."""
    counts: dict[str, int] = {}
    for item in sorted(ignored, key=lambda item: item.finding.rule):
        counts[item.finding.rule] = counts.get(item.finding.rule, 0) + 1
    return counts


def format_text(findings: list[Finding]) -> str:
    lines: list[str] = []
    for f in findings:
        head = str(f.locations[0]) if f.locations else (f.stack or "profilekit")
        lines.append(f"{head}: {f.severity.value} {f.rule} {f.message}")
        context = []
        if f.stack is not None:
            context.append(f"stack {f.stack}")
        if f.role is not None:
            context.append(f"role {f.role}")
        if context and f.locations:
            lines.append(f"    in {', '.join(context)}")
        for loc in f.locations[1:]:
            where = f" {loc.key}" if loc.key else ""
            layer = f" (layer {loc.layer})" if loc.layer else ""
            lines.append(f"    {loc}:{where}{layer}")
        lines.extend(f"    {note}" for note in f.notes)
        if f.fix:
            lines.append(f"    fix: {f.fix}")
    return "\n".join(lines)


def format_json(findings: list[Finding], *, version: str, ignored: list[Ignored] | None = None) -> str:
    errors, warnings = count(findings)
    left_out = ignored or []
    data = {
        "vllm_version": version,
        "findings": [f.as_dict() for f in findings],
        "summary": {
            "errors": errors,
            "warnings": warnings,
            "ignored": len(left_out),
            "ignored_by_rule": ignored_by_rule(left_out),
        },
    }
    return json.dumps(data, indent=2, ensure_ascii=False)


def _gh_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def _annotated(f: Finding) -> Location | None:
    """The location an annotation is shown at: the first in this repository (a source's file is not here)."""
    return next((loc for loc in f.locations if loc.in_source() is None), None)


def _annotation_text(f: Finding, shown: Location | None) -> str:
    """What an annotation says on its own, shown at one line of one file: the message, the stack and role,
    every other location that took part, the notes and the fix, one per line."""
    lines = [f.message]
    context = [f"{what} {name}" for what, name in (("stack", f.stack), ("role", f.role)) if name is not None]
    if context:
        lines.append("in " + ", ".join(context))
    for loc in f.locations:
        if loc is shown:
            continue
        where = f" {loc.key}" if loc.key else ""
        layer = f" (layer {loc.layer})" if loc.layer else ""
        lines.append(f"also {loc}:{where}{layer}")
    lines.extend(f.notes)
    if f.fix:
        lines.append(f"fix: {f.fix}")
    return "\n".join(lines)


def format_github(findings: list[Finding]) -> str:
    """GitHub Actions workflow commands: one `::error file=..,line=..,col=..::` per finding."""
    lines = []
    for f in findings:
        level = "error" if f.severity is Severity.ERROR else "warning"
        props = [f"title={_gh_escape(f.rule, prop=True)}"]
        loc = _annotated(f)
        if loc is not None:
            props = [f"file={_gh_escape(loc.file, prop=True)}", f"line={loc.line}", f"col={loc.column}", *props]
        lines.append(f"::{level} {','.join(props)}::{_gh_escape(_annotation_text(f, loc))}")
    return "\n".join(lines)


def _artifact(loc: Location, bases: dict[str, Any]) -> dict[str, Any]:
    """A file of this repository is relative to %SRCROOT%; a source's file to a base of its own, which names the
    source and commit (`platform@3f2a9c1:profiles/base.toml` is no URI reference: its first part holds a ':')."""
    found = loc.in_source()
    if found is None:
        return {"uri": loc.file, "uriBaseId": "%SRCROOT%"}
    label, path = found
    base = "SOURCE_" + label.replace("@", "_")
    bases[base] = {"description": {"text": f"source {label.replace('@', ' at commit ')} (profilekit.lock)"}}
    return {"uri": path, "uriBaseId": base}


def _local_first(f: Finding) -> list[Location]:
    """The finding's locations, the first of this repository first: code scanning shows a result at a file here."""
    shown = _annotated(f)
    return f.locations if shown is None else [shown, *(loc for loc in f.locations if loc is not shown)]


def _suppression(item: Ignored) -> dict[str, Any]:
    """A SARIF suppression: `inSource` for a layer's `[layer] ignore` (with its reason), else `external`."""
    if item.reason:
        return {"kind": "inSource", "justification": f"{item.by}: {item.reason}"}
    return {"kind": "external", "justification": item.by}


def format_sarif(findings: list[Finding], ignored: list[Ignored] | None = None) -> str:
    """SARIF 2.1.0; the warnings a rule selection left out are results with a suppression."""
    rules: dict[str, dict[str, Any]] = {}
    results = []
    bases: dict[str, Any] = {}
    suppressed = {id(item.finding): item for item in ignored or []}
    for f in [*findings, *(item.finding for item in ignored or [])]:
        rules.setdefault(f.rule, {"id": f.rule, "name": f.rule, "shortDescription": {"text": f.rule}})
        locations = [
            {
                "physicalLocation": {
                    "artifactLocation": _artifact(loc, bases),
                    "region": {"startLine": loc.line, "startColumn": loc.column},
                },
                **({"logicalLocations": [{"fullyQualifiedName": loc.key}]} if loc.key else {}),
            }
            for loc in _local_first(f)
        ]
        result: dict[str, Any] = {
            "ruleId": f.rule,
            "level": "error" if f.severity is Severity.ERROR else "warning",
            "message": {"text": f.message + (f"\nfix: {f.fix}" if f.fix else "")},
            "locations": locations[:1],
        }
        if len(locations) > 1:
            result["relatedLocations"] = [{"id": i, **loc} for i, loc in enumerate(locations[1:], 1)]
        props = {k: v for k, v in (("stack", f.stack), ("role", f.role)) if v is not None}
        if props:
            result["properties"] = props
        if id(f) in suppressed:
            result["suppressions"] = [_suppression(suppressed[id(f)])]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "profilekit",
                        "version": __version__,
                        "informationUri": "https://github.com/profilekit/profilekit",
                        "rules": list(rules.values()),
                    }
                },
                "results": results,
                **({"originalUriBaseIds": bases} if bases else {}),
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)
