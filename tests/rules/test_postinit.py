"""Option pairs `VllmConfig.__post_init__` refuses (rules/postinit.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES

FAST_PREFILL_EAGLE = (
    "Fast prefill optimization for KV sharing is not compatible with EAGLE as EAGLE requires correct logits for all "
    "tokens while fast prefill gives incorrect logits for prompt tokens."
)
MTP = {"method": "mtp", "num_speculative_tokens": 1}
MIMO = {"architectures": ["MiMoForCausalLM"], "num_nextn_predict_layers": 1}


@pytest.mark.parametrize("version", RELEASES)
def test_kv_sharing_fast_prefill_refuses_eagle_style_drafting(check: Check, version: str) -> None:
    found = check(files(config=MIMO, kv_sharing_fast_prefill=True, speculative_config=MTP), version=version)
    assert messages(found) == [
        refuses(version, 'kv_sharing_fast_prefill = true with speculative method "mtp"', FAST_PREFILL_EAGLE)
    ]
    assert found[0].rule == "kv-sharing-fast-prefill-eagle"
    ngram = files(kv_sharing_fast_prefill=True, speculative_config={"method": "ngram", "num_speculative_tokens": 1})
    assert check(ngram, version=version) == []
    assert check(files(config=MIMO, speculative_config=MTP), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_trace_replay_needs_model_runner_v2(check: Check, version: str) -> None:
    on_v1 = files(enable_trace_replay=True, env={"VLLM_USE_V2_MODEL_RUNNER": "0"})
    if version < "0.29.0":
        assert check(on_v1, version=version, rule="trace-replay-v1") == []
        return
    found = check(on_v1, version=version)
    assert messages(found) == [
        refuses(version, "enable_trace_replay = true on Model Runner V1", "trace replay requires Model Runner V2")
    ]
    assert found[0].rule == "trace-replay-v1"
    assert check(files(enable_trace_replay=True), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_proton_graph_attribution_needs_model_runner_v2(check: Check, version: str) -> None:
    proton = {"profiler": "proton", "proton_profiler_dir": "/tmp/proton", "proton_graph_attribution": True}
    on_v1 = files(profiler_config=proton, env={"VLLM_USE_V2_MODEL_RUNNER": "0"})
    if version < "0.30.0":
        assert check(on_v1, version=version, rule="proton-graph-attribution-v1") == []
        return
    found = check(on_v1, version=version)
    assert messages(found) == [
        refuses(
            version,
            "profiler_config.proton_graph_attribution = true on Model Runner V1",
            "Proton CUDA graph attribution requires the V2 model runner.",
        )
    ]
    assert check(files(profiler_config=proton), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_explicit_async_scheduling_refuses_ngram_and_unpadded_drafts(check: Check, version: str) -> None:
    ngram = files(async_scheduling=True, speculative_config={"method": "ngram", "num_speculative_tokens": 2})
    unpadded = files(
        config=MIMO, async_scheduling=True, speculative_config={**MTP, "disable_padded_drafter_batch": True}
    )
    if version >= "0.33.0":
        assert check(ngram, version=version, rule="async-scheduling-speculative") == []
        return
    kinds = "EAGLE/MTP/Draft Model/NGram GPU/DSpark" + ("/DFlash" if version >= "0.31.0" else "")
    found = check(ngram, version=version)
    assert messages(found) == [
        refuses(
            version,
            'async_scheduling = true with speculative method "ngram"',
            f"Currently, async scheduling is only supported with {kinds} kind of speculative decoding",
        )
    ]
    assert found[0].rule == "async-scheduling-speculative"
    assert messages(check(unpadded, version=version)) == [
        refuses(
            version,
            "async_scheduling = true with speculative_config.disable_padded_drafter_batch = true",
            "Async scheduling is not compatible with disable_padded_drafter_batch=True.",
        )
    ]
    default = files(speculative_config={"method": "ngram", "num_speculative_tokens": 2})
    assert check(default, version=version) == []
    assert check(files(config=MIMO, async_scheduling=True, speculative_config=MTP), version=version) == []
