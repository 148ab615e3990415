"""How the architecture is found: a local config.json, a model folder, and what a broken one says."""

from __future__ import annotations

from tests.rules.conftest import Check


def test_architecture_from_a_local_config_json(check: Check) -> None:
    files = {
        "s.toml": '[model]\nconfig = "models/llama/config.json"\n\n[serve]\nmodel = "acme/llama"\nuse_replayssm = true\n',
        "profiles/../models/llama/config.json": '{"architectures": ["LlamaForCausalLM"]}',
    }
    found = check(files, rule="replayssm-architecture")
    assert found[0].message.startswith("use_replayssm = true with a LlamaForCausalLM model (config.json); ")
    assert found[0].locations[1].key == "model.config"


def test_architecture_from_a_model_folder(check: Check) -> None:
    files = {
        "s.toml": '[serve]\nmodel = "weights/nemo"\nuse_replayssm = true\n\n[env]\nVLLM_USE_V2_MODEL_RUNNER = "0"\n',
        "profiles/../weights/nemo/config.json": '{"architectures": ["NemotronHForCausalLM"]}',
    }
    assert check(files) == []


def test_a_broken_config_json_says_why(check: Check) -> None:
    files = {
        "s.toml": '[model]\nconfig = "cfg.json"\n\n[serve]\nmodel = "acme/x"\nuse_replayssm = true\n',
        "profiles/../cfg.json": "{not json",
    }
    found = check(files, rule="unknown-architecture")
    assert len(found) == 1
    assert "cfg.json is not valid JSON" in found[0].message
