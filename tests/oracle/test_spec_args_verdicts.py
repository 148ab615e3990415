"""SpeculativeConfig's per-field checks (rules/specargs.py): profilekit gives vLLM's verdict.

Judged as tests/oracle/test_spec_values.py does: the verdict profilekit predicts and the one vLLM's
`create_engine_config()` gives must both equal the case's expectation, per release.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import LLAMA, NEMOTRON, Case
from tests.oracle.test_spec_values import MIMO, MTP, NEMOTRON_MTP_LAYERS, NGRAM, _verdicts


def _since(first: str, rule: str | None, otherwise: str | None = "unknown-option"):  # type: ignore[no-untyped-def]
    """`rule` from release `first` on; before it the field does not exist (invalid-value) or means nothing."""
    from packaging.version import Version

    return lambda v: rule if Version(v) >= Version(first) else otherwise


def _spec(**table: object) -> dict[str, object]:
    return {"speculative_config": {**NGRAM, **table}}


MARK = {"key": 7}
LORA = {"enable_lora": True, "max_num_seqs": 8}
MTP1 = MTP
MTP2 = {"method": "nemotron_h_mtp", "num_speculative_tokens": 2}
CASES = [
    Case(
        "custom-class-without-model",
        "speculative-custom-class-model",
        LLAMA,
        {"speculative_config": {"method": "custom_class", "num_speculative_tokens": 2}},
    ),
    Case(
        "index-share-ngram",
        _since("0.29.0", "speculative-index-share-mtp"),
        LLAMA,
        _spec(index_share_for_mtp_iteration=True),
    ),
    Case(
        "index-share-mtp",
        _since("0.29.0", None),
        NEMOTRON,
        {"speculative_config": {**MTP2, "index_share_for_mtp_iteration": True}},
        config=NEMOTRON_MTP_LAYERS,
    ),
    Case(
        "adaptive-ngram",
        lambda v: {"0.28.0": "speculative-adaptive-verification", "0.29.0": "speculative-adaptive-verification"}.get(
            v, "unknown-option" if v in ("0.27.0", "0.27.1") else None
        ),
        LLAMA,
        _spec(enable_adaptive_verification=True),
        releases="<0.30.0",  # 0.30.0 on VllmConfig refuses it without full CUDA graphs (not modelled yet)
    ),
    Case(
        "adaptive-local-argmax",
        lambda v: "unknown-option" if v in ("0.27.0", "0.27.1") else "speculative-adaptive-verification",
        LLAMA,
        _spec(enable_adaptive_verification=True, use_local_argmax_reduction=True),
    ),
    Case(
        "lm-head-ngram",
        _since("0.33.0", "speculative-lm-head-quantization"),
        LLAMA,
        _spec(draft_lm_head_quantization="fp8"),
    ),
    Case(
        "synthetic-rates-standard",
        "speculative-synthetic-acceptance",
        LLAMA,
        _spec(synthetic_acceptance_rates=[0.5, 0.2]),
    ),
    Case("synthetic-neither", "speculative-synthetic-acceptance", LLAMA, _spec(rejection_sample_method="synthetic")),
    Case(
        "synthetic-rates-length",
        "speculative-synthetic-acceptance",
        LLAMA,
        _spec(rejection_sample_method="synthetic", synthetic_acceptance_rates=[0.5]),
    ),
    Case(
        "synthetic-rates-range",
        "speculative-synthetic-acceptance",
        LLAMA,
        _spec(rejection_sample_method="synthetic", synthetic_acceptance_rates=[1.5, 0.2]),
    ),
    Case(
        "synthetic-rates-increasing",
        "speculative-synthetic-acceptance",
        LLAMA,
        _spec(rejection_sample_method="synthetic", synthetic_acceptance_rates=[0.2, 0.5]),
    ),
    Case(
        "synthetic-length-range",
        "speculative-synthetic-acceptance",
        LLAMA,
        _spec(rejection_sample_method="synthetic", synthetic_acceptance_length=4),
    ),
    Case(
        "synthetic-rates", None, LLAMA, _spec(rejection_sample_method="synthetic", synthetic_acceptance_rates=[1, 0.5])
    ),
    Case("synthetic-length", None, LLAMA, _spec(rejection_sample_method="synthetic", synthetic_acceptance_length=3)),
    Case("heterogeneous-ngram", "speculative-heterogeneous-vocab", LLAMA, _spec(use_heterogeneous_vocab=True)),
    Case(
        "fly-one-token",
        _since("0.33.0", "speculative-fly", "invalid-value"),
        LLAMA,
        _spec(rejection_sample_method="fly", num_speculative_tokens=1),
    ),
    Case(
        "fly-window",
        _since("0.33.0", "speculative-fly"),
        LLAMA,
        _spec(rejection_sample_method="fly", num_speculative_tokens=3, fly_window_size=3),
    ),
    Case(
        "fly",
        _since("0.33.0", None),
        LLAMA,
        _spec(rejection_sample_method="fly", num_speculative_tokens=3, fly_window_size=2),
    ),
    # VllmConfig._check_supports_watermarking (0.30.0+, where --watermark-config exists)
    Case(
        "watermark-greedy",
        "speculative-watermarking",
        LLAMA,
        {**_spec(), "watermark_config": MARK},
        releases=">=0.30.0",
    ),
    Case(
        "watermark-ngram",
        "speculative-watermarking",
        LLAMA,
        {**_spec(draft_sample_method="probabilistic"), "watermark_config": MARK},
        releases=">=0.30.0",
    ),
    Case(
        "watermark-mtp-gumbel",
        "speculative-watermarking",
        NEMOTRON,
        {"speculative_config": {**MTP2, "draft_sample_method": "probabilistic"}, "watermark_config": MARK},
        config=NEMOTRON_MTP_LAYERS,
        releases=">=0.30.0",
    ),
    Case(
        "watermark-mtp-target-only",
        None,
        NEMOTRON,
        {
            "speculative_config": {**MTP2, "draft_sample_method": "probabilistic"},
            "watermark_config": {**MARK, "allow_target_only_watermarking": True},
        },
        config=NEMOTRON_MTP_LAYERS,
        releases=">=0.30.0",
    ),
    # the draft-model branch of __post_init__ (an MTP draft built from the model's own MTP layers)
    Case(
        "mtp-dspark-topk",
        _since("0.28.0", "speculative-method-option"),
        NEMOTRON,
        {"speculative_config": {**MTP2, "dspark_draft_topk": 4}},
        config=NEMOTRON_MTP_LAYERS,
    ),
    Case(
        "mtp-xpress-topc",
        _since("0.33.0", "speculative-method-option"),
        NEMOTRON,
        {"speculative_config": {**MTP2, "xpress_topc": 4}},
        config=NEMOTRON_MTP_LAYERS,
    ),
    Case(
        "mtp-draft-tp-2",
        "speculative-draft-tensor-parallel",
        NEMOTRON,
        {"speculative_config": {**MTP2, "draft_tensor_parallel_size": 2}},
        config=NEMOTRON_MTP_LAYERS,
    ),
    Case(
        "mtp-draft-tp-1",
        None,
        NEMOTRON,
        {"speculative_config": {**MTP2, "draft_tensor_parallel_size": 1}},
        config=NEMOTRON_MTP_LAYERS,
    ),
    # VllmConfig._validate_adaptive_verification (0.30.0 on: after SpeculativeConfig accepts the table), with MTP
    # methods, which keep Model Runner V2 (0.31.0 runs the n-gram methods on V1, which refuses adaptive verification)
    Case(
        "adaptive-lora",
        _since("0.30.0", "speculative-adaptive-engine", None),
        LLAMA,
        {"speculative_config": {**MTP1, "enable_adaptive_verification": True}, "enable_lora": True},
        config=MIMO,
        releases=">=0.30.0",
    ),
    Case(
        "adaptive-eager",
        _since("0.30.0", "speculative-adaptive-engine", None),
        NEMOTRON,
        {"speculative_config": {**MTP2, "enable_adaptive_verification": True}, "enforce_eager": True},
        config=NEMOTRON_MTP_LAYERS,
        releases=">=0.30.0",
    ),
    # EngineArgs.create_engine_config with LoRA
    Case(
        "lora-budget-short", "speculative-lora-batched-tokens", LLAMA, {**_spec(), **LORA, "max_num_batched_tokens": 16}
    ),
    Case("lora-budget", None, LLAMA, {**_spec(), **LORA, "max_num_batched_tokens": 24}),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message
