"""Findings as text, JSON, GitHub workflow commands or SARIF 2.1.0 (Markdown: profilekit.report.markdown)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any
from urllib.parse import quote

from profilekit import __version__
from profilekit.errors import Finding, Ignored, Location, Severity, count

FORMATS = ("text", "json", "github", "sarif", "markdown")
# the project's home, as pyproject.toml's [project.urls] Homepage says (tests/test_sarif.py holds the two equal);
# a rule's help link is its section of docs/RULES.md there, at the tag of this release
PROJECT_URL = "https://github.com/profilekit/profilekit"
RULES_DOC = "docs/RULES.md"
# the partialFingerprints entry of a SARIF result: rule, file and key, so that it survives lines moving
FINGERPRINT = "ruleFileKey/v1"


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


def _where(loc: Location, prefix: str) -> str:
    """`file:line:col` as CI shows it: a file of this repository below `prefix` (its folder in the git work tree),
    a source's file as `platform@3f2a9c1:path`."""
    return str(loc) if loc.in_source() is not None else f"{prefix}{loc}"


def _label(stacks: list[str], roles: list[str]) -> str:
    """`stack a, role serve`; `stacks a, b; roles prefill, decode`; empty when there is neither."""
    parts = [
        f"{what}{'s' if len(names) > 1 else ''} {', '.join(names)}"
        for what, names in (("stack", stacks), ("role", roles))
        if names
    ]
    return ("; " if any(len(names) > 1 for names in (stacks, roles)) else ", ").join(parts)


def _context(stacks: list[str], roles: list[str]) -> str:
    """`in stack a, role serve`: the line that says where a finding was found; empty when nowhere in particular."""
    label = _label(stacks, roles)
    return f"in {label}" if label else ""


def _own(f: Finding) -> tuple[list[str], list[str]]:
    """The stack and the role of one finding, as lists."""
    return ([f.stack] if f.stack is not None else []), ([f.role] if f.role is not None else [])


def _annotation_text(f: Finding, shown: Location | None, prefix: str) -> str:
    """What an annotation says on its own, shown at one line of one file: the message, the stack and role,
    every other location that took part, the notes and the fix, one per line."""
    lines = [f.message]
    context = _context(*_own(f))
    if context:
        lines.append(context)
    for loc in f.locations:
        if loc is shown:
            continue
        where = f" {loc.key}" if loc.key else ""
        layer = f" (layer {loc.layer})" if loc.layer else ""
        lines.append(f"also {_where(loc, prefix)}:{where}{layer}")
    lines.extend(f.notes)
    if f.fix:
        lines.append(f"fix: {f.fix}")
    return "\n".join(lines)


def format_github(findings: list[Finding], *, prefix: str = "") -> str:
    """GitHub Actions workflow commands: one `::error file=..,line=..,col=..::` per finding, the file relative to
    the git work tree (`prefix`: the profile repository's folder in it, e.g. `deploy/`)."""
    lines = []
    for f in findings:
        level = "error" if f.severity is Severity.ERROR else "warning"
        props = [f"title={_gh_escape(f.rule, prop=True)}"]
        loc = _annotated(f)
        if loc is not None:
            file = _gh_escape(prefix + loc.file, prop=True)
            props = [f"file={file}", f"line={loc.line}", f"col={loc.column}", *props]
        lines.append(f"::{level} {','.join(props)}::{_gh_escape(_annotation_text(f, loc, prefix))}")
    return "\n".join(lines)


# ---- SARIF ----------------------------------------------------------------------------------------


def heading_anchor(title: str) -> str:
    """The anchor GitHub gives a Markdown heading: its text lowercased, every character but letters, digits, `_`,
    `-` and spaces dropped, spaces as hyphens (`## ReplaySSM (`rules/replayssm.py`)` -> `replayssm-rulesreplayssmpy`)."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in "_- ")
    return kept.replace(" ", "-")


def rules_doc_url(anchor: str = "") -> str:
    """docs/RULES.md of this release (its tag, `v0.1.0`), at `anchor`."""
    return f"{PROJECT_URL}/blob/v{__version__}/{RULES_DOC}" + (f"#{anchor}" if anchor else "")


_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def rule_descriptor(rule_id: str) -> dict[str, Any]:
    """A `reportingDescriptor` of `tool.driver.rules`: what RULES.md says of the rule, and a link to its section."""
    # the registry of every rule, for its summary: only --format sarif describes rules
    from profilekit.rules import RULES  # noqa: PLC0415 - the rule modules, which `check` and `lint` have loaded
    from profilekit.rules.documented import OTHER_SECTION, documented  # noqa: PLC0415 - as RULES: only --format sarif

    doc = documented(rule_id, RULES)
    if doc is None:  # an id RULES.md does not list: its top, and no more than the id
        return {
            "id": rule_id,
            "name": rule_id,
            "shortDescription": {"text": rule_id},
            "fullDescription": {"text": f"{rule_id} (see {RULES_DOC})"},
            "helpUri": rules_doc_url(),
        }
    summary = _LINK.sub(r"\1", doc.summary)
    made = f"made by {doc.source}" if doc.section == OTHER_SECTION else f"vLLM source: {doc.source}"
    full = (
        f"{summary}. Severity: {doc.severity}; vLLM releases: {doc.releases}; {made}. "
        f'Listed in {RULES_DOC}, section "{doc.section.replace("`", "")}".'
    )
    url = rules_doc_url(heading_anchor(doc.section))
    return {
        "id": doc.id,
        "name": doc.id,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": full},
        "helpUri": url,
        "help": {"text": f"{full}\n{url}"},
        "defaultConfiguration": {"level": "error" if doc.severity == "error" else "warning"},
    }


def _artifact(loc: Location, bases: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A file of this repository is relative to %SRCROOT% (the git work tree: `prefix` is the profile repository's
    folder in it); a source's file to a base of its own, which names the source and commit
    (`platform@3f2a9c1:profiles/base.toml` is no URI reference: its first part holds a ':'). Percent-encoded, as a
    URI is: `profiles/my%20layer.toml`."""
    found = loc.in_source()
    if found is None:
        return {"uri": quote(prefix + loc.file, safe="/"), "uriBaseId": "%SRCROOT%"}
    label, path = found
    base = "SOURCE_" + label.replace("@", "_")
    bases[base] = {"description": {"text": f"source {label.replace('@', ' at commit ')} (profilekit.lock)"}}
    return {"uri": quote(path, safe="/"), "uriBaseId": base}


def _local_first(f: Finding) -> list[Location]:
    """The finding's locations, the first of this repository first: code scanning shows a result at a file here."""
    shown = _annotated(f)
    return f.locations if shown is None else [shown, *(loc for loc in f.locations if loc is not shown)]


def _distinct(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


class _Merged:
    """The findings of one rule at one location (one per stack and role that reaches it): one SARIF result."""

    def __init__(self, first: Finding) -> None:
        self.rule = first.rule
        self.findings = [first]
        self.shown: Location | None = None  # where the result is shown: its first location, once made

    def locations(self) -> list[Location]:
        """The primary location, then every other location of every finding, each once."""
        seen: dict[Location, None] = {}
        for f in self.findings:
            seen.update(dict.fromkeys(_local_first(f)))
        return list(seen)

    def result(self, bases: dict[str, Any], prefix: str, index: int) -> dict[str, Any]:
        fs = self.findings
        stacks = _distinct([f.stack for f in fs if f.stack is not None])
        roles = _distinct([f.role for f in fs if f.role is not None])
        lines = _distinct([f.message for f in fs])
        if len(lines) > 1:  # each message says where it was found: `role decode: ...`, `role prefill: ...`
            lines = _distinct([f"{_label(*_own(f))}: {f.message}" if _label(*_own(f)) else f.message for f in fs])
        context = _context(stacks, roles)
        if context:
            lines.append(context)
        lines += _distinct([note for f in fs for note in f.notes])
        lines += [f"fix: {fix}" for fix in _distinct([f.fix for f in fs if f.fix])]
        # a location SARIF can hold: a file and a line (never the placeholder of a value written nowhere)
        valid = [loc for loc in self.locations() if loc.file and loc.line >= 1]
        self.shown = valid[0] if valid else None
        physical = [_physical(loc, bases, prefix) for loc in valid]
        result: dict[str, Any] = {
            "ruleId": self.rule,
            "ruleIndex": index,
            "level": "error" if any(f.is_error for f in fs) else "warning",
            "message": {"text": "\n".join(lines)},
            "locations": physical[:1],
        }
        if len(physical) > 1:
            result["relatedLocations"] = [{"id": i, **loc} for i, loc in enumerate(physical[1:], 1)]
        props = {key: names for key, names in (("stacks", stacks), ("roles", roles)) if names}
        if props:
            result["properties"] = props
        return result


def _physical(loc: Location, bases: dict[str, Any], prefix: str) -> dict[str, Any]:
    region = {"startLine": loc.line, **({"startColumn": loc.column} if loc.column >= 1 else {})}
    return {
        "physicalLocation": {"artifactLocation": _artifact(loc, bases, prefix), "region": region},
        **({"logicalLocations": [{"fullyQualifiedName": loc.key}]} if loc.key else {}),
    }


def _merged(findings: list[Finding]) -> list[_Merged]:
    """One group per rule and location, in the order of the findings; findings without a location in this
    repository or a source group by rule and message."""
    groups: dict[tuple[str, object], _Merged] = {}
    for f in findings:
        first = _local_first(f)
        where: object = (first[0].file, first[0].line, first[0].column) if first else f.message
        key = (f.rule, where)
        if key in groups:
            groups[key].findings.append(f)
        else:
            groups[key] = _Merged(f)
    return list(groups.values())


def _fingerprint(result: dict[str, Any], primary: Location | None, taken: set[str]) -> str:
    """Rule, file and key of the primary location (its line and column when it has no key): the same finding
    keeps it across runs and lines moving in its file. Made unique with the line when two would share it."""
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"] if result["locations"] else {}
    parts = [result["ruleId"], artifact.get("uriBaseId", ""), artifact.get("uri", "")]
    if primary is None:
        parts.append(result["message"]["text"])
    else:
        parts.append(primary.key or f"{primary.line}:{primary.column}")
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    if digest in taken and primary is not None:
        parts.append(f"{primary.line}:{primary.column}")
        digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    taken.add(digest)
    return digest


def _suppression(item: Ignored) -> dict[str, Any]:
    """A SARIF suppression: `inSource` for a layer's `[layer] ignore` (with its reason), else `external`."""
    if item.reason:
        return {"kind": "inSource", "justification": f"{item.by}: {item.reason}"}
    return {"kind": "external", "justification": item.by}


def format_sarif(findings: list[Finding], ignored: list[Ignored] | None = None, *, prefix: str = "") -> str:
    """SARIF 2.1.0 for code scanning: one result per rule and location (the stacks and roles that reach it as
    its properties), files relative to the git work tree (`prefix`: the profile repository's folder in it), each
    rule described with a link to its section of docs/RULES.md."""
    rules: dict[str, int] = {}
    descriptors: list[dict[str, Any]] = []
    results = []
    bases: dict[str, Any] = {}
    taken: set[str] = set()
    suppressed = {id(item.finding): item for item in ignored or []}
    # the warnings a rule selection left out are results of their own, with a suppression
    for group in [*_merged(findings), *_merged([item.finding for item in ignored or []])]:
        if group.rule not in rules:
            rules[group.rule] = len(descriptors)
            descriptors.append(rule_descriptor(group.rule))
        result = group.result(bases, prefix, rules[group.rule])
        result["partialFingerprints"] = {FINGERPRINT: _fingerprint(result, group.shown, taken)}
        left_out = suppressed.get(id(group.findings[0]))
        if left_out is not None:
            result["suppressions"] = [_suppression(left_out)]
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
                        "informationUri": PROJECT_URL,
                        "rules": descriptors,
                    }
                },
                "results": results,
                **({"originalUriBaseIds": bases} if bases else {}),
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)
