"""Mamba block size against prefix caching, and a float KV-cache dtype against the model's (rules/cache.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages, no_config, not_checked
from tests.rules.crossfield import files, refuses
from tests.rules.layers import NEMOTRON, RELEASES, at_least

MAMBA_BLOCK = "--mamba-block-size can only be set with --enable-prefix-caching"


@pytest.mark.parametrize("version", RELEASES)
def test_mamba_block_size_without_prefix_caching(check: Check, version: str) -> None:
    found = check(files(NEMOTRON, mamba_block_size=256, enable_prefix_caching=False), version=version)
    assert messages(found) == [
        refuses(version, "mamba_block_size = 256 with enable_prefix_caching = false", MAMBA_BLOCK)
    ]
    assert found[0].rule == "mamba-block-size-prefix-caching"
    assert check(files(NEMOTRON, mamba_block_size=256, enable_prefix_caching=True), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_mamba_block_size_with_prefix_caching_left_to_vllm(check: Check, version: str) -> None:
    """0.27.x keeps prefix caching off by default for hybrid models."""
    found = check(files(NEMOTRON, mamba_block_size=256), version=version)
    if at_least(version, "0.28.0"):
        assert found == []
    else:
        assert messages(found) == [
            refuses(
                version,
                f"mamba_block_size = 256 with prefix caching off (vLLM {version}'s default for a NemotronHForCausalLM "
                "model)",
                MAMBA_BLOCK,
            )
        ]


def test_a_mamba_block_size_equal_to_max_model_len_counts_as_unset(check: Check) -> None:
    assert check(files(mamba_block_size=512, enable_prefix_caching=False)) == []
    found = check(files(mamba_block_size=256, enable_prefix_caching=False, max_model_len=256))
    assert found == []
    unknown = check(files(with_config=False, mamba_block_size=256, enable_prefix_caching=False))
    assert [f.message for f in unknown] == [no_config("dummy/LlamaForCausalLM")]
    assert not_checked(unknown) == ["mamba_block_size = 256 without prefix caching against max_model_len"]


@pytest.mark.parametrize("version", RELEASES)
def test_float_kv_cache_dtype_must_match_the_model(check: Check, version: str) -> None:
    found = check(files(kv_cache_dtype="float16"), version=version)
    if not at_least(version, "0.33.0"):
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            'kv_cache_dtype = "float16" with a model in bfloat16 (its config.json)',
            'kv_cache_dtype="float16" is incompatible with dtype="bfloat16". Please set `--kv-cache-dtype` to `auto` '
            "or `bfloat16`.",
        )
    ]
    assert found[0].rule == "kv-cache-dtype-model-dtype"
    assert found[0].fix == 'set kv_cache_dtype = "auto" or "bfloat16"'
    assert check(files(kv_cache_dtype="bfloat16"), version=version) == []


def test_float_kv_cache_dtype_against_a_written_dtype(check: Check) -> None:
    found = check(files(kv_cache_dtype="bfloat16", dtype="float32"))
    assert messages(found) == [
        refuses(
            "0.33.0",
            'kv_cache_dtype = "bfloat16" with a model in float32 (dtype = "float32")',
            'kv_cache_dtype="bfloat16" is incompatible with dtype="float32". Please set `--kv-cache-dtype` to `auto`.',
        )
    ]
    assert found[0].fix == 'set kv_cache_dtype = "auto"'
    assert check(files(kv_cache_dtype="float16", dtype="half")) == []


def test_a_float32_checkpoint_runs_in_bfloat16(check: Check) -> None:
    assert check(files(config={"torch_dtype": "float32"}, kv_cache_dtype="bfloat16")) == []
    assert check(files(config={"torch_dtype": None}, kv_cache_dtype="bfloat16")) == []
    found = check(files(config={"torch_dtype": None, "dtype": "float16"}, kv_cache_dtype="bfloat16"))
    assert [f.rule for f in found] == ["kv-cache-dtype-model-dtype"]
    unknown = check(files(with_config=False, kv_cache_dtype="float16"))
    assert [f.message for f in unknown] == [no_config("dummy/LlamaForCausalLM")]
    assert not_checked(unknown) == ['kv_cache_dtype = "float16" against the model\'s dtype']


@pytest.mark.parametrize("version", RELEASES)
def test_mamba_prefix_caching_needs_chunked_prefill(check: Check, version: str) -> None:
    found = check(files(NEMOTRON, enable_prefix_caching=True, enable_chunked_prefill=False), version=version)
    if not at_least(version, "0.28.0"):
        assert found == []  # 0.27.x: Nemotron-H takes Mamba cache mode `all`, which needs no chunked prefill
        return
    if at_least(version, "0.33.0"):
        caching, message = "enable_prefix_caching = true", "Chunked prefill is required for Mamba prefix caching."
    else:
        caching = "enable_prefix_caching = true (Mamba cache mode align)"
        message = "Chunked prefill is required for mamba cache mode 'align'."
    assert messages(found) == [
        refuses(
            version,
            f"enable_chunked_prefill = false with {caching} for a NemotronHForCausalLM (hybrid) model",
            message,
        )
    ]
    assert found[0].rule == "mamba-prefix-caching-chunked-prefill"
    assert check(files(NEMOTRON, enable_prefix_caching=False, enable_chunked_prefill=False), version=version) == []
    assert check(files(enable_chunked_prefill=False), version=version) == []  # attention-only models


CHUNKED = {"attention_chunk_size": 128}  # chunked local attention (Llama 4's layout)
HMA = "Hybrid KV cache manager was explicitly enabled but is not supported in this configuration. Consider omitting "
HMA_RULE = "hybrid-kv-cache-manager-unsupported"


@pytest.mark.parametrize("version", RELEASES)
def test_the_hybrid_kv_cache_manager_forced_on_for_chunked_attention(check: Check, version: str) -> None:
    env = {"VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": "0"}
    found = check(files(config=CHUNKED, env=env, disable_hybrid_kv_cache_manager=False), version=version)
    flag = "--enable-hybrid-kv-cache-manager" if at_least(version, "0.33.0") else "--no-disable-hybrid-kv-cache-manager"
    assert messages(found) == [
        refuses(
            version,
            'disable_hybrid_kv_cache_manager = false with env VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE = "0" '
            "(attention_chunk_size in the model's config.json)",
            HMA + f"the {flag} flag to let vLLM decide automatically.",
        )
    ]
    assert found[0].rule == HMA_RULE
    assert [loc.key for loc in found[0].locations] == [
        "serve.disable_hybrid_kv_cache_manager",
        "env.VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE",
        "model.config",
    ]
    eagle = {"method": "eagle3", "model": "org/draft", "num_speculative_tokens": 2}
    found = check(
        files(config=CHUNKED, speculative_config=eagle, disable_hybrid_kv_cache_manager=False),
        version=version,
        rule=HMA_RULE,
    )
    assert [f.message.split(";")[0] for f in found] == [
        'disable_hybrid_kv_cache_manager = false with speculative method "eagle3" with chunked local attention '
        "(attention_chunk_size in the model's config.json)"
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_the_hybrid_kv_cache_manager_where_vllm_keeps_it(check: Check, version: str) -> None:
    assert check(files(config=CHUNKED, disable_hybrid_kv_cache_manager=False), version=version, rule=HMA_RULE) == []
    env = {"VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": "0"}
    assert check(files(config=CHUNKED, env=env), version=version, rule=HMA_RULE) == []  # left to vLLM
    assert (
        check(files(config=CHUNKED, env=env, disable_hybrid_kv_cache_manager=True), version=version, rule=HMA_RULE)
        == []
    )
    assert (
        check(files(env=env, disable_hybrid_kv_cache_manager=False), version=version, rule=HMA_RULE) == []
    )  # no chunks
    ngram = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4}
    assert (
        check(
            files(config=CHUNKED, speculative_config=ngram, disable_hybrid_kv_cache_manager=False),
            version=version,
            rule=HMA_RULE,
        )
        == []
    )
