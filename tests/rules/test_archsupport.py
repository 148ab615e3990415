"""What the model's architecture supports (rules/archsupport.py): the Transformers backend, LoRA, MoE-EP backends."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least

KIMI = "KimiLinearForCausalLM"
NEMOTRON = "NemotronHForCausalLM"
LLAMA = "LlamaForCausalLM"


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("arch", [NEMOTRON, KIMI, "Zamba2ForCausalLM"])
def test_transformers_backend_of_a_hybrid_model_before_0_30(check: Check, version: str, arch: str) -> None:
    found = check(files(arch, model_impl="transformers"), version=version, rule="transformers-backend-incompatible")
    if at_least(version, "0.30.0"):
        assert found == []  # 0.30.0 also accepts a class whose attention implementation can be set
        return
    assert messages(found) == [
        refuses(
            version,
            f'model_impl = "transformers" with a {arch} model',
            f"The Transformers implementation of '{arch}' is not compatible with vLLM.",
        )
    ]
    assert [loc.key for loc in found[0].locations] == ["serve.model_impl", "model.config"]


@pytest.mark.parametrize("version", ["0.27.0", "0.29.0"])
def test_transformers_backend_of_an_attention_model_is_accepted(check: Check, version: str) -> None:
    assert check(files(LLAMA, model_impl="transformers"), version=version) == []
    assert check(files(NEMOTRON, model_impl="vllm"), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_lora_for_a_model_without_supports_lora(check: Check, version: str) -> None:
    found = check(files(KIMI, enable_lora=True), version=version, rule="lora-unsupported")
    if version != "0.33.0":
        assert found == []  # only 0.33.0 checks SupportsLoRA at start-up
        return
    assert messages(found) == [
        refuses(
            version,
            f"enable_lora = true with a {KIMI} model",
            f"LoRA is not supported for {KIMI} (dummy/{KIMI}). Supported models implement the `SupportsLoRA` "
            "interface. Run this model without `enable_lora`.",
        )
    ]
    assert check(files(NEMOTRON, enable_lora=True), version=version, rule="lora-unsupported") == []
    assert check(files(KIMI, enable_lora=False), version=version, rule="lora-unsupported") == []


@pytest.mark.parametrize("version", RELEASES)
def test_flashinfer_moe_ep_backend_for_a_model_that_is_not_deepseek_v4(check: Check, version: str) -> None:
    backend = "flashinfer_moe_ep_mega_deep_gemm"
    found = check(files(NEMOTRON, moe_backend=backend), version=version, rule="moe-backend-architecture")
    if not at_least(version, "0.29.0"):
        assert found == []  # argparse refuses the choice before 0.29.0 (invalid-value)
        return
    allowed = "['DeepSeekV4MTPModel', 'DeepseekV4ForCausalLM']"
    if at_least(version, "0.30.0"):
        allowed = "['DeepSeekV4MTPModel', 'DeepseekV41ForCausalLM', 'DeepseekV4ForCausalLM']"
    assert messages(found) == [
        refuses(
            version,
            f'moe_backend = "{backend}" with a {NEMOTRON} model',
            f"moe_backend='{backend}' is only supported for DeepSeek-V4 models ({allowed}), but the model is "
            f"['{NEMOTRON}'].",
        )
    ]
    deepseek = files(NEMOTRON, config={"architectures": ["DeepseekV4ForCausalLM"]}, moe_backend=backend)
    assert check(deepseek, version=version, rule="moe-backend-architecture") == []


@pytest.mark.parametrize("version", ["0.29.0", "0.31.0", "0.32.0"])
def test_the_cutedsl_variant_is_checked_until_0_32(check: Check, version: str) -> None:
    found = check(
        files(LLAMA, moe_backend="flashinfer_moe_ep_mega_cutedsl"), version=version, rule="moe-backend-architecture"
    )
    assert len(found) == (0 if at_least(version, "0.32.0") else 1)


HC_SP_CAPABLE = {"architectures": ["Qwen4ExpForCausalLM"]}


@pytest.mark.parametrize("version", RELEASES)
def test_hc_sp_for_an_architecture_that_is_not_capable(check: Check, version: str) -> None:
    found = check(files(enable_hc_sp=True, tensor_parallel_size=2), version=version)
    if not at_least(version, "0.32.0"):
        assert [f.rule for f in found] == ["unknown-option"]  # no --enable-hc-sp before 0.32.0
        return
    assert messages(found) == [
        refuses(
            version,
            f"enable_hc_sp = true with tensor_parallel_size = 2 for a LlamaForCausalLM model, which vLLM {version}'s "
            "registry does not mark hc-sp capable",
            "--enable-hc-sp is not supported for this model",
        )
    ]
    assert found[0].rule == "hc-sp-unsupported"
    assert [loc.key for loc in found[0].locations] == [
        "serve.enable_hc_sp",
        "serve.tensor_parallel_size",
        "model.config",
    ]


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_hc_sp_with_pipeline_parallelism_for_a_capable_architecture(check: Check, version: str) -> None:
    found = check(
        files(config=HC_SP_CAPABLE, enable_hc_sp=True, tensor_parallel_size=2, pipeline_parallel_size=2),
        version=version,
        rule="hc-sp-pipeline-parallel",
    )
    assert messages(found) == [
        refuses(version, "enable_hc_sp = true with pipeline_parallel_size = 2", "--enable-hc-sp requires PP=1")
    ]
    assert found[0].fix == "set pipeline_parallel_size = 1, or enable_hc_sp = false"


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_hc_sp_is_judged_only_with_tensor_parallelism_and_known_facts(check: Check, version: str) -> None:
    rules = ("hc-sp-unsupported", "hc-sp-pipeline-parallel")

    def hc(files_: dict[str, str]) -> list[str]:
        return [f.rule for f in check(files_, version=version) if f.rule in rules]

    assert hc(files(config=HC_SP_CAPABLE, enable_hc_sp=True, tensor_parallel_size=2)) == []
    assert hc(files(enable_hc_sp=True)) == []  # no tensor parallelism: vLLM skips the checks
    assert hc(files(enable_hc_sp=False, tensor_parallel_size=2)) == []
    assert hc(files(enable_hc_sp=True, tensor_parallel_size=2, model_impl="transformers")) == []
    unknown = {"architectures": ["MyOwnForCausalLM"]}
    assert hc(files(config=unknown, enable_hc_sp=True, tensor_parallel_size=2)) == []
