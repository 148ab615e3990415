"""Options vLLM refuses for the model served: nvfp4 KV cache with MLA, offline data parallelism (rules/modelfit.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages, no_config, not_checked
from tests.rules.crossfield import files, refuses
from tests.rules.layers import KIMI, LLAMA, NEMOTRON, RELEASES, at_least

NVFP4_MLA_027 = (
    "nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) backends. Please use a different "
    "--kv-cache-dtype (e.g., 'fp8' or 'auto') for MLA models such as DeepSeek."
)
NVFP4_MLA_030 = (
    "nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) backends. Please use a different "
    "--kv-cache-dtype (e.g., 'fp8', 'auto', or 'nvfp4_ds_mla' with a sparse MLA backend) for MLA models such as "
    "DeepSeek."
)
OFFLINE_DP = "Offline data parallel mode is not supported/useful for dense models."


@pytest.mark.parametrize("version", RELEASES)
def test_an_nvfp4_kv_cache_on_an_mla_model(check: Check, version: str) -> None:
    found = check(files(KIMI, kv_cache_dtype="nvfp4"), version=version, rule="nvfp4-kv-cache-mla")
    message = NVFP4_MLA_030 if at_least(version, "0.30.0") else NVFP4_MLA_027
    assert messages(found) == [
        refuses(version, 'kv_cache_dtype = "nvfp4" for a model with multi-head latent attention', message)
    ]
    assert [loc.key for loc in found[0].locations] == ["serve.kv_cache_dtype", "model.config"]
    assert found[0].fix == 'set kv_cache_dtype = "fp8" or "auto"' + (
        ' (or "nvfp4_ds_mla" with a sparse MLA backend)' if at_least(version, "0.30.0") else ""
    )
    # not MLA: a Llama model, or Kimi Linear with MLA switched off
    assert check(files(LLAMA, kv_cache_dtype="nvfp4"), version=version, rule="nvfp4-kv-cache-mla") == []
    no_mla = files(KIMI, env={"VLLM_MLA_DISABLE": "1"}, kv_cache_dtype="nvfp4")
    assert check(no_mla, version=version, rule="nvfp4-kv-cache-mla") == []
    assert check(files(KIMI, kv_cache_dtype="fp8"), version=version, rule="nvfp4-kv-cache-mla") == []


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.33.0"])
def test_the_other_nvfp4_layouts_from_0_30(check: Check, version: str) -> None:
    found = check(files(KIMI, kv_cache_dtype="nvfp4_4over6"), version=version, rule="nvfp4-kv-cache-mla")
    if at_least(version, "0.30.0"):
        assert [f.rule for f in found] == ["nvfp4-kv-cache-mla"]
        assert check(files(KIMI, kv_cache_dtype="nvfp4_ds_mla"), version=version, rule="nvfp4-kv-cache-mla") == []
    else:
        assert found == []  # 0.29.0 checks "nvfp4" alone


def test_an_nvfp4_kv_cache_without_the_config_json(check: Check) -> None:
    found = check(files(KIMI, with_config=False, kv_cache_dtype="nvfp4"), rule="model-facts-missing")
    assert [f.message for f in found] == [no_config("dummy/KimiLinearForCausalLM")]
    assert not_checked(found) == ['kv_cache_dtype = "nvfp4" against the model\'s attention (MLA or not)']


@pytest.mark.parametrize("version", RELEASES)
def test_offline_data_parallelism_of_a_dense_model(check: Check, version: str) -> None:
    found = check(files(LLAMA, env={"VLLM_DP_SIZE": "2"}), version=version, rule="offline-data-parallel-dense")
    assert messages(found) == [refuses(version, 'env VLLM_DP_SIZE = "2" for a model without experts', OFFLINE_DP)]
    assert [loc.key for loc in found[0].locations] == ["env.VLLM_DP_SIZE", "model.config"]
    assert found[0].fix == "remove VLLM_DP_SIZE; to run data-parallel replicas of a dense model, set data_parallel_size"
    # a model with experts, VLLM_DP_SIZE = 1, or a data-parallel size in the options (vLLM then ignores the variable)
    moe = files(NEMOTRON, env={"VLLM_DP_SIZE": "2"})
    assert check(moe, version=version, rule="offline-data-parallel-dense") == []
    one = files(LLAMA, env={"VLLM_DP_SIZE": "1"})
    assert check(one, version=version, rule="offline-data-parallel-dense") == []
    online = files(LLAMA, env={"VLLM_DP_SIZE": "2"}, data_parallel_size=2)
    assert check(online, version=version, rule="offline-data-parallel-dense") == []


def test_offline_data_parallelism_without_the_config_json(check: Check) -> None:
    found = check(files(LLAMA, with_config=False, env={"VLLM_DP_SIZE": "4"}), rule="model-facts-missing")
    assert [f.message for f in found] == [no_config("dummy/LlamaForCausalLM")]
    assert not_checked(found) == ['VLLM_DP_SIZE = "4" against the model\'s experts']
