"""Text and JSON forms of the upgrade impact (`diff STACK --to-release`, `lint --to-release`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from profilekit.diff.report import line_json, line_text

if TYPE_CHECKING:
    from profilekit.redact import Redactor
    from profilekit.upgrade.facts import Impact
    from profilekit.upgrade.impact import FindingChange, RoleUpgrade, Upgrade

_OPS = {"appears": "+", "disappears": "-"}


def impact_text(impact: Impact, redact: Redactor) -> list[str]:
    where = f"{impact.locations[0]}: " if impact.locations else ""
    lines = [f"    {where}{impact.kind} {impact.key}: {redact.text(impact.message)}"]
    lines += [f"        at {loc}" for loc in impact.locations[1:]]
    if impact.reason:
        lines.append(f"        reason: {impact.reason}")
    return lines


def change_text(change: FindingChange, redact: Redactor) -> list[str]:
    f = redact.finding(change.finding)
    where = f"{f.locations[0]}: " if f.locations else ""
    lines = [f"    {_OPS[change.change]} {where}{f.severity.value} {f.rule} {f.message}"]
    lines += [f"        at {loc}: {loc.key} (layer {loc.layer})" for loc in f.locations[1:]]
    if change.reason:
        lines.append(f"        reason: {change.reason}")
    return lines


def role_text(role: RoleUpgrade, redact: Redactor) -> list[str]:
    lines = [f"[{role.role}]" + ("" if role.presence == "both" else f" only with vLLM {role.presence}")]
    for title, impacts in (("options", role.options), ("defaults", role.defaults)):
        if impacts:
            lines.append(f"  {title}:")
            for impact in impacts:
                lines += impact_text(impact, redact)
    if role.findings:
        lines.append("  findings (+ appear, - disappear):")
        for change in role.findings:
            lines += change_text(change, redact)
    if role.command_line:
        lines += ["  command line:", *(line_text(line, env=False) for line in role.command_line)]
    return lines


def upgrade_text(report: Upgrade, redact: Redactor) -> str:
    lines = [f"{report.stack}: vLLM {report.old} -> {report.new}"]
    for role in report.changed:
        lines += role_text(role, redact)
    if report.findings:
        lines.append("[stack] findings (+ appear, - disappear):")
        for change in report.findings:
            lines += change_text(change, redact)
    lines.append(upgrade_summary([report]))
    return "\n".join(lines)


def upgrade_summary(reports: list[Upgrade]) -> str:
    """One line: how many options, defaults and findings change, or that nothing does."""
    roles = [r for report in reports for r in report.changed]
    changes = [c for report in reports for c in report.findings] + [c for r in roles for c in r.findings]
    counts = [
        (sum(len(r.options) for r in roles), "option", "options"),
        (sum(len(r.defaults) for r in roles), "default", "defaults"),
        (sum(c.change == "appears" for c in changes), "new finding", "new findings"),
        (sum(c.change == "disappears" for c in changes), "finding gone", "findings gone"),
        (sum(bool(r.command_line) for r in roles), "command line changed", "command lines changed"),
    ]
    if not roles and not changes:
        return "no impact"
    return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts)


# ---- JSON ---------------------------------------------------------------------------------------


def impact_json(impact: Impact, redact: Redactor) -> dict[str, Any]:
    data: dict[str, Any] = {
        "kind": impact.kind,
        "key": impact.key,
        "message": redact.text(impact.message),
        "locations": [loc.as_dict() for loc in impact.locations],
        "reason": impact.reason,
    }
    if impact.kind == "default-changed":
        data["from"], data["to"] = redact.value(impact.before), redact.value(impact.after)
    return data


def change_json(change: FindingChange, redact: Redactor) -> dict[str, Any]:
    return {"change": change.change, **redact.finding(change.finding).as_dict(), "reason": change.reason}


def upgrade_json(report: Upgrade, redact: Redactor) -> dict[str, Any]:
    return {
        "stack": report.stack,
        "from_release": report.old,
        "to_release": report.new,
        "equal": report.equal,
        "roles": [
            {
                "role": role.role,
                "in": role.presence,
                "options": [impact_json(i, redact) for i in role.options],
                "defaults": [impact_json(i, redact) for i in role.defaults],
                "findings": [change_json(c, redact) for c in role.findings],
                "command_line": [redact.value(line_json(line, env=False)) for line in role.command_line],
            }
            for role in report.changed
        ],
        "findings": [change_json(c, redact) for c in report.findings],
    }
