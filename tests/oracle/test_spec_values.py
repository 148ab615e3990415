"""Speculative shorthands, free strings and values vLLM accepts: profilekit gives vLLM's verdict (round 2).

A triggering and a non-triggering case per behaviour, judged like tests/oracle/test_crossfield.py: the
verdict profilekit predicts (`vllm_verdict`) and the one vLLM's `create_engine_config()` gives must both
equal the case's expectation, so a case cannot agree vacuously.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from profilekit.compose.index import LayerIndex
from profilekit.compose.merge import compose
from profilekit.rules import vllm_verdict
from profilekit.vllm.argv import render_argv
from profilekit.vllm.catalogue import load_catalogue
from tests.oracle.oracle_client import OracleWorker
from tests.oracle.test_crossfield import KIMI, LLAMA, NEMOTRON, Case, _config, _layer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from verdict_corpus import rule_for_message

NGRAM = {"method": "ngram", "num_speculative_tokens": 2}
MTP = {"method": "mtp", "num_speculative_tokens": 1}
NEMOTRON_H_MTP = {"method": "nemotron_h_mtp", "num_speculative_tokens": 2}
NEMOTRON_MTP_LAYERS = {"num_nextn_predict_layers": 1, "mtp_hybrid_override_pattern": "*E"}
MIMO = {"architectures": ["MiMoForCausalLM"], "num_nextn_predict_layers": 1}
SCHEDULE = "num_speculative_tokens_per_batch_size"

CASES = [
    # --spec-method / --spec-model / --spec-tokens, merged into speculative_config
    Case("spec-method-without-count", "speculative-num-tokens", LLAMA, {"spec_method": "ngram"}),
    Case("spec-method-with-count", None, LLAMA, {"spec_method": "ngram", "spec_tokens": 2}),
    Case("spec-tokens-without-model", "speculative-draft-model", NEMOTRON, {"spec_tokens": 2}),
    Case("spec-tokens-zero", "invalid-value", LLAMA, {"spec_method": "ngram", "spec_tokens": 0}),
    Case("spec-tokens-one", None, LLAMA, {"spec_method": "ngram", "spec_tokens": 1}),
    Case(
        "spec-tokens-and-table-count",
        "speculative-shorthand-conflict",
        LLAMA,
        {"spec_tokens": 2, "speculative_config": {**NGRAM, "num_speculative_tokens": 3}},
    ),
    Case("spec-tokens-and-table-method", None, LLAMA, {"spec_tokens": 2, "speculative_config": {"method": "ngram"}}),
    Case("spec-empty-table", "speculative-num-tokens", KIMI, {"speculative_config": {}}),
    Case("spec-mtp-without-count", "speculative-num-tokens", NEMOTRON, {"speculative_config": {"method": "mtp"}}),
    Case("spec-dspark-without-count", "speculative-num-tokens", KIMI, {"spec_method": "dspark"}),
    # an MTP method drafts with the served model's own MTP layers (SpeculativeConfig.hf_config_override)
    Case("mtp-llama", "speculative-mtp-model", LLAMA, {"speculative_config": MTP}),
    Case("mtp-alias-kimi", "speculative-mtp-model", KIMI, {"speculative_config": {**MTP, "method": "kimi_k3_mtp"}}),
    Case("mtp-nemotron-no-mtp-layers", "speculative-mtp-model", NEMOTRON, {"speculative_config": NEMOTRON_H_MTP}),
    Case("mtp-nemotron", None, NEMOTRON, {"speculative_config": NEMOTRON_H_MTP}, config=NEMOTRON_MTP_LAYERS),
    Case("mtp-mimo-architecture", None, LLAMA, {"speculative_config": MTP}, config=MIMO),
    # num_speculative_tokens_per_batch_size: list[tuple[int, int, int]]
    Case("spec-batch-schedule-short", "invalid-value", LLAMA, {"speculative_config": {**NGRAM, SCHEDULE: [[1]]}}),
    Case(
        "spec-batch-schedule-long", "invalid-value", LLAMA, {"speculative_config": {**NGRAM, SCHEDULE: [[1, 8, 2, 4]]}}
    ),
    Case("spec-batch-schedule", None, LLAMA, {"speculative_config": {**NGRAM, SCHEDULE: [[1, 8, 2], [9, 64, 1]]}}),
    # values vLLM reads as None: accepted (a warning in profilekit)
    Case("host-empty", None, LLAMA, {"host": ""}),
    Case("root-path-none-word", None, LLAMA, {"root_path": "None"}),
    Case(
        "spec-method-none-word",
        lambda v: None if v in ("0.31.0", "0.32.0", "0.33.0") else "invalid-value",  # 0.31.0 on: None is a choice
        LLAMA,
        {"spec_method": "None"},
    ),
    # free strings vLLM looks up after parsing
    Case("attention-backend-bogus", "invalid-value", NEMOTRON, {"attention_backend": "bogus"}),
    Case("attention-backend-auto", None, NEMOTRON, {"attention_backend": "auto"}),
    Case("optimization-level-4", "invalid-value", LLAMA, {"optimization_level": "4"}),
    Case("mm-encoder-backend-text-model", None, LLAMA, {"mm_encoder_attn_backend": "bogus"}),
    Case("config-format-bogus", "invalid-value", LLAMA, {"config_format": "bogus"}),
    Case("config-format-hf", None, LLAMA, {"config_format": "hf"}),
    Case("max-model-len-zero", "invalid-value", LLAMA, {"max_model_len": 0}),
    Case("max-model-len-zero-k", "invalid-value", LLAMA, {"max_model_len": "0k"}),
    Case("max-model-len-auto", None, LLAMA, {"max_model_len": -1}),
    Case(
        "reasoning-table-without-parser",
        lambda v: "invalid-value" if v in ("0.27.0", "0.27.1") else None,
        LLAMA,
        {"reasoning_config": {"reasoning_end_str": "bogus"}},
    ),
    Case("executor-bogus", "invalid-value", LLAMA, {"distributed_executor_backend": "bogus"}),
    Case("executor-mp", None, LLAMA, {"distributed_executor_backend": "mp"}),
    Case("quantization-upper-case", None, LLAMA, {"quantization": "FP8"}),
    Case("quantization-unknown-upper-case", "invalid-value", LLAMA, {"quantization": "BOGUS"}),
    Case("kernel-moe-backend-bogus", "invalid-value", LLAMA, {"kernel_config": {"moe_backend": "bogus"}}),
    Case("kernel-moe-backend-respelled", None, LLAMA, {"kernel_config": {"moe_backend": "Deep-Gemm"}}),
    Case("kernel-linear-backend-bogus", "invalid-value", LLAMA, {"kernel_config": {"linear_backend": "bogus"}}),
]


def _verdicts(case: Case, version: str, oracle: OracleWorker, root: Path) -> tuple[str | None, str | None, str]:
    """(profilekit's verdict, vLLM's verdict from its whole message, vLLM's message) for one case."""
    (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
    (root / "profiles").mkdir()
    (root / "profiles" / "s.toml").write_text(_layer(case), encoding="utf-8")
    config = _config(case)
    (root / "models" / "dummy").mkdir(parents=True)
    (root / "models" / "dummy" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    catalogue = load_catalogue(version)
    stack = compose(LayerIndex(root, catalogue), "s")
    predicted = vllm_verdict(stack, "serve", version=version, catalogue=catalogue, root=root)
    answer = oracle.validate(render_argv(stack.roles["serve"].serve, catalogue), env=dict(case.env), config_json=config)
    assert not answer.get("undecidable"), answer
    # argparse's error names the option; pydantic's details (the field, "Input should be ...") follow it
    message = "\n".join(str(answer.get(k, "")) for k in ("error", "stderr", "raw_error"))
    actual = None if answer.get("ok") else (rule_for_message(message) or f"unmapped: {message[:300]}")
    return (None if predicted.accepted else predicted.rule), actual, message


def test_no_case_is_limited_to_some_releases() -> None:
    """Every case runs for every selected release (expectations that differ are functions of the release)."""
    assert all(not case.releases for case in CASES)


@pytest.mark.oracle
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_profilekit_gives_vllms_verdict(oracle: OracleWorker, oracle_version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, oracle_version, oracle, tmp_path)
    expected = case.expected(oracle_version)
    assert (predicted, actual) == (expected, expected), message
