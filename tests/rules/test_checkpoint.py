"""The checkpoint's quantization_config (config.json) against the `quantization` a layer writes."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES

FP8 = {"quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}
MISMATCH = (
    "Quantization method specified in the model config ({}) does not match the quantization method specified in "
    "the `quantization` argument ({})."
)
RULE = "quantization-checkpoint-mismatch"


@pytest.mark.parametrize("version", RELEASES)
def test_quantization_that_contradicts_the_checkpoint(check: Check, version: str) -> None:
    found = check(files(config=FP8, quantization="awq"), version=version)
    assert messages(found) == [
        refuses(
            version,
            'quantization = "awq" for a checkpoint quantized with "fp8" (quantization_config in its config.json)',
            MISMATCH.format("fp8", "awq"),
        )
    ]
    assert found[0].rule == RULE
    assert found[0].fix == "remove quantization: vLLM reads the method from the checkpoint's config.json"
    assert [(loc.file, loc.key) for loc in found[0].locations] == [
        ("profiles/s.toml", "serve.quantization"),
        ("profiles/s.toml", "model.config"),
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_quantization_that_agrees_with_the_checkpoint_or_is_left_to_it(check: Check, version: str) -> None:
    assert check(files(config=FP8, quantization="fp8"), version=version) == []
    assert check(files(config=FP8), version=version) == []
    assert check(files(quantization="fp8"), version=version, rule=RULE) == []  # no quantization_config: online


def test_the_method_is_read_as_vllm_normalises_it(check: Check) -> None:
    upper = {"quantization_config": {"quant_method": "FP8"}}
    assert check(files(config=upper, quantization="fp8"), rule=RULE) == []
    ct = {"quantization_config": {"quant_method": "compressed_tensors"}}
    assert check(files(config=ct, quantization="compressed-tensors"), rule=RULE) == []
    # compressed-tensors' own key, and a multimodal model's text_config
    compression = {"compression_config": {"quant_method": "compressed-tensors"}}
    assert messages(check(files(config=compression, quantization="fp8"), rule=RULE)) == [
        refuses(
            "0.33.0",
            'quantization = "fp8" for a checkpoint quantized with "compressed-tensors" (quantization_config in its '
            "config.json)",
            MISMATCH.format("compressed-tensors", "fp8"),
        )
    ]
    nested = {"text_config": {"quantization_config": {"quant_method": "gptq"}}}
    assert check(files(config=nested, quantization="fp8"), rule=RULE) != []


def test_a_quantization_config_without_a_method(check: Check) -> None:
    found = check(files(config={"quantization_config": {"bits": 4}}, quantization="fp8"), rule=RULE)
    assert messages(found) == [
        refuses(
            "0.33.0",
            'quantization = "fp8" for a checkpoint whose quantization_config names no method (quantization_config '
            "in its config.json)",
            MISMATCH.format("None", "fp8"),
        )
    ]


@pytest.mark.parametrize(
    ("method", "user", "model_type"),
    [
        ("gptq", "gptq_marlin", "llama"),  # AutoGPTQ takes the checkpoint over
        ("gptq", "marlin", "llama"),
        ("awq", "awq_marlin", "llama"),  # AutoAWQ, on a GPU host
        ("fp8", "moe_wna16", "llama"),  # MoE-WNA16 and Humming claim what they are named for
        ("fp8", "humming", "llama"),
        ("auto-round", "fp8", "llama"),  # INC
        ("modelopt", "fp8", "llama"),  # ModelOpt decides by quant_algo
        ("mxfp4", "fp8", "gpt_oss"),  # GPT-OSS MXFP4
    ],
)
def test_pairs_an_override_may_reconcile_are_left_to_vllm(
    check: Check, method: str, user: str, model_type: str
) -> None:
    config = {"model_type": model_type, "quantization_config": {"quant_method": method}}
    assert check(files(config=config, quantization=user), rule=RULE) == []


def test_an_mxfp4_checkpoint_of_another_model_type_is_judged(check: Check) -> None:
    config = {"quantization_config": {"quant_method": "mxfp4"}}
    assert check(files(config=config, quantization="fp8"), rule=RULE) != []


def test_a_modelopt_producer_is_left_to_vllm(check: Check) -> None:
    config = {"quantization_config": {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8"}}}
    assert check(files(config=config, quantization="fp8"), rule=RULE) == []


DTYPE_RULE = "quantization-dtype-unsupported"
FP8_F32 = (
    "torch.float32 is not supported for quantization method fp8. Supported dtypes: [torch.bfloat16, torch.float16]"
)


@pytest.mark.parametrize("version", RELEASES)
def test_fp8_with_float32_activations(check: Check, version: str) -> None:
    found = check(files(quantization="fp8", dtype="float32"), version=version)
    assert messages(found) == [refuses(version, 'dtype = "float32" with quantization method "fp8"', FP8_F32)]
    assert found[0].rule == DTYPE_RULE
    assert found[0].fix == 'set dtype to one of "bfloat16", "float16" (or "auto")'
    from_checkpoint = check(files(config=FP8, dtype="float"), version=version, rule=DTYPE_RULE)
    assert messages(from_checkpoint) == [refuses(version, 'dtype = "float" with quantization method "fp8"', FP8_F32)]


@pytest.mark.parametrize("version", RELEASES)
def test_dtypes_the_quantization_method_runs_or_vllm_decides(check: Check, version: str) -> None:
    assert check(files(quantization="fp8", dtype="bfloat16"), version=version, rule=DTYPE_RULE) == []
    assert check(files(quantization="fp8", dtype="auto"), version=version, rule=DTYPE_RULE) == []
    assert check(files(quantization="fp8"), version=version, rule=DTYPE_RULE) == []
    assert check(files(dtype="float32"), version=version, rule=DTYPE_RULE) == []  # unquantized
    # another method's activation dtypes are vLLM's to check; a mismatch is reported by its own rule
    assert check(files(quantization="bitsandbytes", dtype="float32"), version=version, rule=DTYPE_RULE) == []
    assert check(files(config=FP8, quantization="awq", dtype="float32"), version=version, rule=DTYPE_RULE) == []
