"""Findings as GitHub-flavoured Markdown, for `$GITHUB_STEP_SUMMARY` and pull-request comments.

A summary line, the findings grouped by file (a table per file: line, severity, rule, message, fix), and
for `lint` the compatibility matrix of the deployable layers.

Everything a user wrote (messages quote values, file and layer names come from the repository) is escaped:
HTML is turned into entities, Markdown punctuation is backslash-escaped, `|` cannot end a table cell,
`@name` cannot mention anyone, and a line break cannot end a table row. Secrets are redacted by the caller
*before* formatting (escaping would otherwise hide a secret's spelling from the redactor).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from profilekit.errors import Finding, Location, Severity, count
from profilekit.report.formats import plural

if TYPE_CHECKING:
    from profilekit.lint.repository import LintReport, Pair

# more deployable layers than this and the square matrix would be unreadable: the pairs become a list
MATRIX_MAX = 12

# what can start markup in the middle of a line (user text never starts one: line breaks become spaces):
# escapes, code spans, emphasis, links and images, table cells, strikethrough, and GitHub's $math$
_PUNCTUATION = re.compile(r"([\\`*_\[\]|~$])")
_MENTION = "@&#8203;"  # a zero-width space after @: GitHub does not turn `@team` into a notification
_ICON = {Severity.ERROR: "❌", Severity.WARNING: "⚠️"}


def text(value: str) -> str:
    """User text as Markdown that renders as exactly that text, on one line, safe inside a table cell."""
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = _PUNCTUATION.sub(r"\\\1", value)
    value = value.replace("@", _MENTION)
    return re.sub(r"\s*[\r\n]+\s*", " ", value)


def code(value: str, *, cell: bool = True) -> str:
    """User text as an inline code span; in a table `cell`, a `|` is escaped even inside it, as GFM asks."""
    value = re.sub(r"\s*[\r\n]+\s*", " ", value)
    if cell and "\\" in value:  # GFM reads `\\|` in a cell as an escaped backslash and a cell border
        return f"<code>{text(value)}</code>"
    if cell:
        value = value.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def _counts(findings: list[Finding]) -> str:
    errors, warnings = count(findings)
    return f"{plural(errors, 'error')}, {plural(warnings, 'warning')}"


def _where(loc: Location) -> str:
    place = code(f"{loc.file}:{loc.line}")
    details = [code(loc.key)] if loc.key else []
    if loc.layer:
        details.append(f"layer {code(loc.layer)}")
    return place + (f" ({', '.join(details)})" if details else "")


def _message_cell(f: Finding) -> str:
    parts = [text(f.message)]
    context = []
    if f.stack is not None:
        context.append(f"stack {code(f.stack)}")
    if f.role is not None:
        context.append(f"role {code(f.role)}")
    if context:
        parts.append("in " + ", ".join(context))
    parts.extend(f"also {_where(loc)}" for loc in f.locations[1:])
    parts.extend(text(note) for note in f.notes)
    return "<br>".join(parts)


def _findings_by_file(findings: list[Finding]) -> list[str]:
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.locations[0].file if f.locations else "", []).append(f)
    lines: list[str] = []
    for file, group in groups.items():
        title = code(file, cell=False) if file else "Not in a file"
        lines += ["", f"#### {title} — {_counts(group)}", ""]
        lines += ["| line | severity | rule | message | fix |", "| ---: | --- | --- | --- | --- |"]
        for f in group:
            line = str(f.locations[0].line) if f.locations else ""
            severity = f"{_ICON[f.severity]} {f.severity.value}"
            lines.append(f"| {line} | {severity} | {code(f.rule)} | {_message_cell(f)} | {text(f.fix)} |")
    return lines


def _ignored(n: int) -> str:
    """`; 3 ignored` after a summary, when a rule selection left warnings out."""
    return f"; {n} ignored" if n else ""


def format_check(findings: list[Finding], *, stack: str, version: str, ignored: int = 0) -> str:
    """`profilekit check STACK --format markdown`."""
    target = f" (vLLM {version})" if version else ""
    if not findings:
        head = f"✅ {code(stack, cell=False)}: **no problems found**{target}"
    else:
        icon = "❌" if count(findings)[0] else "⚠️"
        head = f"{icon} {code(stack, cell=False)}: **{_counts(findings)}**{target}"
    return "\n".join(["### profilekit check", "", head + _ignored(ignored), *_findings_by_file(findings), ""])


def format_lint(report: LintReport | None, findings: list[Finding], *, version: str) -> str:
    """`profilekit lint --format markdown`: the summary, the findings by file, the compatibility matrix.

    `report` is None when the repository could not be opened (a broken profilekit.toml): only its findings.
    """
    target = f" (vLLM {version})" if version else ""
    scope = ""
    if report is not None:
        scope = f"{plural(report.files, 'file')}, {plural(len(report.stacks), 'stack')}"
        if report.combinations:
            scope += f", {plural(report.combinations, 'combination')}"
        scope += " checked"
    if not findings:
        head = f"✅ **no problems found**: {scope}{target}"
    else:
        icon = "❌" if count(findings)[0] else "⚠️"
        head = f"{icon} **{_counts(findings)}**" + (f": {scope}" if scope else "") + target
    lines = ["### profilekit lint", "", head + _ignored(len(report.ignored) if report is not None else 0)]
    if findings:
        lines += ["", "<details open><summary>Findings by file</summary>", *_findings_by_file(findings)]
        lines += ["", "</details>"]
    if report is not None:
        lines += _compatibility(report)
    return "\n".join([*lines, ""])


# ---- the compatibility matrix -------------------------------------------------------------------

_LEGEND = (
    "✅ composes · 🔒 declared exclusive (same `group`, or a `conflicts` entry) · "
    "⚠️ breaks a rule together and is not declared: declare it · 💥 a member does not load"
)


def _reason(reason: str) -> str:
    """`group model` -> group `model`; `conflicts @kv-connector` -> conflicts `@kv-connector`."""
    word, _, what = reason.partition(" ")
    return f"{text(word)} {code(what)}" if what else text(word)


def _cell(pair: Pair) -> str:
    if pair.kind == "composes":
        return "✅"
    if pair.kind == "exclusive":
        return ("🔒 " + ", ".join(_reason(reason) for reason in pair.reasons)).rstrip()
    if pair.kind == "undeclared":
        return "⚠️ " + ", ".join(code(rule) for rule in pair.reasons)
    return "💥"


def _compatibility(report: LintReport) -> list[str]:
    names = report.deployable
    lines = ["", "#### Layer compatibility", ""]
    if len(names) < 2:
        return [*lines, f"{plural(len(names), 'deployable layer')}: no pairs to compose."]
    if not report.pairs and not report.broken:
        return [
            *lines,
            f"Pairs of the {len(names)} deployable layers were not checked (combinations = "
            f"{code(report.mode)}; run `profilekit lint --combinations pairs`).",
        ]
    kinds = [pair.kind for _names, pair in report.every_pair()]
    tally = [
        f"{kinds.count('composes')} compose",
        f"{kinds.count('exclusive')} declared exclusive",
        plural(kinds.count("undeclared"), "undeclared conflict"),
    ]
    if "broken" in kinds:
        tally.append(f"{kinds.count('broken')} cannot be composed")
    lines += [
        f"{plural(len(names), 'deployable layer')}, {plural(len(kinds), 'pair')}: {', '.join(tally)}.",
        "",
        _LEGEND,
        "",
    ]
    if len(names) <= MATRIX_MAX:
        return lines + _square(report)
    return lines + _pair_list(report)


def _square(report: LintReport) -> list[str]:
    names = report.deployable
    rows = [
        "| | " + " | ".join(code(n) for n in names) + " |",
        "| --- |" + " :---: |" * len(names),
    ]
    for a in names:
        cells = []
        for b in names:
            pair = report.pair(a, b)
            cells.append("—" if a == b else _cell(pair) if pair is not None else "")
        rows.append(f"| {code(a)} | " + " | ".join(cells) + " |")
    return rows


def _pair_list(report: LintReport) -> list[str]:
    """Too many layers for a square: every pair that does not simply compose, worst first."""
    order = {"undeclared": 0, "broken": 1, "exclusive": 2}
    odd = sorted(
        ((a, b, p) for (a, b), p in report.every_pair() if p.kind != "composes"),
        key=lambda item: (order[item[2].kind], item[0], item[1]),
    )
    rows = ["| layer | layer | outcome |", "| --- | --- | --- |"]
    rows += [f"| {code(a)} | {code(b)} | {_cell(p)} |" for a, b, p in odd]
    if not odd:
        rows = ["Every pair composes."]
    return ["<details><summary>Pairs that do not simply compose</summary>", "", *rows, "", "</details>"]
