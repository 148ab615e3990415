"""SpeculativeConfig's per-field checks (rules/specargs.py): whole messages, a refused and an accepted table each."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES

NGRAM = {"method": "ngram", "num_speculative_tokens": 2}


def _since(first: str) -> list[str]:
    from packaging.version import Version

    return [v for v in RELEASES if Version(v) >= Version(first)]


def _found(check: Check, version: str, rule: str, **table: Any) -> list[str]:
    return messages(check(files(speculative_config=table), version=version, rule=rule))


@pytest.mark.parametrize("version", RELEASES)
def test_a_custom_proposer_needs_its_class_path(check: Check, version: str) -> None:
    rule = "speculative-custom-class-model"
    assert _found(check, version, rule, method="custom_class", num_speculative_tokens=2) == [
        refuses(
            version,
            'speculative_config.method = "custom_class" and num_speculative_tokens = 2 without a model',
            "method='custom_class' requires 'model' to contain the custom proposer module path (e.g., "
            "'my_module.MyProposer').",
        )
    ]
    assert _found(check, version, rule, method="custom_class", num_speculative_tokens=2, model="pkg.Proposer") == []


@pytest.mark.parametrize("version", _since("0.29.0"))
def test_index_sharing_needs_an_mtp_draft(check: Check, version: str) -> None:
    rule = "speculative-index-share-mtp"
    assert _found(check, version, rule, **NGRAM, index_share_for_mtp_iteration=True) == [
        refuses(
            version,
            'speculative_config.index_share_for_mtp_iteration = true with method = "ngram"',
            "index_share_for_mtp_iteration is only supported with method='mtp'",
        )
    ]
    mtp = {"method": "mtp", "num_speculative_tokens": 1, "index_share_for_mtp_iteration": False}
    assert _found(check, version, rule, **mtp) == []


@pytest.mark.parametrize("version", ["0.28.0", "0.29.0"])
def test_adaptive_verification_is_dspark_only_before_0_30(check: Check, version: str) -> None:
    rule = "speculative-adaptive-verification"
    assert _found(check, version, rule, **NGRAM, enable_adaptive_verification=True) == [
        refuses(
            version,
            'speculative_config.enable_adaptive_verification = true with method = "ngram"',
            "Adaptive verification only supported with DSpark",
        )
    ]
    dspark = {"method": "dspark", "num_speculative_tokens": 2, "enable_adaptive_verification": True}
    assert _found(check, version, rule, **dspark) == []


@pytest.mark.parametrize("version", _since("0.30.0"))
def test_adaptive_verification_needs_the_draft_logits(check: Check, version: str) -> None:
    rule = "speculative-adaptive-verification"
    table = {**NGRAM, "enable_adaptive_verification": True}
    assert _found(check, version, rule, **table, use_local_argmax_reduction=True) == [
        refuses(
            version,
            "speculative_config.enable_adaptive_verification = true with use_local_argmax_reduction = true",
            "Adaptive verification estimates per-position acceptance from the draft logits, which "
            "use_local_argmax_reduction never materializes. Disable one of them.",
        )
    ]
    assert _found(check, version, rule, **table) == []


def test_lm_head_quantization_is_for_eagle_and_mtp(check: Check) -> None:
    rule = "speculative-lm-head-quantization"
    assert _found(check, "0.33.0", rule, **NGRAM, draft_lm_head_quantization="fp8") == [
        refuses(
            "0.33.0",
            'speculative_config.draft_lm_head_quantization = "fp8" with method = "ngram"',
            "draft_lm_head_quantization is not supported for method 'ngram'.",
        )
    ]
    eagle = {"method": "eagle3", "model": "org/eagle3-head", "num_speculative_tokens": 2}
    assert _found(check, "0.33.0", rule, **eagle, draft_lm_head_quantization="fp8") == []


SYNTHETIC = {**NGRAM, "rejection_sample_method": "synthetic"}


@pytest.mark.parametrize("version", RELEASES)
def test_synthetic_acceptance_schedules(check: Check, version: str) -> None:
    rule = "speculative-synthetic-acceptance"
    cases = [
        (
            {**NGRAM, "synthetic_acceptance_length": 2},
            'speculative_config.synthetic_acceptance_length without rejection_sample_method = "synthetic"',
            "synthetic_acceptance_rates / synthetic_acceptance_length are only valid with "
            "rejection_sample_method='synthetic'.",
        ),
        (
            SYNTHETIC,
            'speculative_config.rejection_sample_method = "synthetic" with neither of synthetic_acceptance_rates and '
            "synthetic_acceptance_length",
            "rejection_sample_method='synthetic' requires exactly one of synthetic_acceptance_rates or "
            "synthetic_acceptance_length.",
        ),
        (
            {**SYNTHETIC, "synthetic_acceptance_rates": [1]},
            "speculative_config.synthetic_acceptance_rates = [1.0] with num_speculative_tokens = 2",
            "synthetic_acceptance_rates must have length 2, got [1.0].",
        ),
        (
            {**SYNTHETIC, "synthetic_acceptance_rates": [1.5, 0.5]},
            "speculative_config.synthetic_acceptance_rates = [1.5, 0.5] with num_speculative_tokens = 2",
            "synthetic_acceptance_rates entries must be in [0, 1], got [1.5, 0.5].",
        ),
        (
            {**SYNTHETIC, "synthetic_acceptance_rates": [0.2, 0.5]},
            "speculative_config.synthetic_acceptance_rates = [0.2, 0.5] with num_speculative_tokens = 2",
            "synthetic_acceptance_rates must be non-increasing, got [0.2, 0.5].",
        ),
        (
            {**SYNTHETIC, "synthetic_acceptance_length": 3.5},
            "speculative_config.synthetic_acceptance_length = 3.5 with num_speculative_tokens = 2",
            "synthetic_acceptance_length must be in [1, 3], got 3.5.",
        ),
    ]
    for table, what, message in cases:
        assert _found(check, version, rule, **table) == [refuses(version, what, message)], table
    assert _found(check, version, rule, **SYNTHETIC, synthetic_acceptance_rates=[1, 0.5]) == []
    assert _found(check, version, rule, **SYNTHETIC, synthetic_acceptance_length=3) == []


@pytest.mark.parametrize("version", RELEASES)
def test_heterogeneous_vocabularies_need_a_greedy_draft_model(check: Check, version: str) -> None:
    rule = "speculative-heterogeneous-vocab"
    assert _found(check, version, rule, **NGRAM, use_heterogeneous_vocab=True) == [
        refuses(
            version,
            'speculative_config.use_heterogeneous_vocab = true with method = "ngram"',
            "use_heterogeneous_vocab only works with method='draft_model'",
        )
    ]
    draft = {"model": "org/small-draft", "num_speculative_tokens": 2, "use_heterogeneous_vocab": True}
    assert _found(check, version, rule, **draft, draft_sample_method="probabilistic") == [
        refuses(
            version,
            'speculative_config.use_heterogeneous_vocab = true with draft_sample_method = "probabilistic"',
            "use_heterogeneous_vocab currently only supports greedy draft sampling. Set draft_sample_method='greedy' "
            "(the default) or omit it.",
        )
    ]
    assert _found(check, version, rule, **draft) == []


def test_heterogeneous_vocabularies_need_the_full_draft_logits(check: Check) -> None:
    rule = "speculative-heterogeneous-vocab"
    draft = {"model": "org/small-draft", "num_speculative_tokens": 2, "use_heterogeneous_vocab": True}
    assert _found(check, "0.33.0", rule, **draft, use_local_argmax_reduction=True) == [
        refuses(
            "0.33.0",
            "speculative_config.use_heterogeneous_vocab = true with use_local_argmax_reduction = true",
            "use_heterogeneous_vocab is not compatible with use_local_argmax_reduction because token-level "
            "intersection requires the full draft logits.",
        )
    ]
    assert _found(check, "0.32.0", rule, **draft, use_local_argmax_reduction=True) == []


def test_fly_verification(check: Check) -> None:
    rule = "speculative-fly"
    fly = {**NGRAM, "rejection_sample_method": "fly"}
    cases = [
        (
            {**fly, "num_speculative_tokens": 1},
            'speculative_config.rejection_sample_method = "fly" with num_speculative_tokens = 1',
            "FLy requires num_speculative_tokens to be at least 2.",
        ),
        (
            {**fly, "fly_window_size": 2},
            "speculative_config.fly_window_size = 2 with num_speculative_tokens = 2",
            "FLy requires fly_window_size to be smaller than num_speculative_tokens.",
        ),
        (
            {**fly, "method": "extract_hidden_states"},
            'speculative_config.rejection_sample_method = "fly" with method = "extract_hidden_states"',
            "FLy is not compatible with method='extract_hidden_states', which does not perform speculative decoding.",
        ),
    ]
    for table, what, message in cases:
        assert _found(check, "0.33.0", rule, **table) == [refuses("0.33.0", what, message)], table
    assert _found(check, "0.33.0", rule, **fly, fly_window_size=1) == []
    assert _found(check, "0.33.0", rule, **fly) == []


MTP = {"method": "mtp", "num_speculative_tokens": 2}


@pytest.mark.parametrize("version", _since("0.28.0"))
def test_options_of_another_method(check: Check, version: str) -> None:
    rule = "speculative-method-option"
    assert _found(check, version, rule, **MTP, dspark_draft_topk=4) == [
        refuses(
            version,
            'speculative_config.dspark_draft_topk = 4 with method = "mtp"',
            "dspark_draft_topk is only supported by DSpark",
        )
    ]
    assert _found(check, version, rule, method="dspark", num_speculative_tokens=2, dspark_draft_topk=4) == []
    # the n-gram methods never reach the draft-model branch that checks it
    assert _found(check, version, rule, **NGRAM, dspark_draft_topk=4) == []


def test_xpress_options_need_dflash(check: Check) -> None:
    rule = "speculative-method-option"
    assert _found(check, "0.33.0", rule, **MTP, xpress_topc=8) == [
        refuses(
            "0.33.0",
            'speculative_config.xpress_topc = 8 with method = "mtp"',
            "xpress_topc is only supported by XPress",
        )
    ]
    dflash = {"method": "dflash", "model": "org/dflash-draft", "num_speculative_tokens": 2, "xpress_topc": 8}
    assert _found(check, "0.33.0", rule, **dflash) == []


@pytest.mark.parametrize("version", RELEASES)
def test_the_drafts_tensor_parallelism(check: Check, version: str) -> None:
    layer = files(speculative_config={**MTP, "draft_tensor_parallel_size": 2}, tensor_parallel_size=4)
    assert messages(check(layer, version=version, rule="speculative-draft-tensor-parallel")) == [
        refuses(
            version,
            "speculative_config.draft_tensor_parallel_size = 2 with tensor_parallel_size = 4",
            "speculative_draft_tensor_parallel_size=2 cannot be other value than 1 or target model "
            "tensor_parallel_size",
        )
    ]
    for draft_tp in (1, 4):
        layer = files(speculative_config={**MTP, "draft_tensor_parallel_size": draft_tp}, tensor_parallel_size=4)
        assert check(layer, version=version, rule="speculative-draft-tensor-parallel") == []


@pytest.mark.parametrize("version", RELEASES)
def test_suffix_decoding_bounds(check: Check, version: str) -> None:
    rule = "speculative-suffix-decoding"
    cases = [
        ("suffix_decoding_max_tree_depth", 0, "suffix_decoding_max_tree_depth=0 must be >= 1"),
        ("suffix_decoding_max_cached_requests", -1, "suffix_decoding_max_cached_requests=-1 must be >= 0"),
        ("suffix_decoding_max_spec_factor", -1, "suffix_decoding_max_spec_factor=-1.0 must be >= 0"),
        ("suffix_decoding_min_token_prob", 1.5, "suffix_decoding_min_token_prob=1.5 must be in [0, 1]"),
    ]
    for key, value, message in cases:
        table = {"method": "suffix", "num_speculative_tokens": 4, key: value}
        what = f"speculative_config.{key} = {value} with suffix decoding"
        assert _found(check, version, rule, **table) == [refuses(version, what, message)], key
    fine = {"method": "suffix", "suffix_decoding_max_tree_depth": 1, "suffix_decoding_min_token_prob": 1}
    assert _found(check, version, rule, **fine) == []
    assert _found(check, version, rule, **NGRAM, suffix_decoding_max_tree_depth=0) == []
