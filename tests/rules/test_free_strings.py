"""Free strings vLLM looks up after parsing, in its words, and values it reads as None (rules/options.py)."""

from __future__ import annotations

import pytest

from profilekit.vllm.catalogue import load_catalogue
from tests.rules.conftest import Check
from tests.rules.crossfield import files
from tests.rules.layers import RELEASES


def _found(check: Check, version: str = "0.33.0", **serve: object) -> list[tuple[str, str, str]]:
    return [(f.rule, f.message, f.fix) for f in check(files(**serve), version=version)]


@pytest.mark.parametrize("version", RELEASES)
def test_an_unknown_config_format(check: Check, version: str) -> None:
    assert _found(check, version, config_format="hf-ish") == [
        (
            "invalid-value",
            f'serve.config_format: vLLM {version} refuses it: "Unknown config format `hf-ish`."',
            "choose one of: auto, hf, mistral",
        )
    ]
    assert _found(check, version, config_format="hf") == []


@pytest.mark.parametrize("version", RELEASES)
def test_max_model_len_zero(check: Check, version: str) -> None:
    expected = (
        "invalid-value",
        f'serve.max_model_len: vLLM {version} refuses it: "max_model_len must be a positive integer, got int: 0. '
        'Example: max_model_len=2048"',
        "write a positive max_model_len, or -1 (or leave it out) for the model's own length",
    )
    assert _found(check, version, max_model_len=0) == [expected]
    assert _found(check, version, max_model_len="0k") == [expected]
    assert _found(check, version, max_model_len=-1) == []
    assert _found(check, version, max_model_len="auto") == []


@pytest.mark.parametrize("version", RELEASES)
def test_an_executor_name_that_is_no_class_path(check: Check, version: str) -> None:
    assert _found(check, version, distributed_executor_backend="multiproc") == [
        (
            "invalid-value",
            f'serve.distributed_executor_backend: vLLM {version} refuses it: "not enough values to unpack '
            '(expected 2, got 1)"',
            "choose one of: ray, mp, uni, external_launcher, or the dotted path of an Executor class "
            "('package.module.Class'); vLLM reads any other name as such a path",
        )
    ]
    assert _found(check, version, distributed_executor_backend="mp") == []
    # a class path may exist on the host: vLLM imports it there
    assert _found(check, version, distributed_executor_backend="my_pkg.executor.MyExecutor") == []


def test_an_unknown_attention_backend_in_vllms_words(check: Check) -> None:
    found = _found(check, "0.27.0", attention_backend="flash")
    assert [(rule, message) for rule, message, _ in found] == [
        (
            "invalid-value",
            "serve.attention_backend: vLLM 0.27.0 refuses 'flash': \"Unknown attention backend: 'FLASH'. Valid "
            "options are: FLASH_ATTN, FLASH_ATTN_DIFFKV, TRITON_ATTN, TRITON_ATTN_DIFFKV, ROCM_ATTN, ROCM_AITER_MLA, "
            "ROCM_AITER_TRITON_MLA, ROCM_AITER_FA, ROCM_AITER_MLA_SPARSE, XPU_MLA_SPARSE, TORCH_SDPA, FLASHINFER, "
            "FLASHINFER_MLA, TOKENSPEED_MLA, FLASHINFER_MLA_SPARSE, FLASHINFER_MLA_SPARSE_SM120, TRITON_MLA, "
            "CUTLASS_MLA, FLASHMLA, FLASHMLA_SPARSE, FLASHMLA_SPARSE_DSV4, FLASHINFER_MLA_SPARSE_DSV4, "
            "ROCM_FLASHMLA_SPARSE_DSV4, FLASH_ATTN_MLA, FLASH_ATTN_MLA_SPARSE, MINIMAX_M3_SPARSE, CUTLASS_MSA, "
            "TRITON_MSA, NO_ATTENTION, FLEX_ATTENTION, HPC_ATTN, ROCM_AITER_UNIFIED_ATTN, CPU_ATTN, TURBOQUANT, "
            "CUSTOM\" (or 'auto')",
        )
    ]
    assert _found(check, "0.27.0", attention_backend="auto") == []
    assert _found(check, "0.27.0", attention_backend="Flash_Attn") == []


def test_an_optimization_level_in_vllms_words(check: Check) -> None:
    assert _found(check, optimization_level="4") == [
        (
            "invalid-value",
            "serve.optimization_level: '4' is not among the values vLLM 0.33.0 accepts for optimization_level: "
            '0, 1, 2, 3; vLLM says "Input should be 0, 1, 2 or 3"',
            "choose one of: 0, 1, 2, 3",
        )
    ]
    assert _found(check, optimization_level="3") == []


def test_the_encoder_backend_is_judged_only_for_a_multimodal_model(check: Check) -> None:
    assert _found(check, mm_encoder_attn_backend="bogus") == []  # a text-only model never converts it
    vision = {"vision_config": {"hidden_size": 64}}
    found = check(files(config=vision, mm_encoder_attn_backend="bogus"))
    assert [f.rule for f in found] == ["invalid-value"]
    assert found[0].message.startswith(
        "serve.mm_encoder_attn_backend: vLLM 0.33.0 refuses 'bogus': \"Unknown attention backend: 'BOGUS'. "
        "Valid options are: FLASH_ATTN, "
    )
    assert not found[0].message.endswith("(or 'auto')")  # MultiModalConfig has no 'auto'
    assert check(files(config=vision, mm_encoder_attn_backend="torch_sdpa")) == []


@pytest.mark.parametrize("version", RELEASES)
def test_quantization_methods_in_any_case(check: Check, version: str) -> None:
    assert _found(check, version, quantization="FP8") == []  # ModelConfig.validate_quantization_before lowers it
    found = _found(check, version, quantization="FP9")
    assert [rule for rule, _, _ in found] == ["invalid-value"]
    assert found[0][1].startswith(f'serve.quantization: vLLM {version} refuses it: "Unknown quantization method: fp9.')


@pytest.mark.parametrize("version", RELEASES)
def test_kernel_backends_are_checked_after_respelling(check: Check, version: str) -> None:
    found = _found(check, version, kernel_config={"moe_backend": "warp"})
    assert [rule for rule, _, _ in found] == ["invalid-value"]
    assert found[0][1].startswith(
        f'serve.kernel_config.moe_backend: vLLM {version} refuses it: "1 validation error for KernelConfig / '
        "moe_backend / Input should be 'auto', 'triton', 'batched_triton', 'deep_gemm', "
    )
    assert _found(check, version, kernel_config={"moe_backend": "Deep-Gemm"}) == []


@pytest.mark.parametrize("version", RELEASES)
def test_an_empty_string_is_a_warning_vllm_starts_with_the_default(check: Check, version: str) -> None:
    found = check(files(root_path=""), version=version)
    assert [(f.rule, f.severity.value, f.message, f.fix) for f in found] == [
        (
            "value-reads-as-none",
            "warning",
            "serve.root_path: vLLM reads '' as no value (None) for this option, not as a string",
            "remove root_path (or unset it) for vLLM's default",
        )
    ]
    assert check(files(root_path="/api"), version=version) == []
    # with choices, argparse checks None against them: 0.31.0 on lists None for --spec-method
    spec = check(files(spec_method="None"), version=version)
    if version in ("0.31.0", "0.32.0", "0.33.0"):
        assert [(f.rule, f.message) for f in spec] == [
            (
                "value-reads-as-none",
                "serve.spec_method: vLLM reads 'None' as no value (None) for this option, not as a string",
            )
        ]
    else:
        # argparse's own words, with the release's whole list of methods (the string 'None' is not None)
        flag = load_catalogue(version).flag("spec_method")  # type: ignore[union-attr]
        assert flag is not None and flag.choices is not None
        listed = ", ".join(repr(c) for c in flag.choices)
        assert [(f.rule, f.message) for f in spec] == [
            (
                "invalid-value",
                "serve.spec_method: vLLM reads 'None' as no value (None) for this option, not as a string, and None "
                f'is not among its choices: "argument --spec-method: invalid choice: None (choose from {listed})"',
            )
        ]


@pytest.mark.parametrize("version", RELEASES)
def test_a_reasoning_table_without_a_parser_name(check: Check, version: str) -> None:
    found = _found(check, version, reasoning_config={"reasoning_end_str": "</think>"})
    if version in ("0.27.0", "0.27.1"):  # initialize_token_ids looks up the parser '' (`is not None`)
        assert [rule for rule, _, _ in found] == ["invalid-value"]
        assert found[0][1].startswith(
            f"serve.reasoning_config.reasoning_parser: vLLM {version} refuses it: \"Reasoning parser '' not found. "
            "Available parsers: cohere_command3, "
        )
    else:  # `if self.reasoning_parser:` skips an empty name
        assert found == []
    assert _found(check, version, reasoning_config={"reasoning_parser": "deepseek_r1"}) == []
