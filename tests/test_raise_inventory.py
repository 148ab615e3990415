"""docs/vllm-raises.json (tools/raise_inventory.py) names only registered rules and agrees with docs/vllm-raises.md.

Reads only the committed files: regenerating the inventory needs the vLLM sources, which tests never read.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from profilekit.rules import RULES
from profilekit.vllm.versions import SUPPORTED

DOCS = Path(__file__).resolve().parents[1] / "docs"
CLASSES = ["modelled", "to-model", "needs-config-json", "gpu-or-platform", "out-of-scope"]


def load() -> tuple[dict[str, Any], str]:
    return (
        json.loads((DOCS / "vllm-raises.json").read_text(encoding="utf-8")),
        (DOCS / "vllm-raises.md").read_text(encoding="utf-8"),
    )


def rule_problems(doc: dict[str, Any]) -> list[str]:
    """Rows whose `modelled:<id>` names no registered rule, or a rule that does not apply in the row's releases."""
    problems = []
    for row in doc["rows"]:
        kind, _, rule_id = row["class"].partition(":")
        if kind != "modelled":
            continue
        if rule_id not in RULES:
            problems.append(f"{row['id']}: no rule {rule_id!r}")
            continue
        outside = [v for v in row["releases"] if not RULES[rule_id].applies(v)]
        if outside:
            problems.append(f"{row['id']}: rule {rule_id!r} does not apply in {', '.join(outside)}")
    return problems


def markdown_counts(text: str) -> dict[str, dict[str, int]]:
    """The 'Counts per release' table of the markdown, as {release: {class: n, 'total': n}}."""
    section = text.split("## Counts per release", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    out = {}
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        out[cells[0]] = {name: int(value) for name, value in zip(header[1:], cells[1:], strict=True)}
    return out


def recount(doc: dict[str, Any]) -> dict[str, dict[str, int]]:
    out = {}
    for version in doc["releases"]:
        present = [row for row in doc["rows"] if version in row["releases"]]
        figures = {c: sum(1 for row in present if row["class"].split(":")[0] == c) for c in CLASSES}
        out[version] = figures | {"total": len(present)}
    return out


def test_every_modelled_row_names_a_rule_that_applies_in_its_releases() -> None:
    doc, _ = load()
    assert rule_problems(doc) == []
    assert any(row["class"] == "modelled:replayssm-kv-connector" for row in doc["rows"])


def test_a_renamed_rule_is_caught() -> None:
    doc, _ = load()
    stale = copy.deepcopy(doc)
    row = next(r for r in stale["rows"] if r["class"] == "modelled:kv-role-missing")
    row["class"] = "modelled:kv-role-absent"
    assert rule_problems(stale) == [f"{row['id']}: no rule 'kv-role-absent'"]


def test_a_rule_modelled_outside_its_releases_is_caught() -> None:
    doc, _ = load()
    stale = copy.deepcopy(doc)
    row = next(r for r in stale["rows"] if r["class"] == "modelled:replayssm-buffer-len")
    row["releases"] = ["0.31.0", *row["releases"]]
    assert rule_problems(stale) == [f"{row['id']}: rule 'replayssm-buffer-len' does not apply in 0.31.0"]


def test_counts_agree_between_markdown_json_and_rows() -> None:
    doc, text = load()
    assert doc["releases"] == list(SUPPORTED)
    assert doc["counts"] == recount(doc)
    assert markdown_counts(text) == doc["counts"]


def test_every_row_is_classified_and_listed_once_in_the_markdown() -> None:
    doc, text = load()
    for row in doc["rows"]:
        kind = row["class"].split(":")[0]
        assert kind in CLASSES, row["id"]
        assert kind == "modelled" or row["detail"], f"{row['id']}: a class other than modelled needs a reason"
        assert set(row["releases"]) <= set(SUPPORTED), row["id"]
    assert len({row["id"] for row in doc["rows"]}) == len(doc["rows"])
    table_rows = re.findall(r"^\| `[^`]+` \| [\d, ]+ \| \w+ \|", text, flags=re.MULTILINE)
    assert len(table_rows) == len(doc["rows"])
