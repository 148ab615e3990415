"""Watermarking with speculative decoding (rules/specvllm.py): whole messages, per release that differs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses

RULE = "speculative-watermarking"
MARK = {"key": 7}
EAGLE = {
    "method": "eagle3",
    "model": "org/eagle3-head",
    "num_speculative_tokens": 2,
    "draft_sample_method": "probabilistic",
}


def _found(check: Check, version: str, spec: dict[str, Any], mark: dict[str, Any] | None = None) -> list[str]:
    layer = files(speculative_config=spec, watermark_config=mark or MARK)
    return messages(check(layer, version=version, rule=RULE))


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_watermarking_needs_probabilistic_standard_sampling(check: Check, version: str) -> None:
    assert _found(check, version, {**EAGLE, "draft_sample_method": "greedy"}) == [
        refuses(
            version,
            'watermark_config with speculative decoding and draft_sample_method = "greedy"',
            "Speculative decoding with watermarking requires draft_sample_method='probabilistic'.",
        )
    ]
    assert _found(check, version, {**EAGLE, "rejection_sample_method": "block"}) == [
        refuses(
            version,
            'watermark_config with speculative decoding and rejection_sample_method = "block"',
            "Speculative decoding with watermarking requires rejection_sample_method='standard'.",
        )
    ]
    assert _found(check, version, {**EAGLE, "parallel_drafting": True}) == [
        refuses(
            version,
            'watermark_config with speculative_config.parallel_drafting = true and method = "eagle3"',
            "Parallel speculative drafting is not supported with watermarking.",
        )
    ]


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("0.30.0", "Watermarking supports only autoregressive model-based speculative decoding."),
        ("0.32.0", "Watermarking supports only autoregressive model-based speculative decoding."),
        ("0.33.0", "Watermarking supports only dflash, dspark, eagle, eagle3 and mtp speculative decoding."),
    ],
)
def test_watermarking_needs_a_model_based_method(check: Check, version: str, message: str) -> None:
    ngram = {"method": "ngram", "num_speculative_tokens": 2, "draft_sample_method": "probabilistic"}
    assert _found(check, version, ngram) == [
        refuses(version, 'watermark_config with speculative_config.method = "ngram"', message)
    ]
    dflash, dual = {**EAGLE, "method": "dflash"}, {**MARK, "algorithm": "dual_key_gumbel"}
    assert [bool(_found(check, v, dflash, dual)) for v in ("0.32.0", "0.33.0")] == [True, False]


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_the_watermarking_algorithm_must_cover_draft_tokens(check: Check, version: str) -> None:
    assert _found(check, version, EAGLE) == [
        refuses(
            version,
            'watermark_config.algorithm = "gumbel" with speculative decoding',
            "The 'gumbel' watermarking algorithm does not support speculative decoding. Set "
            "allow_target_only_watermarking=true to leave draft tokens unwatermarked.",
        )
    ]
    assert _found(check, version, EAGLE, {**MARK, "allow_target_only_watermarking": True}) == []
    assert _found(check, version, EAGLE, {**MARK, "algorithm": "dual_key_gumbel"}) == []


def test_watermarking_without_speculative_decoding(check: Check) -> None:
    assert messages(check(files(watermark_config=MARK), version="0.33.0", rule=RULE)) == []
