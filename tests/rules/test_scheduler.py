"""Scheduler budgets against max_model_len and max_num_seqs, with vLLM's defaults (rules/scheduler.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages, no_config, not_checked
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least

BELOW_LEN = (
    "max_num_batched_tokens ({tokens}) is smaller than max_model_len ({mml}). This effectively limits the maximum "
    "sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
    "max_num_batched_tokens or decrease max_model_len."
)


@pytest.mark.parametrize("version", RELEASES)
def test_batched_tokens_below_the_length_without_chunked_prefill(check: Check, version: str) -> None:
    found = check(files(max_num_batched_tokens=100, enable_chunked_prefill=False), version=version)
    assert messages(found) == [
        refuses(
            version,
            "max_num_batched_tokens = 100 is below max_model_len 512 (from the model's config.json) with "
            "enable_chunked_prefill = false",
            BELOW_LEN.format(tokens=100, mml=512),
        )
    ]
    assert found[0].rule == "max-num-batched-tokens-model-len"
    assert check(files(max_num_batched_tokens=100), version=version) == []  # chunked prefill: any budget


def test_a_written_length_is_the_one_compared(check: Check) -> None:
    serve = {"max_model_len": 1024, "max_num_batched_tokens": 600, "enable_chunked_prefill": False}
    env = {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    found = check(files(env=env, **serve))
    assert messages(found) == [
        refuses(
            "0.33.0",
            "max_num_batched_tokens = 600 is below max_model_len = 1024 with enable_chunked_prefill = false",
            BELOW_LEN.format(tokens=600, mml=1024),
        )
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_batched_tokens_below_the_sequences(check: Check, version: str) -> None:
    found = check(files(max_num_seqs=1000, max_num_batched_tokens=512), version=version)
    assert messages(found) == [
        refuses(
            version,
            "max_num_batched_tokens = 512 is below max_num_seqs = 1000",
            "max_num_batched_tokens (512) must be greater than or equal to max_num_seqs (1000).",
        )
    ]
    assert found[0].rule == "max-num-batched-tokens-seqs"
    assert check(files(max_num_seqs=512, max_num_batched_tokens=512), version=version) == []


def test_the_default_budget_is_2048_tokens(check: Check) -> None:
    found = check(files(max_num_seqs=4096))
    # no GPU is declared, and on a GPU of 70 GiB or more the default budget (8192) would start it
    assert [f.rule for f in found] == ["hardware-unknown", "max-num-batched-tokens-seqs"]
    assert messages(found[1:]) == [
        refuses(
            "0.33.0",
            "max_num_batched_tokens 2048 (vLLM's default) is below max_num_seqs = 4096",
            "max_num_batched_tokens (2048) must be greater than or equal to max_num_seqs (4096).",
        )
    ]
    assert check(files(max_num_seqs=2048)) == []
    assert check(files(max_num_seqs=4096, performance_mode="throughput")) == []  # doubles the default to 4096


def test_the_default_budget_needs_no_config_json_with_chunked_prefill(check: Check) -> None:
    found = check(files(with_config=False, max_num_seqs=4096), rule="max-num-batched-tokens-seqs")
    assert len(found) == 1
    assert check(files(with_config=False, max_num_seqs=2048)) == []


def test_without_chunked_prefill_the_default_budget_follows_the_length(check: Check) -> None:
    config = {"max_position_embeddings": 8192}
    assert check(files(config=config, max_num_seqs=4096, enable_chunked_prefill=False)) == []
    found = check(files(with_config=False, max_num_seqs=4096, enable_chunked_prefill=False))
    assert [f.message for f in found] == [no_config("dummy/LlamaForCausalLM")]
    assert not_checked(found) == [
        "the scheduler budget (max_num_batched_tokens, max_num_seqs) with chunked prefill off against the model's length"
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_active_sequences_above_the_sequences(check: Check, version: str) -> None:
    if not at_least(version, "0.31.0"):
        found = check(files(max_num_active_seqs=300), version=version)
        assert [f.rule for f in found] == ["unknown-option"]
        return
    found = check(files(max_num_active_seqs=300), version=version)
    assert [f.rule for f in found] == ["hardware-unknown", "max-num-active-seqs"]  # 1024 sequences from 70 GiB
    assert messages(found[1:]) == [
        refuses(
            version,
            "max_num_active_seqs = 300 is above max_num_seqs 256 (vLLM's default)",
            "max_num_active_seqs (300) cannot be greater than max_num_seqs (256).",
        )
    ]
    assert check(files(max_num_active_seqs=200), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_long_prefill_threshold_above_the_length(check: Check, version: str) -> None:
    found = check(files(long_prefill_token_threshold=1024), version=version)
    assert messages(found) == [
        refuses(
            version,
            "long_prefill_token_threshold = 1024 is above max_model_len 512 (from the model's config.json)",
            "long_prefill_token_threshold (1024) cannot be greater than the max_model_len (512).",
        )
    ]
    assert found[0].rule == "long-prefill-token-threshold"
    assert check(files(long_prefill_token_threshold=512), version=version) == []
