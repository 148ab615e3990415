"""profilekit.capacity.kv without vLLM: whole layouts and figures of real config.json files, the release branches,
and what is said instead of a guess (tests/oracle/test_capacity_kv.py holds the figures equal to vLLM's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from profilekit.capacity.kv import KvLayout, LayerSpec, kv_layout, pp_indices
from profilekit.hardware import CATALOGUE

CONFIGS = json.loads((Path(__file__).parent / "data" / "capacity" / "kv-configs.json").read_text())["models"]
GIB = 1 << 30


def layout(name: str, version: str = "0.33.0", **serve: Any) -> KvLayout:
    found = kv_layout(CONFIGS[name]["config"], version=version, serve=serve, gpu=None)
    assert isinstance(found, KvLayout), found
    return found


def test_llama_gqa_per_rank() -> None:
    kv = layout("llama-3.1-8b", tensor_parallel_size=2)
    assert kv.specs == (LayerSpec("full", 32, 16, 32768),)
    assert kv.inputs == (
        "32 layers from config.json num_hidden_layers",
        "head_size 128 from config.json hidden_size 4096 // 32 heads",
        "8 KV heads from config.json num_key_value_heads",
        "kv_cache_dtype auto -> the model's bfloat16, 2 bytes",
        "4 KV heads per GPU at tensor_parallel_size 2",
        "block_size 16: vLLM's default on CUDA (an estimate where the attention backend decides)",
    )
    assert kv.bytes_per_token() == 65536
    assert kv.needed_bytes(8192) == 536870912  # 32 layers x 512 blocks x 32 KiB
    # 0.33.0 holds one block (the null block) back before the check
    assert kv.fits(536870912 + kv.block_bytes(), 8192)
    assert not kv.fits(536870912 + kv.block_bytes() - 1, 8192)
    assert kv.num_blocks(GIB) == 1024
    assert kv.tokens(GIB, 8192) == 16384
    assert kv.max_concurrency(GIB, 8192) == 2.0


def test_release_without_the_null_block() -> None:
    kv = layout("llama-3.1-8b", version="0.28.0", tensor_parallel_size=2)
    assert not kv.null_block
    assert kv.fits(536870912, 8192)
    assert kv.estimate_max_model_len(100_000_000, 8192) == 1520
    later = layout("llama-3.1-8b", version="0.29.0", tensor_parallel_size=2)
    assert not later.fits(536870912, 8192)
    assert later.estimate_max_model_len(100_000_000, 8192) == 1504
    assert later.estimate_max_model_len(1000, 8192) == 0


def test_kv_heads_replicated_past_tensor_parallelism() -> None:
    kv = layout("llama-3.1-8b", tensor_parallel_size=16, kv_cache_dtype="fp8")
    assert kv.specs == (LayerSpec("full", 32, 16, 4096),)
    assert "1 KV head per GPU at tensor_parallel_size 16 (replicated: more ranks than KV heads)" in kv.inputs


def test_mla_one_latent_head() -> None:
    kv = layout("deepseek-v3 (MLA)", tensor_parallel_size=8, kv_cache_dtype="fp8", block_size=64)
    assert kv.specs == (LayerSpec("mla", 61, 64, 64 * 576),)
    assert "MLA: one latent head of 576 (kv_lora_rank 512 + qk_rope_head_dim 64), no V" in kv.inputs
    assert kv.needed_bytes(4096) == 61 * 64 * 64 * 576


def test_decode_context_parallelism_splits_the_tokens() -> None:
    kv = layout("deepseek-v2-lite (MLA)", tensor_parallel_size=8, decode_context_parallel_size=2)
    assert kv.needed_bytes(8192) == 27 * 256 * 16 * 576 * 2


def test_gemma2_hybrid_groups_by_release() -> None:
    serve = {"block_size": 32, "max_num_batched_tokens": 8192}
    before = layout("gemma-2-9b", version="0.29.0", **serve)
    after = layout("gemma-2-9b", version="0.30.0", **serve)
    # before 0.30.0 the sliding layers take FlashAttention's smallest kernel block (16), which page-size
    # unification grows to the full layers' 32; from 0.30.0 they take 32 themselves
    shown = (LayerSpec("sliding_window", 21, 32, 262144, 4096), LayerSpec("full", 21, 32, 262144))
    assert before.specs == after.specs == shown
    # sliding: cdiv(min(4095 + 2 x 8192, 8192), 32) + 1 = 257 blocks; full: 256; 21 layers a group
    assert after.needed_bytes(8192) == 21 * 262144 * (257 + 256)
    assert "2 batches in flight x max_num_batched_tokens 8192 (async scheduling: vLLM's default, assumed on)" in (
        after.inputs
    )


def test_gemma3_pattern_and_multimodal_text_config() -> None:
    small = layout("gemma-3-1b (MQA, sliding window)", max_num_batched_tokens=2048)
    assert small.specs == (LayerSpec("sliding_window", 22, 16, 16384, 512), LayerSpec("full", 4, 16, 16384))
    big = layout("medgemma-27b (gemma-3, multimodal)", tensor_parallel_size=2, max_num_batched_tokens=8192)
    assert big.specs == (LayerSpec("sliding_window", 52, 16, 65536, 1024), LayerSpec("full", 10, 16, 65536))


def test_hybrid_allocator_off_counts_every_layer_as_full() -> None:
    kv = layout("gemma-2-2b", disable_hybrid_kv_cache_manager=True, max_num_batched_tokens=8192)
    assert kv.specs == (LayerSpec("full", 26, 16, 65536),)


def test_mistral_all_layers_slide_and_disable_sliding_window() -> None:
    kv = layout("mistral-7b-v0.1 (sliding window)", max_num_batched_tokens=4096, async_scheduling=False)
    assert kv.specs == (LayerSpec("sliding_window", 32, 16, 65536, 4096),)
    # one batch in flight without async scheduling: cdiv(4095 + 4096, 16) + 1 = 513 blocks a layer
    assert kv.needed_bytes(32768) == 32 * 65536 * 513
    off = layout("mistral-7b-v0.1 (sliding window)", disable_sliding_window=True)
    assert off.specs == (LayerSpec("full", 32, 16, 65536),)


def test_pipeline_stages_take_the_smallest_pool() -> None:
    assert [pp_indices(61, r, 3) for r in range(3)] == [(0, 20), (20, 41), (41, 61)]
    kv = layout("deepseek-v3 (MLA)", pipeline_parallel_size=3, tensor_parallel_size=8)
    assert kv.specs == (LayerSpec("mla", 20, 16, 18432),)
    assert kv.num_blocks(GIB) == GIB // (18432 * 21)


@pytest.mark.parametrize(
    ("name", "serve", "said"),
    [
        (
            "gemma-2-9b",
            {},
            "max_num_batched_tokens is needed: the sliding-window layers hold their window plus the tokens in flight "
            "(give vLLM's resolved value)",
        ),
        (
            "gemma-2-9b",
            {"pipeline_parallel_size": 2, "max_num_batched_tokens": 8192},
            "not modelled yet: sliding-window layers with pipeline parallelism and async scheduling",
        ),
        (
            "gemma-2-9b",
            {"decode_context_parallel_size": 2, "tensor_parallel_size": 16},
            "decode_context_parallel_size > 1 with sliding-window layers: vLLM does not support it",
        ),
        ("llama-3.1-8b", {"kv_cache_dtype": "nvfp4"}, "not modelled yet: kv_cache_dtype 'nvfp4'"),
    ],
)
def test_said_instead_of_guessed(name: str, serve: dict[str, Any], said: str) -> None:
    assert kv_layout(CONFIGS[name]["config"], version="0.33.0", serve=serve, gpu=None) == said


def test_what_the_kv_cache_of_a_model_does_not_model_is_said() -> None:
    config = {
        "model_type": "nemotron_h",
        "hybrid_override_pattern": "M-M*",
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 64,
    }
    # a hybrid model's Mamba layers follow the cache mode, which prefix caching (the model's default) decides
    assert kv_layout(config, version="0.33.0", serve={}, gpu=None) == (
        "the Mamba cache mode is unknown (it follows prefix caching, which the model decides)"
    )
    assert isinstance(
        kv_layout(config, version="0.33.0", serve={}, gpu=None, mamba_mode="none", max_model_len=64), KvLayout
    )
    falcon_h1 = {"model_type": "falcon_h1", "num_hidden_layers": 24, "num_attention_heads": 8}
    assert kv_layout(falcon_h1, version="0.33.0", serve={}, gpu=None, mamba_mode="align", max_model_len=64) == (
        "not modelled yet: the Mamba/linear-attention layers of a hybrid model (falcon_h1)"
    )
    assert kv_layout({"model_type": "llama"}, version="0.33.0", serve={}, gpu=None) == (
        "config.json has no num_hidden_layers"
    )
    falcon = {"model_type": "falcon", "num_hidden_layers": 32, "num_attention_heads": 71, "multi_query": True}
    assert kv_layout(falcon, version="0.33.0", serve={}, gpu=None) == (
        "not modelled yet: the KV cache of model_type 'falcon'"
    )


QWEN3_NEXT = "qwen3-coder-next (hybrid gated delta net, MoE, trimmed)"


def test_a_gated_delta_net_model_has_its_state_aligned_like_mamba() -> None:
    # Qwen3-Next: full attention every 4th layer, gated delta nets between (tests/oracle/test_capacity_kv.py holds
    # the figures equal to vLLM's own layer spec in every release)
    config = CONFIGS[QWEN3_NEXT]["config"]
    kv = kv_layout(
        config, version="0.32.0", serve={"tensor_parallel_size": 2}, gpu=None, mamba_mode="none", max_model_len=4096
    )
    assert isinstance(kv, KvLayout), kv
    assert kv.specs == (LayerSpec("mamba", 36, 4096, 557056), LayerSpec("full", 12, 544, 557056))
    assert kv.inputs[-6:-2] == (
        "36 Mamba and 12 attention layers of 48 (qwen3_next)",
        "gated delta net state: conv 4096 x 3, temporal 16 value heads x 128 x 128, per GPU at tensor_parallel_size 2",
        "Mamba conv state bfloat16, SSM state bfloat16 (as the conv state)",
        "Mamba state 548864 bytes per layer and request, before padding to the attention page",
    )


def test_gated_delta_net_checkpoints_of_0_33_are_said_to_depend_on_the_gpu() -> None:
    config = CONFIGS[QWEN3_NEXT]["config"]

    def on(gpu: str | None, **serve: Any) -> KvLayout | str:
        device = CATALOGUE[gpu] if gpu else None
        return kv_layout(config, version="0.33.0", serve=serve, gpu=device, mamba_mode="align", max_model_len=4096)

    a100 = on("A100-SXM4-80GB")  # Triton's GDN prefill: no checkpoints
    assert isinstance(a100, KvLayout)
    assert a100.specs == (LayerSpec("mamba", 36, 544, 1114112), LayerSpec("full", 12, 544, 1114112))
    # FlashInfer's GDN prefill on Hopper exports a checkpoint: a third state page per request, and blocks in
    # multiples of 64 (FLASHINFER_GDN_CHECKPOINT_ALIGNMENT); the figures are vLLM's own (the oracle's probe with the
    # backend resolution answering as on an H100)
    h100 = on("H100-SXM-80GB")
    assert isinstance(h100, KvLayout)
    assert h100.specs == (LayerSpec("mamba", 36, 576, 1179648), LayerSpec("full", 12, 576, 1179648))
    assert (h100.needed_bytes(4096), h100.num_blocks(GIB), h100.tokens(GIB, 4096)) == (240648192, 75, 18070)
    assert "Mamba cache mode align: 3 state pages per request and Mamba layer" in h100.inputs
    for not_flashinfer in ({"gdn_prefill_backend": "triton"}, {"additional_config": {"gdn_prefill_backend": "triton"}}):
        assert on("H100-SXM-80GB", **not_flashinfer) == a100
    assert "declare [hardware] gpu" in str(on(None))
    assert "with CUDA runtime 13 or newer" in str(on("B200"))


KIMI_LINEAR = "kimi-linear-48b-a3b (hybrid KDA, MLA, MoE)"


def kimi(version: str = "0.33.0", mode: str = "none", config: dict[str, Any] | None = None, **serve: Any) -> Any:
    written = {**CONFIGS[KIMI_LINEAR]["config"], **(config or {})}
    return kv_layout(written, version=version, serve=serve, gpu=None, mamba_mode=mode, max_model_len=4096)


def test_kimi_linear_kda_state_beside_mla_pages() -> None:
    # 20 KDA layers and 7 MLA layers; the figures are vLLM's own (the oracle's probe of KimiGatedDeltaNetAttention
    # and MLAAttentionSpec in 0.27.0 and 0.33.0: blocks of 1920 tokens, pages of 2211840 bytes)
    kv = kimi()
    assert isinstance(kv, KvLayout), kv
    assert kv.specs == (LayerSpec("mamba", 20, 4096, 2211840), LayerSpec("mla", 7, 1920, 2211840))
    assert kv.needed_bytes(4096) == 92897280
    assert (kv.num_blocks(GIB), kv.tokens(GIB, 4096)) == (69, 47104)
    assert "KDA state: conv 12288 x 3, recurrent 32 heads x 128 x 128, per GPU at tensor_parallel_size 1" in kv.inputs
    # MLA: the attention block is a multiple of 128 (TP 2, align: 1024 where FlashAttention's 16 would give 944)
    two = kimi(mode="align", tensor_parallel_size=2)
    assert isinstance(two, KvLayout), two
    assert two.specs == (LayerSpec("mamba", 20, 1024, 1179648), LayerSpec("mla", 7, 1024, 1179648))
    assert (two.num_blocks(GIB), two.tokens(GIB, 4096)) == (130, 53248)


def test_kimi_linear_recurrent_state_dtype_by_release() -> None:
    # before 0.30.0 KDA's recurrent state is float32 whatever mamba_ssm_cache_dtype says; from 0.30.0 bfloat16
    # halves it and any other dtype is refused by vLLM
    old, new = kimi("0.29.0", mamba_ssm_cache_dtype="bfloat16"), kimi("0.30.0", mamba_ssm_cache_dtype="bfloat16")
    assert isinstance(old, KvLayout) and isinstance(new, KvLayout)
    assert old.specs[0].page_bytes == 2211840 > new.specs[0].page_bytes
    assert kimi("0.33.0", mamba_ssm_cache_dtype="float16") == (
        "vLLM refuses mamba_ssm_cache_dtype 'float16' for KDA layers: 'KDA recurrent state supports only auto, "
        "float32, and bfloat16': not estimated"
    )
    assert isinstance(kimi("0.29.0", mamba_ssm_cache_dtype="float16"), KvLayout)


@pytest.mark.parametrize(
    ("config", "serve", "said"),
    [
        ({"linear_attn_config": None}, {}, "config.json has no linear_attn_config (Kimi Linear's KDA layers)"),
        (
            {"linear_attn_config": {"kda_layers": "1,2", "num_heads": 32}},
            {},
            "config.json's linear_attn_config.kda_layers is no list of layer numbers",
        ),
        (
            {"linear_attn_config": {"kda_layers": [1], "num_heads": 0, "head_dim": 128, "short_conv_kernel_size": 4}},
            {},
            "config.json's linear_attn_config sizes are not sizes (num_heads 0): not estimated",
        ),
        (
            {
                "linear_attn_config": {
                    "kda_layers": [1],
                    "num_heads": 32,
                    "head_dim": 128,
                    "short_conv_kernel_size": 4,
                    "use_full_rank_gate": True,
                }
            },
            {},
            "not modelled yet: Kimi-K3's full-rank-gate KDA layers (linear_attn_config.use_full_rank_gate)",
        ),
        (
            {"kv_lora_rank": None},
            {},
            "config.json has no kv_lora_rank: Kimi Linear's attention layers are multi-head latent attention",
        ),
        (
            {},
            {"tensor_parallel_size": 3},
            "the KDA heads (32) is not divisible by tensor_parallel_size 3: vLLM stops on its assertion",
        ),
    ],
)
def test_kimi_linear_what_is_not_estimated_is_said(config: dict[str, Any], serve: dict[str, Any], said: str) -> None:
    written = {key: value for key, value in {**CONFIGS[KIMI_LINEAR]["config"], **config}.items() if value is not None}
    assert kv_layout(written, version="0.33.0", serve=serve, gpu=None, mamba_mode="none", max_model_len=4096) == said


NEMOTRON_H = "nemotron-h-8b-base-8k (hybrid Mamba-2)"


@pytest.mark.parametrize(
    ("name", "config", "serve", "said"),
    [
        (
            NEMOTRON_H,
            {"mamba_num_heads": 0},
            {},
            "config.json's Mamba sizes are not sizes (heads 0, inner 0): not estimated",
        ),
        (
            "jamba-v0.1 (hybrid Mamba-1, MoE)",
            {"mamba_d_conv": -4},
            {},
            "config.json's Mamba sizes are not sizes (conv_kernel -4): not estimated",
        ),
        (
            NEMOTRON_H,
            {},
            {"mamba_cache_dtype": ["float16"]},
            "not modelled yet: Mamba state dtypes ['float16'] / 'float32'",
        ),
        (
            NEMOTRON_H,
            {"head_dim": None, "attention_head_dim": None, "hidden_size": 8},
            {},
            "head_size 0 is not a size: not estimated",
        ),
        (
            "llama-3.1-8b",
            {"num_hidden_layers": 10**9},
            {},
            "config.json's num_hidden_layers 1000000000 is more than any model has (over 100000): not estimated",
        ),
        (
            NEMOTRON_H,
            {},
            {"use_replayssm": True, "replayssm_buffer_len": -2},
            "replayssm_buffer_len -2 is not a length: not estimated",
        ),
    ],
)
def test_sizes_no_model_is_built_with_are_not_estimated(
    name: str, config: dict[str, Any], serve: dict[str, Any], said: str
) -> None:
    # junk a hand-edited config.json or layer may hold: a sentence, never a ZeroDivisionError, a TypeError or a
    # tuple of a billion layers (a random-junk run over every key of the hybrid configs found these)
    written = {**CONFIGS[name]["config"], **config}
    written = {key: value for key, value in written.items() if value is not None}
    found = kv_layout(written, version="0.33.0", serve=serve, gpu=None, mamba_mode="align", max_model_len=4096)
    assert found == said


def test_committed_oracle_results_are_all_equal() -> None:
    """tests/oracle/results/capacity-kv-<release>.json (PROFILEKIT_KV_RESULTS=write): every compared case equal."""
    results = sorted((Path(__file__).parent / "oracle" / "results").glob("capacity-kv-*.json"))
    releases = {json.loads(p.read_text())["release"] for p in results}
    assert {"0.27.0", "0.33.0"} <= releases
    for path in results:
        document = json.loads(path.read_text())
        assert document["compared"] == document["equal"] > 80, path.name
