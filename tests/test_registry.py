"""The model-registry facts shipped per release (tools/gen_registry.py) and how rules look an architecture up."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from profilekit.vllm.registry import load_registry
from profilekit.vllm.versions import SUPPORTED


@pytest.mark.parametrize("version", SUPPORTED)
def test_every_release_ships_its_registry_facts(version: str) -> None:
    registry = load_registry(version)
    assert registry is not None and registry.release == version
    assert registry.flag("LlamaForCausalLM", "is_text_generation_model") is True
    assert registry.flag("LlamaForCausalLM", "is_pooling_model") is False
    assert registry.flag("BertModel", "is_pooling_model") is True
    assert registry.flag("Qwen2VLForConditionalGeneration", "supports_multimodal") is True


def test_a_fact_vllm_does_not_register_is_unknown_not_false() -> None:
    registry = load_registry("0.33.0")
    assert registry is not None
    assert registry.flag("MyOwnForCausalLM", "is_text_generation_model") is None
    assert registry.flag(None, "is_text_generation_model") is None
    assert registry.flag("LlamaForCausalLM", "no_such_flag") is None
    assert registry.video_pruning_methods("MyOwnForCausalLM") is None
    assert registry.video_pruning_methods("LlamaForCausalLM") == ()
    assert registry.video_pruning_methods("Qwen3VLForConditionalGeneration") == ("evs", "vidcom2")


def test_hc_sp_is_a_fact_of_the_releases_that_have_it() -> None:
    old, new = load_registry("0.31.0"), load_registry("0.33.0")
    assert old is not None and new is not None
    assert old.flag("LlamaForCausalLM", "supports_hc_sp") is None  # the flag arrived in 0.32.0
    assert new.flag("LlamaForCausalLM", "supports_hc_sp") is False
    assert new.flag("Qwen4ExpForCausalLM", "supports_hc_sp") is True


def test_resolve_reads_the_first_architecture_and_leaves_the_transformers_backend_alone() -> None:
    registry = load_registry("0.33.0")
    assert registry is not None
    assert registry.resolve(["LlamaForCausalLM"]) == "LlamaForCausalLM"
    assert registry.resolve(["LlamaForCausalLM"], "transformers") is None
    assert registry.resolve(["LlamaForCausalLM"], "terratorch") is None
    assert registry.resolve(["MyOwnForCausalLM", "LlamaForCausalLM"]) is None
    assert registry.resolve([]) is None and registry.resolve(None) is None


def test_an_unknown_release_has_no_facts() -> None:
    assert load_registry("0.26.0") is None


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_shipped_file_names_no_host_path(version: str) -> None:
    text = resources.files("profilekit.vllm").joinpath("catalogues", f"registry-{version}.json").read_text()
    assert "/root/" not in text and "/home/" not in text and ".cache" not in text
    assert json.loads(text)["generator"] == "tools/gen_registry.py"
