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
