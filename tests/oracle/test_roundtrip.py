"""Render round trip: what profilekit renders, vLLM's real parser reads back as exactly the composed values.

For every example stack and role of this repository's `profiles/`, and a seeded corpus of at least 500
layer compositions over the release's real options (tools/corpus.py), the rendered argv must parse to
the composed value of every composed option (JSON options compared as dicts) and leave every other
option at vLLM's default. Runs for each release in PROFILEKIT_ORACLE_VERSIONS (default 0.27.0,0.33.0);
`python3 tools/oracle_report.py --all` writes the figures to tests/oracle/results/.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.oracle.oracle_client import OracleWorker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from corpus import layer_corpus
from oracle_report import LAYER_CORPUS, Baselines, render_corpus, render_profiles

from profilekit.vllm.catalogue import load_catalogue

pytestmark = pytest.mark.oracle


def _readable(disagreements: list[dict[str, str]]) -> str:
    return "\n".join(f"{d['case']}: {d['reason']}" for d in disagreements)


def test_every_example_stack_and_role_renders_to_what_vllm_parses(oracle: OracleWorker, oracle_version: str) -> None:
    outcome = render_profiles(oracle_version, oracle)
    assert outcome.disagreements == [], _readable(outcome.disagreements)
    # nemotron-replayssm, qwen-offload, qwen-disaggregated (prefill, decode), models/*, the [lint] stacks
    assert outcome.cases >= 8
    assert outcome.skipped == []


def test_a_corpus_of_compositions_renders_to_what_vllm_parses(oracle: OracleWorker, oracle_version: str) -> None:
    outcome = render_corpus(oracle_version, oracle, baselines=Baselines(oracle))
    assert outcome.disagreements == [], _readable(outcome.disagreements[:20])
    assert outcome.cases >= LAYER_CORPUS  # one case per vLLM role of each of the 500 stacks


def test_the_corpus_is_seeded_and_covers_every_kind_of_option(oracle_version: str) -> None:
    catalogue = load_catalogue(oracle_version)
    assert catalogue is not None
    first = layer_corpus(catalogue, count=LAYER_CORPUS)
    assert [c.layers for c in first] == [c.layers for c in layer_corpus(catalogue, count=LAYER_CORPUS)]
    text = "\n".join(layer.text for case in first for layer in case.layers)
    for needle in ("= true", "= false", "= [", "= {", "unset = [", "extends = [", "[roles."):
        assert needle in text, needle
    kinds = {
        catalogue.flags[dest].type
        for case in first
        for role in case.expected.values()
        for dest in role
        if dest != "model"
    }
    assert {"bool", "int", "float", "str", "optional:str", "human_readable_int"} <= kinds
    assert any(k and k.startswith("optional:json:") for k in kinds)
