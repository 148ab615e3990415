"""Async scheduling, the speculative token budget, CUDA graph capture sizes and Engram microbatching
(rules/scheduling.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES

MTP = {"method": "mtp", "num_speculative_tokens": 2}
MIMO = {"architectures": ["MiMoForCausalLM"], "num_nextn_predict_layers": 1}
NGRAM = {"method": "ngram", "num_speculative_tokens": 1, "prompt_lookup_max": 3}
V1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
ENGRAM = {"architectures": ["DeepseekV41ForCausalLM"], "engram_layer_ids": [0]}


@pytest.mark.parametrize("version", RELEASES)
def test_async_scheduling_v1_runner_ngram(check: Check, version: str) -> None:
    on_v1 = files(async_scheduling=True, speculative_config=NGRAM, env=V1)
    found = check(on_v1, version=version, rule="async-scheduling-v1-runner")
    if version < "0.33.0":
        assert found == []  # rules/postinit.py's async-scheduling-speculative words it there
        return
    assert messages(found) == [
        refuses(
            version,
            "async_scheduling = true on Model Runner V1 with ngram-based speculative decoding",
            "Async scheduling is not supported by the V1 model runner with ngram-based speculative decoding.",
        )
    ]
    assert check(files(async_scheduling=True, speculative_config=NGRAM), version=version) == []  # Model Runner V2
    assert check(files(speculative_config=NGRAM, env=V1), version=version) == []  # vLLM turns async off itself


def test_async_scheduling_v1_runner_pipeline_parallelism(check: Check) -> None:
    found = check(files(async_scheduling=True, pipeline_parallel_size=2, env=V1), rule="async-scheduling-v1-runner")
    assert messages(found) == [
        refuses(
            "0.33.0",
            "async_scheduling = true on Model Runner V1 with pipeline parallelism",
            "Async scheduling is not supported by the V1 model runner with pipeline parallelism.",
        )
    ]
    assert check(files(async_scheduling=True, env=V1), rule="async-scheduling-v1-runner") == []


@pytest.mark.parametrize("version", RELEASES)
def test_async_scheduling_refuses_the_ray_v1_executor(check: Check, version: str) -> None:
    ray_v1 = {"VLLM_USE_RAY_V2_EXECUTOR_BACKEND": "0"}
    stack = files(async_scheduling=True, distributed_executor_backend="ray", env=ray_v1)
    found = check(stack, version=version, rule="async-scheduling-executor")
    if version >= "0.33.0":
        assert found == []  # 0.33.0 has only the Ray V2 executor
        return
    assert messages(found) == [
        refuses(
            version,
            'async_scheduling = true with distributed_executor_backend = "ray" and VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0 '
            "(the Ray V1 executor)",
            "`ray` does not support async scheduling yet.",
        )
    ]
    ray_v2 = files(async_scheduling=True, distributed_executor_backend="ray")
    assert check(ray_v2, version=version, rule="async-scheduling-executor") == []


@pytest.mark.parametrize("version", RELEASES)
def test_token_budget_must_exceed_the_drafting_slots(check: Check, version: str) -> None:
    small = files(config=MIMO, max_num_batched_tokens=2, max_num_seqs=2, speculative_config=MTP)
    found = check(small, version=version, rule="speculative-scheduled-tokens")
    if version < "0.33.0":
        assert found == []  # MTP adds no drafting slots before 0.33.0
    else:
        assert messages(found) == [
            refuses(
                version,
                "max_num_batched_tokens 2 with 2 drafting slots per request",
                "VllmConfig does not have enough slots to schedule a token and support the speculative decoding "
                "settings. Got max_num_batched_tokens=2 and num_lookahead_tokens=2.",
            )
        ]
    roomy = files(config=MIMO, max_num_batched_tokens=3, max_num_seqs=2, speculative_config=MTP)
    assert check(roomy, version=version, rule="speculative-scheduled-tokens") == []


@pytest.mark.parametrize("version", RELEASES)
def test_parallel_drafting_slots_by_release(check: Check, version: str) -> None:
    spec = {**MTP, "num_speculative_tokens": 5, "parallel_drafting": True}
    found = check(
        files(config=MIMO, max_num_batched_tokens=4, max_num_seqs=4, speculative_config=spec),
        version=version,
        rule="speculative-scheduled-tokens",
    )
    if version < "0.28.0":
        what = "max_num_batched_tokens 4 less the drafting slots with speculative decoding"
        message = (
            "max_num_scheduled_tokens is set to -12 based on the speculative decoding settings, which does not "
            "allow any tokens to be scheduled. Increase max_num_batched_tokens to accommodate the additional draft "
            "token slots, or decrease num_speculative_tokens or max_num_seqs."
        )
    elif version < "0.33.0":
        what = "max_num_batched_tokens 4 with 4 drafting slots per request"
        message = (
            "VllmConfig does not have enough slots to schedule a token and support the speculative decoding "
            "settings. Got max_num_batched_tokens=4 and scheduled_token_delta=4."
        )
    else:
        what = "max_num_batched_tokens 4 with 5 drafting slots per request"
        message = (
            "VllmConfig does not have enough slots to schedule a token and support the speculative decoding "
            "settings. Got max_num_batched_tokens=4 and num_lookahead_tokens=5."
        )
    assert messages(found) == [refuses(version, what, message)]
    enough = files(config=MIMO, max_num_batched_tokens=64, max_num_seqs=4, speculative_config=spec)
    assert check(enough, version=version, rule="speculative-scheduled-tokens") == []


@pytest.mark.parametrize("version", ["0.27.0", "0.28.0"])
def test_written_max_num_scheduled_tokens(check: Check, version: str) -> None:
    spec = {**MTP, "num_speculative_tokens": 3, "parallel_drafting": True}
    full = files(
        config=MIMO, max_num_batched_tokens=64, max_num_seqs=4, max_num_scheduled_tokens=64, speculative_config=spec
    )
    found = check(full, version=version, rule="speculative-scheduled-tokens")
    if version == "0.27.0":
        assert messages(found) == [
            refuses(
                version,
                "max_num_scheduled_tokens = 64 with max_num_batched_tokens 64 and 8 drafting slots",
                "VllmConfig received max_num_scheduled_tokens but it does not have enough slots to support the "
                "speculative decoding settings. It should be greater by at least 8, but got "
                "max_num_batched_tokens=64 and max_num_scheduled_tokens=64.",
            )
        ]
    else:
        assert found == []  # 0.28.0 compares the budget with one request's slots only
    zero = files(config=MIMO, max_num_scheduled_tokens=0, speculative_config=MTP)
    why = "num_speculative_tokens or max_num_seqs" if version == "0.27.0" else "num_speculative_tokens"
    assert messages(check(zero, version=version, rule="speculative-scheduled-tokens")) == [
        refuses(
            version,
            "max_num_scheduled_tokens = 0 with speculative decoding",
            "max_num_scheduled_tokens is set to 0 based on the speculative decoding settings, which does not allow "
            f"any tokens to be scheduled. Increase max_num_batched_tokens to accommodate the additional draft token "
            f"slots, or decrease {why}.",
        )
    ]
    fits = files(
        config=MIMO, max_num_batched_tokens=64, max_num_seqs=4, max_num_scheduled_tokens=56, speculative_config=spec
    )
    assert check(fits, version=version, rule="speculative-scheduled-tokens") == []


@pytest.mark.parametrize("version", RELEASES)
def test_max_cudagraph_capture_size_must_match_the_written_sizes(check: Check, version: str) -> None:
    cfg = {"cudagraph_capture_sizes": [1, 2, 4], "max_cudagraph_capture_size": 8}
    found = check(files(compilation_config=cfg), version=version)
    assert messages(found) == [
        refuses(
            version,
            "max_cudagraph_capture_size = 8 with cudagraph_capture_sizes up to 4",
            "customized max_cudagraph_capture_size(=8) should be consistent with the max value of "
            "cudagraph_capture_sizes(=4)",
        )
    ]
    assert found[0].rule == "cudagraph-capture-size-mismatch"
    assert (
        found[0].fix
        == "set max_cudagraph_capture_size = 4, or remove it (vLLM derives it from cudagraph_capture_sizes)"
    )
    assert check(files(compilation_config={**cfg, "max_cudagraph_capture_size": 4}), version=version) == []
    assert check(files(compilation_config=cfg, enforce_eager=True), version=version) == []  # no CUDA graphs


def test_capture_sizes_above_the_token_budget_are_dropped_first(check: Check) -> None:
    stack = files(
        max_num_batched_tokens=512,
        max_num_seqs=4,
        cudagraph_capture_sizes=[1, 2, 4, 1024],
        max_cudagraph_capture_size=1024,
    )
    assert messages(check(stack, rule="cudagraph-capture-size-mismatch")) == [
        refuses(
            "0.33.0",
            "max_cudagraph_capture_size = 1024 with cudagraph_capture_sizes up to 4 (sizes above "
            "max_num_batched_tokens 512 are dropped)",
            "customized max_cudagraph_capture_size(=1024) should be consistent with the max value of "
            "cudagraph_capture_sizes(=4)",
        )
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_engram_deepseek_v41_refuses_microbatching(check: Check, version: str) -> None:
    dbo = files(config=ENGRAM, enable_dbo=True, enable_expert_parallel=True, all2all_backend="deepep_low_latency")
    found = check(dbo, version=version, rule="engram-microbatching")
    if version < "0.30.0":
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            "enable_dbo = true for a DeepSeek-V4.1 model with Engram layers",
            "DeepSeek V4.1 Engram does not support DBO or microbatching. Disable --enable-dbo and set --ubatch-size "
            "to 0.",
        )
    ]
    no_layers = files(config={**ENGRAM, "engram_layer_ids": []}, enable_dbo=True, enable_expert_parallel=True)
    assert check(no_layers, version=version, rule="engram-microbatching") == []
    assert check(files(config=ENGRAM), version=version, rule="engram-microbatching") == []


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_zero_scheduled_tokens_is_left_to_the_field_constraint(check: Check, version: str) -> None:
    found = check(files(config=MIMO, max_num_scheduled_tokens=0, speculative_config=MTP), version=version)
    assert [f.rule for f in found] == ["invalid-value"]
