"""docs/RULES.md lists every rule, and the contract ids of DESIGN section 6 exist."""

from __future__ import annotations

import sys
from pathlib import Path

from profilekit.rules import RULES

TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))

from gen_rules_doc import DOC, OTHER_CHECKS, render  # noqa: E402

CONTRACT = {
    "replayssm-kv-connector",
    "replayssm-architecture",
    "replayssm-backend",
    "replayssm-prefix-caching",
    "replayssm-speculative",
    "replayssm-buffer-len",
    "replayssm-model-runner",
    "kv-role-missing",
    "declared-conflict",
    "group-conflict",
    "missing-requirement",
    "literal-secret",
    "missing-model",
}


def test_rules_doc_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "run: python3 tools/gen_rules_doc.py"


def test_contract_rule_ids_are_registered() -> None:
    assert set(RULES) >= CONTRACT


def test_rule_ids_are_kebab_case_and_unique_across_the_doc() -> None:
    ids = [*RULES, *(row[0] for row in OTHER_CHECKS)]
    assert len(ids) == len(set(ids))
    assert all(i == i.lower() and " " not in i and "_" not in i for i in ids)
