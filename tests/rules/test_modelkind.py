"""Options against what the model's config.json says it is: float16 for Gemma 2/3 and GLM-4, prompt embeddings
for an encoder-decoder model, modality LoRAs for a text-only model, LoRA on an Inkling model."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
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


GENERATE = "This model does not support `--runner generate`."
MODERNBERT = {"architectures": ["ModernBertModel"], "model_type": "modernbert"}


@pytest.mark.parametrize("version", RELEASES)
def test_the_generate_runner_for_a_model_that_neither_generates_nor_pools(check: Check, version: str) -> None:
    found = check(files(config=MODERNBERT, runner="generate"), version=version)
    assert messages(found) == [
        refuses(
            version,
            f'runner = "generate" for a ModernBertModel model, which vLLM {version}\'s registry marks neither '
            "generative nor pooling",
            GENERATE,
        )
    ]
    assert found[0].rule == "runner-generate-unsupported"
    assert found[0].fix == 'remove runner (or set it to "auto"): vLLM picks the runner this architecture supports'


@pytest.mark.parametrize("version", RELEASES)
def test_the_generate_runner_is_left_alone_where_the_registry_allows_it_or_does_not_say(
    check: Check, version: str
) -> None:
    rule = "runner-generate-unsupported"
    assert check(files(config=MODERNBERT, runner="pooling"), version=version, rule=rule) == []
    assert check(files(config=MODERNBERT), version=version, rule=rule) == []  # auto: vLLM picks pooling
    assert check(files(runner="generate"), version=version) == []  # Llama generates
    # the Transformers backend's class decides, and an architecture vLLM does not register is that backend's
    assert (
        check(files(config=MODERNBERT, runner="generate", model_impl="transformers"), version=version, rule=rule) == []
    )
    unknown = {"architectures": ["MyOwnModel"], "model_type": "llama"}
    assert check(files(config=unknown, runner="generate"), version=version, rule=rule) == []
