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


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_lora_needs_room_for_every_sequences_draft_tokens(check: Check, version: str) -> None:
    rule = "speculative-lora-batched-tokens"
    spec = {"method": "ngram", "num_speculative_tokens": 2}
    layer = files(speculative_config=spec, enable_lora=True, max_num_seqs=8, max_num_batched_tokens=16)
    assert messages(check(layer, version=version, rule=rule)) == [
        refuses(
            version,
            "enable_lora with max_num_batched_tokens = 16 below max_num_seqs = 8 x (num_speculative_tokens = 2 + 1) "
            "= 24",
            "Consider increasing max_num_batched_tokens or decreasing num_speculative_tokens",
        )
    ]
    layer = files(speculative_config=spec, enable_lora=True, max_num_seqs=8, max_num_batched_tokens=24)
    assert check(layer, version=version, rule=rule) == []
    layer = files(speculative_config=spec, max_num_seqs=8, max_num_batched_tokens=16)
    assert check(layer, version=version, rule=rule) == []


ADAPTIVE = {"method": "ngram", "num_speculative_tokens": 2, "enable_adaptive_verification": True}


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.33.0"])
def test_adaptive_verification_with_lora(check: Check, version: str) -> None:
    rule = "speculative-adaptive-engine"
    assert messages(check(files(speculative_config=ADAPTIVE, enable_lora=True), version=version, rule=rule)) == [
        refuses(
            version,
            "speculative_config.enable_adaptive_verification = true with enable_lora",
            "Adaptive verification is not currently compatible with LoRA",
        )
    ]
    assert check(files(speculative_config=ADAPTIVE), version=version, rule=rule) == []


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("0.29.0", "Adaptive verification is not currently compatible with enforce_eager/cudagraph_mode=none"),
        (
            "0.33.0",
            "Adaptive verification requires full CUDA graphs. Use cudagraph mode FULL, FULL_DECODE_ONLY, or "
            "FULL_AND_PIECEWISE, or disable adaptive verification.",
        ),
    ],
)
def test_adaptive_verification_needs_cuda_graphs(check: Check, version: str, message: str) -> None:
    rule = "speculative-adaptive-engine"
    assert messages(check(files(speculative_config=ADAPTIVE, enforce_eager=True), version=version, rule=rule)) == [
        refuses(version, "speculative_config.enable_adaptive_verification = true with enforce_eager = true", message)
    ]
    piecewise = files(speculative_config=ADAPTIVE, compilation_config={"cudagraph_mode": "PIECEWISE"})
    assert [bool(check(piecewise, version=v, rule=rule)) for v in ("0.29.0", "0.30.0")] == [False, True]
    full = files(speculative_config=ADAPTIVE, compilation_config={"cudagraph_mode": "FULL_AND_PIECEWISE"})
    assert check(full, version=version, rule=rule) == []


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.33.0"])
def test_adaptive_verification_with_pipeline_parallelism(check: Check, version: str) -> None:
    rule = "speculative-adaptive-engine"
    found = check(files(speculative_config=ADAPTIVE, pipeline_parallel_size=2), version=version, rule=rule)
    assert messages(found) == [
        refuses(
            version,
            "speculative_config.enable_adaptive_verification = true with pipeline_parallel_size = 2",
            "Adaptive verification is not currently compatible with pipeline parallelism",
        )
    ]
    # vLLM refuses eager execution first (it checks pipeline parallelism only once the CUDA graphs are full)
    eager = check(files(speculative_config=ADAPTIVE, pipeline_parallel_size=2, enforce_eager=True), version=version)
    assert [f.message.split("; ")[0] for f in eager if f.rule == rule] == [
        "speculative_config.enable_adaptive_verification = true with enforce_eager = true"
    ]
    assert check(files(speculative_config=ADAPTIVE, pipeline_parallel_size=1), version=version, rule=rule) == []
