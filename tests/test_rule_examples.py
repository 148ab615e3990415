"""Every rule id has a minimal failing example in tests/rule_examples/, checked with the CLI against its golden output.

An example is a profile repository `tests/rule_examples/<rule-id>/`: `profilekit.toml`, the fewest layer lines
that make the rule fire (taken from the rule's tests), a config.json where the rule needs the model's facts,
and `expected.txt`, the whole text output of the command. The command is `check example` unless the folder's
`command` file names another (`lint` for the repository-level checks, `check a+b` for a stack of layers).
docs/RULE-EXAMPLES.md is generated from this corpus by tools/gen_rule_examples.py.

Each example is the smallest repository the rule's own tests (tests/rules/, tests/test_*.py) check that finds
that rule alone, trimmed to the files, lines and config.json keys it needs. The config.json files are the
dummy configs of tests/oracle/models.py (`config_json`), cut down to `architectures`, `model_type` and the
keys the rule reads. A new rule gets its example the same way: copy the repository of its test here, name the
deployable layer `example` (or write the arguments into `command`), and run this file with
PROFILEKIT_UPDATE_GOLDEN=1 to write `expected.txt`; then run tools/gen_rule_examples.py.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from profilekit.rules import RULES
from tests.conftest import REPO_ROOT, Run

sys.path.insert(0, str(REPO_ROOT / "tools"))

from gen_rule_examples import CORPUS, DOC, arguments, render, rule_ids
from gen_rules_doc import OTHER_CHECKS

# Rule ids no repository can make fire, with the reason. Every rule id is either exampled or listed here.
UNREACHABLE: dict[str, str] = {}

# Findings an example cannot avoid beside its own rule: {rule id: {other rule ids}}, each with the reason.
ALSO: dict[str, set[str]] = {
    # a verdict another GPU would change is the one profilekit gives where no GPU is declared: a refusal on the
    # small defaults (larger defaults only ever start more), so the warning comes with the error it qualifies
    "hardware-unknown": {"max-num-batched-tokens-seqs"},
}

EXAMPLES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def test_every_rule_id_has_an_example_or_a_reason() -> None:
    ids = set(rule_ids())
    assert ids == set(RULES) | {row[0] for row in OTHER_CHECKS}
    missing = sorted(ids - set(EXAMPLES) - set(UNREACHABLE))
    assert missing == [], f"rule ids without an example in {CORPUS.relative_to(REPO_ROOT)}: {', '.join(missing)}"
    assert sorted(set(EXAMPLES) - ids) == [], "example folders named after no rule id"
    assert sorted(set(EXAMPLES) & set(UNREACHABLE)) == [], "an exampled rule is listed as unreachable"


def found_rules(output: str) -> set[str]:
    """The rule ids of the findings in `check`/`lint` text output: `where: severity rule-id message`."""
    return set(re.findall(r"^\S[^\n]*?: (?:error|warning) ([a-z0-9][a-z0-9-]*) ", output, re.M))


@pytest.mark.parametrize("rule", EXAMPLES)
def test_the_example_finds_its_rule(rule: str, run: Run, tmp_path: Path) -> None:
    repo = tmp_path / rule  # a copy: no command may write into the corpus
    shutil.copytree(CORPUS / rule, repo, ignore=shutil.ignore_patterns("expected.txt", "command"))
    result = run("--repo", repo, *arguments(rule), cwd=tmp_path)
    output = result.out + result.err
    assert found_rules(output) == {rule} | ALSO.get(rule, set()), output
    errors = re.search(r"^(\d+) errors?, \d+ warnings?$", output, re.M)
    assert errors is not None, output
    assert result.code == (1 if int(errors.group(1)) else 0), result
    expected = CORPUS / rule / "expected.txt"
    if os.environ.get("PROFILEKIT_UPDATE_GOLDEN") == "1":
        expected.write_text(output, encoding="utf-8")
    assert output == expected.read_text(encoding="utf-8")


def test_rule_examples_doc_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "run: python3 tools/gen_rule_examples.py"
