"""How the architecture is found: a local config.json, a model folder, and what a broken one says."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import profilekit
from profilekit.rules.models import VENDORED, WELL_KNOWN_MODELS
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


# ---- the config.json keys profilekit ships for well-known models (rules/model-configs.json) ------------------


def _literals() -> set[str]:
    """Every string the rules and the vLLM models they call spell out: the config.json keys a check can read."""
    import ast

    package = Path(profilekit.__file__).parent
    found: set[str] = set()
    for path in [
        *(package / "rules").glob("*.py"),
        *(package / "vllm").glob("*.py"),
        *(package / "capacity").glob("*.py"),
    ]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
    return found


def test_each_shipped_config_names_its_source_and_keeps_only_keys_a_check_reads() -> None:
    entries = json.loads(VENDORED.read_text(encoding="utf-8"))["models"]
    assert entries, "no model shipped"
    read = _literals()
    for model, entry in entries.items():
        assert re.fullmatch(rf"https://huggingface\.co/{re.escape(model)}/blob/\S+/config\.json", entry["source"])
        datetime.date.fromisoformat(entry["transcribed"])
        config = entry["config"]
        assert sorted(set(config) - read) == [], f"{model}: keys no check reads"
        for name in (model, *entry.get("also", [])):  # the architecture table agrees with the file
            assert WELL_KNOWN_MODELS[name.lower()] == config["architectures"][0], name


def test_a_layer_s_config_json_comes_before_the_shipped_one(check: Check) -> None:
    text = '[model]\nconfig = "m.json"\n\n[serve]\nmodel = "Qwen/Qwen3-0.6B"\ntensor_parallel_size = 2\n'
    files = {"s.toml": text, "profiles/../m.json": '{"architectures": ["Qwen3ForCausalLM"], "num_attention_heads": 3}'}
    assert [f.rule for f in check(files)] == ["attention-heads-tensor-parallel"]
    shipped = {"s.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\ntensor_parallel_size = 2\n'}
    assert check(shipped) == []  # 16 heads
