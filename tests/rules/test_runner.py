"""model-runner-v2-unsupported, per release."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
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
