"""Verdict agreement: profilekit refuses exactly what vLLM's own create_engine_config() refuses, for the same reason.

A seeded corpus of at least 1,000 layer compositions per release (tools/verdict_corpus.py) over
architectures, mamba backends, prefix caching, buffer lengths, speculative decoding, every connector form,
offload flags and env vars. For each vLLM role, profilekit's verdict (accept, or the rule vLLM reports first)
must equal the oracle's, with vLLM's message mapped to a rule id by DESIGN section 6's table. Cases the
CPU oracle cannot decide must each be a known, documented limit. Runs for each release in
PROFILEKIT_ORACLE_VERSIONS (default 0.27.0,0.33.0); `python3 tools/verdict_report.py --all` writes the
figures to tests/oracle/results/verdicts-X.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.oracle.oracle_client import OracleWorker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from verdict_corpus import MESSAGE_RULES, generate, rule_for_message
from verdict_report import COUNT, KNOWN_LIMITS, RESULTS, SEED, limit_for, run_verdicts

from profilekit.rules import RULES


def _readable(rows: list[dict[str, object]]) -> str:
    return "\n".join(f"{r['case']}: {r['reason']}\n    argv={r['argv']} env={r['env']}" for r in rows[:20])


@pytest.mark.oracle
def test_profilekit_gives_vllms_verdict_on_the_corpus(oracle: OracleWorker, oracle_version: str) -> None:
    outcome = run_verdicts(oracle_version, oracle)
    assert outcome.disagreements == [], _readable(outcome.disagreements)
    assert outcome.unexplained == [], _readable(outcome.unexplained)
    assert outcome.cases >= 1000
    assert outcome.agreements == outcome.decided
    # the corpus reaches both verdicts and the ReplaySSM and KV rules, not only one easy path
    reached = ("accept", "replayssm-architecture", "replayssm-kv-connector", "replayssm-backend")
    for verdict in (*reached, "replayssm-speculative", "kv-role-missing", "kv-expandable-segments"):
        assert outcome.verdicts[verdict] > 0, verdict
    # a decided case is never far from the committed figures of the same seed
    committed = RESULTS / f"verdicts-{oracle_version}.json"
    if committed.is_file():
        figures = json.loads(committed.read_text(encoding="utf-8"))
        assert figures["seed"] == SEED
        assert (figures["compositions"], figures["cases"], figures["agreements"]) == (
            outcome.cases,
            outcome.checks,
            outcome.agreements,
        )


@pytest.mark.oracle
def test_every_undecidable_case_is_a_known_limit(oracle: OracleWorker, oracle_version: str) -> None:
    """The limits themselves are tested: the oracle really cannot decide these, for the stated reason."""
    lmcache = oracle.validate(
        ["m", "--use-replayssm", "--kv-offloading-size", "8", "--kv-offloading-backend", "lmcache"],
        config_json=_nemotron(),
    )
    assert lmcache.get("undecidable"), lmcache
    limit = limit_for(lmcache, oracle_version)
    assert limit is not None and limit.id == "lmcache-not-importable"
    mooncake = oracle.validate(
        ["m", "--kv-transfer-config", '{"kv_connector":"MooncakeConnector","kv_role":"kv_producer"}'],
        config_json=_nemotron(),
    )
    limit = limit_for(mooncake, oracle_version)
    if oracle_version in ("0.27.0", "0.27.1", "0.28.0", "0.29.0"):
        assert mooncake.get("undecidable"), mooncake
        assert limit is not None and limit.id == "mooncake-needs-httpx"
    else:
        assert not mooncake.get("undecidable"), mooncake


def _nemotron() -> dict[str, object]:
    from tests.oracle.models import nemotron_h

    return nemotron_h()


def test_the_corpus_is_seeded_and_large_enough() -> None:
    first = [c.as_dict() for c in generate("0.33.0", 50, SEED)]
    again = [c.as_dict() for c in generate("0.33.0", 50, SEED)]
    assert first == again
    assert COUNT >= 1000
    stacks = [c.stack for c in generate("0.27.0", COUNT, SEED)]
    assert len(stacks) == COUNT


def test_every_rule_a_message_maps_to_exists() -> None:
    for _pattern, rule_id in MESSAGE_RULES:
        assert rule_id in RULES or rule_id in ("unknown-option", "invalid-value"), rule_id


@pytest.mark.parametrize(
    ("message", "rule_id"),
    [
        (
            "--use-replayssm is incompatible with KV connectors (P/D disaggregation, KV cache offload)",
            "replayssm-kv-connector",
        ),
        (
            "--use-replayssm is only supported for Nemotron-H models (got architecture 'LlamaForCausalLM')",
            "replayssm-architecture",
        ),
        ("--use-replayssm is not supported for architecture 'LlamaForCausalLM'", "replayssm-architecture"),
        (
            "--use-replayssm supports prefix caching only in align mode; pass --mamba-cache-mode align",
            "replayssm-prefix-caching",
        ),
        ("FlashInfer ReplaySSM does not support --mamba-cache-mode align yet; use none", "replayssm-prefix-caching"),
        (
            "FlashInfer ReplaySSM does not support prefix caching yet; use --disable-prefix-caching",
            "replayssm-prefix-caching",
        ),
        ("--use-replayssm does not support speculative decoding", "replayssm-speculative"),
        ("RecoverSSM is only supported for Kimi-K3 KDA", "replayssm-speculative"),
        (
            "FlashInfer ReplaySSM speculative decoding does not support prefix caching; use --disable-prefix-caching",
            "replayssm-speculative",
        ),
        ("Mamba2 ReplaySSM speculative decoding requires --mamba-backend flashinfer", "replayssm-speculative"),
        (
            "FlashInfer ReplaySSM speculative decoding requires --replayssm-buffer-len >= 1 + num_speculative_tokens "
            "(4); got 2",
            "replayssm-speculative",
        ),
        ("--use-replayssm requires --mamba-backend triton", "replayssm-backend"),
        ("--use-replayssm requires --mamba-backend triton or flashinfer", "replayssm-backend"),
        ("RecoverSSM requires --mamba-backend triton", "replayssm-backend"),
        ("FlashInfer ReplaySSM requires --replayssm-buffer-len <= 16", "replayssm-buffer-len"),
        (
            "Triton ReplaySSM requires Model Runner V1; use --mamba-backend flashinfer or Model Runner V1",
            "replayssm-model-runner",
        ),
        ("RecoverSSM with prefix caching requires VLLM_USE_V2_MODEL_RUNNER=1", "replayssm-model-runner"),
    ],
)
def test_design_section_6_message_table(message: str, rule_id: str) -> None:
    assert rule_for_message(message) == rule_id


def test_known_limits_are_documented() -> None:
    assert {limit.id for limit in KNOWN_LIMITS} == {"lmcache-not-importable", "mooncake-needs-httpx"}
    assert all(limit.why for limit in KNOWN_LIMITS)
