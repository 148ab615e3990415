"""The broad verdict corpus: profilekit's verdict against vLLM's on options drawn from the whole catalogue.

At least 2,000 seeded compositions per release of one to four options with boundary values, on the
oracle's dummy models with their config.json (tools/broad_corpus.py). Profilekit's verdict must equal
`create_engine_config()`'s on every decided case; each case the CPU oracle cannot decide is a named
limit (tools/broad_limits.py) that is itself tested here. Runs for each release in
PROFILEKIT_ORACLE_VERSIONS (default 0.27.0,0.33.0); `python3 tools/broad_report.py --all` writes the
figures and the disagreements grouped by kind to tests/oracle/results/broad-X.json.

Every release agrees on 100 % of its decided cases (committed in tests/oracle/results/broad-X.json): the test
fails on any disagreement, listing them grouped by kind.
"""

from __future__ import annotations

import collections
import json
import sys
import warnings
from pathlib import Path

import pytest

from tests.oracle.models import ARCHITECTURES, config_json
from tests.oracle.oracle_client import SUPPORTED_VERSIONS, OracleWorker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from broad_corpus import (
    ARCHITECTURE_WEIGHTS,
    COUNT,
    EXCLUDED,
    SEED,
    catalogue_entries,
    exclusions,
    generate,
    option_pool,
)
from broad_limits import BROAD_LIMITS, CHECKPOINT_LIMITS, ORACLE_LIMITS
from broad_report import RESULTS, group, run_broad, vllm_message
from verdict_common import match_limit

# The share of decided cases on which profilekit gives vLLM's verdict may not fall below this: the
# committed figures of tests/oracle/results/broad-X.json, rounded down. Raise it as rules land; 1.0 is the
# goal (issue 8), and then any disagreement fails the test.


class BroadCorpusReport(UserWarning):
    """The broad corpus figures of one release, shown in pytest's warnings summary."""


def _committed(version: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((RESULTS / f"broad-{version}.json").read_text(encoding="utf-8"))
    return data


def _listing(kinds: list[dict[str, object]], limit: int = 25) -> str:
    lines = [
        f"  {k['count']:4d} {k['category']}: {','.join(map(str, k['options']))} -> profilekit {k['profilekit']}, "
        f"vLLM: {k['vllm_message']}"
        for k in kinds[:limit]
    ]
    if len(kinds) > limit:
        lines.append(f"  ... and {len(kinds) - limit} more kinds")
    return "\n".join(lines)


@pytest.mark.oracle
def test_profilekit_gives_vllms_verdict_on_the_broad_corpus(oracle: OracleWorker, oracle_version: str) -> None:
    outcome = run_broad(oracle_version, oracle)
    assert outcome.cases >= 2000
    assert outcome.unexplained == [], "undecidable cases that match no named limit:\n" + "\n".join(
        f"{u['case']}: {u['reason']}\n    argv={u['argv']}" for u in outcome.unexplained[:20]
    )
    rate = outcome.agreements / outcome.decided
    warnings.warn(
        BroadCorpusReport(
            f"vLLM {oracle_version}: {outcome.checks} cases, {outcome.decided} decided, {outcome.agreements} agree "
            f"({100 * rate:.2f}%), {len(outcome.undecidable)} undecidable"
        ),
        stacklevel=1,
    )
    committed = _committed(oracle_version)
    assert committed["agreement_rate"] == 1.0, "the committed results must show every decided case agreeing"
    assert outcome.disagreements == [], f"{len(outcome.disagreements)} cases disagree with vLLM:\n" + _listing(
        group(oracle_version, None, outcome, shrink_rows=False)
    )


# one case per limit: (limit, argv after the model, a fragment of vLLM's message, releases where it applies)
LIMIT_PROBES: list[tuple[str, list[str], str, tuple[str, ...]]] = [
    ("platform-capability", ["--enable-sleep-mode"], "Sleep mode is not supported on current platform", ()),
    ("platform-capability", ["--enable-cumem-allocator"], "cumem allocator is not supported on current platform", ()),
    ("platform-capability", ["--device-ids", "GPU-0"], "Non-integer device ID 'GPU-0' is not supported by cpu", ()),
    (
        "platform-capability",
        ["--attention-config", '{"hisparse_config":{"eager_host_mirror":false}}'],
        "HiSparse currently requires NVIDIA CUDA",
        ("0.33.0",),
    ),
    ("no-tokenizer", ["--reasoning-parser", "deepseek_r1"], "tokenizer must be passed to the ReasoningParser", ()),
    (
        "no-tokenizer",
        ["--reasoning-config", '{"reasoning_start_str":"<think>","reasoning_end_str":"</think>"}'],
        "'NoneType' object has no attribute 'encode'",
        (),
    ),
    ("ijson-not-installed", ["--reasoning-parser", "qwen3"], "ijson", ()),
    ("ray-not-installed", ["--distributed-executor-backend", "ray"], "Failed to import Ray", ()),
    (
        "arctic-inference-not-installed",
        ["--speculative-config", '{"method":"suffix"}'],
        "Arctic Inference is required for suffix decoding",
        (),
    ),
    (
        "python-json-logger-not-installed",
        ["--logging-config", '{"formatter":"json"}'],
        "Unable to configure formatter 'vllm_json'",
        ("0.32.0", "0.33.0"),
    ),
    ("checkpoint-quantization-file", ["--quantization", "awq"], "Cannot find the config file for awq", ()),
    ("checkpoint-quantization-file", ["--quantization", "modelopt"], "Cannot find the config file for modelopt", ()),
    ("mistral-params-json", ["--config-format", "mistral"], "Failed to load mistral 'params.json' config", ()),
]


@pytest.mark.oracle
def test_every_oracle_limit_is_real(oracle: OracleWorker, oracle_version: str) -> None:
    """Each named limit: the oracle really refuses its case for the stated reason (a GPU host would not)."""
    for limit_id, argv, fragment, releases in LIMIT_PROBES:
        if releases and oracle_version not in releases:
            continue
        answer = oracle.validate(["dummy/probe", *argv], config_json=config_json("LlamaForCausalLM"))
        assert not answer.get("ok"), (limit_id, answer)
        assert fragment in f"{answer.get('error')} {answer.get('undecidable')}", (limit_id, answer)
        limit = match_limit(answer, oracle_version, ORACLE_LIMITS)
        assert limit is not None and limit.id == limit_id, (limit_id, answer)


def test_every_limit_has_a_probe() -> None:
    assert {probe[0] for probe in LIMIT_PROBES} == {limit.id for limit in (*BROAD_LIMITS, *CHECKPOINT_LIMITS)}
    assert all(limit.why for limit in ORACLE_LIMITS)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_broad_corpus_is_seeded_and_covers_the_catalogue(version: str) -> None:
    first = [c.as_dict() for c in generate(version, 40, SEED)]
    assert first == [c.as_dict() for c in generate(version, 40, SEED)]
    cases = generate(version)
    assert len(cases) == COUNT >= 2000
    drawn = {dest for case in cases for dest in case.intended["options"]}
    assert drawn == {e["dest"] for e in option_pool(version)}
    # every architecture the corpus draws from is drawn, and each is one of the oracle's dummy models
    assert {case.architecture for case in cases} == set(ARCHITECTURE_WEIGHTS) <= set(ARCHITECTURES)
    sizes = collections.Counter(len(case.intended["options"]) for case in cases)
    assert set(sizes) == {1, 2, 3, 4}


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_nothing_is_left_out_silently(version: str) -> None:
    every = {e["dest"] for e in catalogue_entries(version)}
    pooled = {e["dest"] for e in option_pool(version)}
    assert every - pooled == set(exclusions(version)["options"])
    assert all(EXCLUDED[dest] for dest in every - pooled)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_results_are_committed_for_every_release(version: str) -> None:
    figures = _committed(version)
    assert figures["seed"] == SEED
    assert figures["compositions"] == COUNT
    assert figures["undecidable"]["unexplained"] == []  # type: ignore[index]
    assert figures["excluded"] == json.loads(json.dumps(exclusions(version)))


def test_vllm_messages_are_grouped_by_field_with_numbers_normalised() -> None:
    answer = {
        "error": "argument --aux-output-config: 2 validation errors for AuxOutputConfig",
        "stderr": "usage: vllm serve [model_tag] [options]\n"
        "vllm serve: error: argument --aux-output-config: 2 validation errors for AuxOutputConfig\n"
        "max_bytes\n  Input should be greater than 0 [type=greater_than, input_value=-1, input_type=int]\n"
        "    For further information visit https://errors.pydantic.dev/2.14/v/greater_than\n"
        "enable_return_routed_xperts\n  Unexpected keyword argument [type=unexpected_keyword_argument]\n",
    }
    assert vllm_message(answer) == (
        "AuxOutputConfig.max_bytes: Input should be greater than N; "
        "AuxOutputConfig.<unknown key>: Unexpected keyword argument"
    )
    heads = {"error": "Total number of attention heads (4) must be divisible by tensor parallel size (3)."}
    assert vllm_message(heads) == "Total number of attention heads (N) must be divisible by tensor parallel size (N)."
