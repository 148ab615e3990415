"""Import round trip: `import` then `render` parses, in vLLM's real parser, to the original's namespace.

For every `vllm serve` launch of launch-examples.md (tests/data/launches) that the release accepts, a
seeded corpus of command lines spelled the many ways vLLM accepts, and a seeded corpus of `--config`
YAML files (tools/corpus.py), the namespace of the original command line must equal the namespace of
the argv rendered from the imported layer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.oracle.oracle_client import OracleWorker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from oracle_report import CONFIG_CORPUS, LAUNCH_CORPUS, import_config_corpus, import_corpus, import_examples

pytestmark = pytest.mark.oracle


def _readable(disagreements: list[dict[str, str]]) -> str:
    return "\n".join(f"{d['case']}: {d['reason']}" for d in disagreements)


def test_every_launch_example_imports_to_the_same_namespace(oracle: OracleWorker, oracle_version: str) -> None:
    outcome = import_examples(oracle_version, oracle)
    assert outcome.disagreements == [], _readable(outcome.disagreements)
    assert outcome.cases >= 22
    # D2d: no release from 0.27.0 to 0.33.0 has --tool-call-parser-plugin; both sides refuse it
    assert [r["case"] for r in outcome.refused_by_both] == ["launch d2d"]
    # the forms with ${VAR} or <model> placeholders need a shell; their filled copies are the cases
    assert sorted(s["case"] for s in outcome.skipped) == [
        "launch d3b-decode",
        "launch d3b-prefill",
        "launch d4a",
        "launch d4e",
    ]


def test_a_corpus_of_command_lines_imports_to_the_same_namespace(oracle: OracleWorker, oracle_version: str) -> None:
    outcome = import_corpus(oracle_version, oracle)
    assert outcome.disagreements == [], _readable(outcome.disagreements[:20])
    assert outcome.cases == LAUNCH_CORPUS
    assert outcome.skipped == []


def test_config_files_import_to_the_same_namespace(oracle: OracleWorker, oracle_version: str) -> None:
    # vLLM and profilekit both read these with PyYAML (yaml.safe_load)
    outcome = import_config_corpus(oracle_version, oracle)
    assert outcome.disagreements == [], _readable(outcome.disagreements[:20])
    assert outcome.cases == CONFIG_CORPUS
