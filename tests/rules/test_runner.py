"""model-runner-v2-unsupported, per release."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files
from tests.rules.layers import RELEASES, at_least, layer


@pytest.mark.parametrize("version", RELEASES)
def test_model_runner_v2_requested_for_ngram(check: Check, version: str) -> None:
    spec = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4}
    text = layer("Qwen3ForCausalLM", env={"VLLM_USE_V2_MODEL_RUNNER": "1"}, speculative_config=spec)
    found = check({"s.toml": text}, version=version)
    if at_least(version, "0.32.0"):
        assert found == []  # V2 runs ngram from 0.32.0
        return
    feature = (
        "ngram/ngram_gpu speculative decoding" if not at_least(version, "0.30.0") else "speculative method 'ngram'"
    )
    assert messages(found) == [
        f'VLLM_USE_V2_MODEL_RUNNER = "1" asks for Model Runner V2 with {feature}; vLLM {version} refuses to start: '
        f'"Model Runner V2 does not yet support: {feature}"'
    ]
    unset = layer("Qwen3ForCausalLM", speculative_config=spec)
    assert check({"s.toml": unset}, version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_prefill_context_parallelism_forces_model_runner_v2_before_0_29(check: Check, version: str) -> None:
    found = check(
        files("LlamaForCausalLM", prefill_context_parallel_size=2, enable_prompt_embeds=True), version=version
    )
    found = [f for f in found if f.rule == "model-runner-v2-unsupported"]
    if at_least(version, "0.29.0"):
        assert found == []  # V2 runs prefill context parallelism from 0.29.0, and picks V1 for prompt embeds
        return
    features = "prefill context parallelism, prompt embeds"
    assert messages(found) == [
        f"prefill_context_parallel_size = 2 makes vLLM {version} pick Model Runner V2 with {features}; vLLM "
        f'{version} refuses to start: "Model Runner V2 does not yet support: {features}"'
    ]
    assert [loc.key for loc in found[0].locations] == [
        "serve.prefill_context_parallel_size",
        "serve.enable_prompt_embeds",
    ]
    # an MLA model (Kimi Linear) runs prefill context parallelism on V2; prompt embeds it still lacks
    kimi = check(files("KimiLinearForCausalLM", prefill_context_parallel_size=2), version=version)
    assert [f for f in kimi if f.rule == "model-runner-v2-unsupported"] == []
    kimi = check(
        files("KimiLinearForCausalLM", prefill_context_parallel_size=2, enable_prompt_embeds=True), version=version
    )
    assert [f.message.split('"')[-2] for f in kimi if f.rule == "model-runner-v2-unsupported"] == [
        "Model Runner V2 does not yet support: prompt embeds"
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_prefill_context_parallelism_on_model_runner_v1_before_0_29(check: Check, version: str) -> None:
    found = check(
        files("Qwen3ForCausalLM", prefill_context_parallel_size=2, env={"VLLM_USE_V2_MODEL_RUNNER": "0"}),
        version=version,
        rule="prefill-context-parallel-v1",
    )
    if at_least(version, "0.29.0"):
        assert found == []
        return
    assert messages(found) == [
        f'prefill_context_parallel_size = 2 with VLLM_USE_V2_MODEL_RUNNER = "0" (Model Runner V1); vLLM {version} '
        'refuses to start: "Prefill context parallelism requires Model Runner V2. Remove VLLM_USE_V2_MODEL_RUNNER=0."'
    ]
    assert (
        check(
            files("Qwen3ForCausalLM", prefill_context_parallel_size=2),
            version=version,
            rule="prefill-context-parallel-v1",
        )
        == []
    )


V1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}


def _v1_refusal(version: str, why: str, features: str) -> str:
    return f'{why} with {features}; vLLM {version} refuses to start: "Model Runner V1 does not support: {features}"'


@pytest.mark.parametrize("version", RELEASES)
def test_model_runner_v1_refuses_what_only_v2_runs(check: Check, version: str) -> None:
    rule = "model-runner-v1-unsupported"
    both = files(env=V1, enable_batch_sharded_sampling=True, prefill_context_parallel_size=2)
    found = check(both, version=version, rule=rule)
    if not at_least(version, "0.29.0"):
        assert found == []
        return
    assert messages(found) == [
        _v1_refusal(
            version,
            'VLLM_USE_V2_MODEL_RUNNER = "0" asks for Model Runner V1',
            "prefill context parallel, batch-sharded sampling",
        )
    ]
    assert check(files(env=V1), version=version) == []
    # on Model Runner V2 (vLLM's choice when VLLM_USE_V2_MODEL_RUNNER is unset) the same options pass this check
    assert check(files(enable_batch_sharded_sampling=True), version=version, rule=rule) == []


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0"])
def test_model_runner_v1_picked_for_ngram_refuses_adaptive_verification(check: Check, version: str) -> None:
    spec = {
        "method": "ngram",
        "num_speculative_tokens": 2,
        "prompt_lookup_max": 4,
        "enable_adaptive_verification": True,
    }
    found = check(files(speculative_config=spec), version=version, rule="model-runner-v1-unsupported")
    why = f"speculative method 'ngram' keeps vLLM {version} on Model Runner V1"
    assert messages(found) == [_v1_refusal(version, why, "adaptive draft verification")]


@pytest.mark.parametrize("version", ["0.31.0", "0.32.0"])
def test_model_runner_v1_refuses_pipeline_parallelism_with_async_scheduling(check: Check, version: str) -> None:
    """(0.33.0 lists it too, but refuses explicit async scheduling on V1 with pipeline parallelism earlier, in
    `__post_init__`'s async scheduling checks.)"""
    rule = "model-runner-v1-unsupported"
    found = check(files(env=V1, pipeline_parallel_size=2, async_scheduling=True), version=version, rule=rule)
    assert messages(found) == [
        _v1_refusal(
            version,
            'VLLM_USE_V2_MODEL_RUNNER = "0" asks for Model Runner V1',
            "pipeline parallelism with async scheduling",
        )
    ]
    # left unset, vLLM turns async scheduling off for V1 with pipeline parallelism
    assert check(files(env=V1, pipeline_parallel_size=2), version=version, rule=rule) == []


def test_model_runner_v1_leaves_dflash_drafts_to_vllm(check: Check) -> None:
    """Part of the list depends on the DFlash draft checkpoint (sliding layers, candidate heads)."""
    spec = {"method": "dflash", "model": "org/draft", "num_speculative_tokens": 2}
    layer_ = files(env=V1, enable_batch_sharded_sampling=True, speculative_config=spec)
    assert check(layer_, version="0.33.0", rule="model-runner-v1-unsupported") == []
