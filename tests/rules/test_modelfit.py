"""Options vLLM refuses for the model served: nvfp4 KV cache with MLA, offline data parallelism (rules/modelfit.py)."""
"""Options against what the model's config.json says it is: float16 for Gemma 2/3 and GLM-4, prompt embeddings
for an encoder-decoder model, modality LoRAs for a text-only model, LoRA on an Inkling model."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
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
    assert messages(found) == [
        "profilekit could not run vLLM 0.33.0's checks of kv_cache_dtype = \"nvfp4\" against the model's attention "
        "(MLA or not): they need the config.json of model 'dummy/KimiLinearForCausalLM', which profilekit does not "
        "have"
    ]


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
    assert messages(found) == [
        "profilekit could not run vLLM 0.33.0's checks of VLLM_DP_SIZE = \"4\" against the model's experts: they "
        "need the config.json of model 'dummy/LlamaForCausalLM', which profilekit does not have"
    ]
from tests.rules.layers import RELEASES, at_least

FLOAT16 = "The model type '{}' does not support float16. Reason: Numerical instability. Please use bfloat16 or float32 instead."
PROMPT_EMBEDS = "--enable-prompt-embeds is not supported with encoder-decoder models."
MM_LORAS = "Default modality-specific LoRA(s) were provided for a non multimodal model"
INKLING = (
    "Inkling LoRA requires INKLING_MULTIMEM_AR=0: the Lamport fused-collective path bypasses the LoRA-wrapped wo_ud "
    "and dense down_proj layers on decode-sized batches, silently dropping their LoRA. Set INKLING_MULTIMEM_AR=0."
)
POOLING = (
    "This model does not support `--runner pooling`. You can pass `--convert <embed|classify> to adapt it into a "
    "pooling model."
)
INKLING_CONFIG = {"architectures": ["InklingForCausalLM"]}


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("model_type", ["gemma2", "gemma3", "gemma3_text", "glm4"])
def test_float16_for_a_model_type_that_refuses_it(check: Check, version: str, model_type: str) -> None:
    found = check(files(config={"model_type": model_type}, dtype="half"), version=version)
    assert messages(found) == [
        refuses(version, f'dtype = "half" for a model of type "{model_type}"', FLOAT16.format(model_type))
    ]
    assert found[0].rule == "dtype-float16-model-type"
    assert found[0].fix == 'set dtype = "bfloat16" (or "auto", which picks it for this model type)'


def test_float16_is_fine_for_other_model_types_and_other_dtypes(check: Check) -> None:
    assert check(files(dtype="float16")) == []  # llama
    assert check(files(config={"model_type": "gemma2"}, dtype="bfloat16")) == []
    assert check(files(config={"model_type": "gemma2"}, dtype="auto")) == []
    assert check(files(config={"model_type": "gemma2", "torch_dtype": "float16"})) == []  # auto skips float16


@pytest.mark.parametrize("version", RELEASES)
def test_prompt_embeds_with_an_encoder_decoder_model(check: Check, version: str) -> None:
    found = check(files(config={"is_encoder_decoder": True}, enable_prompt_embeds=True), version=version)
    if not at_least(version, "0.29.0"):
        assert found == []  # the check arrived in 0.29.0
        return
    assert messages(found) == [
        refuses(
            version,
            "enable_prompt_embeds = true for an encoder-decoder model (is_encoder_decoder in its config.json)",
            PROMPT_EMBEDS,
        )
    ]
    assert found[0].rule == "prompt-embeds-encoder-decoder"


def test_prompt_embeds_with_a_decoder_only_model_or_a_nested_encoder_decoder(check: Check) -> None:
    assert check(files(enable_prompt_embeds=True)) == []
    assert check(files(config={"is_encoder_decoder": True}, enable_prompt_embeds=False)) == []
    nested = {"text_config": {"is_encoder_decoder": True}}
    assert check(files(config=nested, enable_prompt_embeds=True), rule="prompt-embeds-encoder-decoder") != []


@pytest.mark.parametrize("version", RELEASES)
def test_default_mm_loras_for_a_text_only_model(check: Check, version: str) -> None:
    found = check(files(default_mm_loras={"image": "/srv/loras/vision"}), version=version)
    assert messages(found) == [
        refuses(version, "default_mm_loras for a LlamaForCausalLM model, which takes text only", MM_LORAS)
    ]
    assert found[0].rule == "default-mm-loras-text-model"
    assert check(files(default_mm_loras={}), version=version) == []


def test_default_mm_loras_for_an_architecture_profilekit_does_not_know(check: Check) -> None:
    vl = {"architectures": ["Qwen2VLForConditionalGeneration"]}
    assert (
        check(files(config=vl, default_mm_loras={"image": "/srv/loras/vision"}), rule="default-mm-loras-text-model")
        == []
    )


@pytest.mark.parametrize("version", RELEASES)
def test_lora_on_inkling_needs_the_multimem_all_reduce_off(check: Check, version: str) -> None:
    found = check(files(config=INKLING_CONFIG, enable_lora=True), version=version)
    assert messages(found) == [refuses(version, "enable_lora = true on an Inkling model (InklingForCausalLM)", INKLING)]
    assert found[0].rule == "inkling-lora-multimem"
    assert found[0].fix == 'set env INKLING_MULTIMEM_AR = "0", or enable_lora = false'
    off = files(config=INKLING_CONFIG, env={"INKLING_MULTIMEM_AR": "0"}, enable_lora=True)
    assert check(off, version=version) == []


def test_inkling_without_lora_and_lora_elsewhere(check: Check) -> None:
    assert check(files(config=INKLING_CONFIG)) == []
    assert check(files(enable_lora=True)) == []
    on = files(config=INKLING_CONFIG, env={"INKLING_MULTIMEM_AR": "1"}, enable_lora=True)
    assert [f.rule for f in check(on)] == ["inkling-lora-multimem"]


@pytest.mark.parametrize("version", RELEASES)
def test_the_pooling_runner_for_a_generative_model_left_unconverted(check: Check, version: str) -> None:
    found = check(files(runner="pooling", convert="none"), version=version)
    assert messages(found) == [
        refuses(
            version,
            'runner = "pooling" with convert = "none" for a LlamaForCausalLM model, which generates text',
            POOLING,
        )
    ]
    assert (
        found[0].fix
        == 'set convert = "embed" or "classify" (or leave it "auto") to adapt the model into a pooling model'
    )
    assert check(files(runner="pooling", convert="embed"), version=version) == []


def test_the_pooling_runner_for_an_architecture_profilekit_does_not_know(check: Check) -> None:
    bert = {"architectures": ["BertModel"]}
    assert check(files(config=bert, runner="pooling", convert="none"), rule="runner-pooling-convert-none") == []
    assert check(files(runner="generate", convert="none")) == []


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("runner", ["generate", "draft"])
def test_a_generative_runner_for_an_embedding_model(check: Check, version: str, runner: str) -> None:
    bert = files(config={"architectures": ["BertModel"], "model_type": "bert"}, runner=runner)
    found = check(bert, version=version, rule="runner-embedding-model")
    assert messages(found) == [
        refuses(
            version,
            f'runner = "{runner}" for a BertModel model, which only embeds',
            f"Embedding models do not support `--runner {runner}`. Use `--runner pooling` or `--runner auto` for "
            "embedding models.",
        )
    ]
    assert found[0].fix == 'set runner = "pooling" (or "auto")'


def test_the_pooling_runner_for_an_embedding_model_and_generate_for_llama(check: Check) -> None:
    xlm = {"architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta"}
    assert check(files(config=xlm, runner="pooling")) == []
    assert check(files(config=xlm), rule="runner-embedding-model") == []
    assert check(files(runner="generate")) == []
