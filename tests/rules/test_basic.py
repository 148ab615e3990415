"""literal-secret, missing-model, the Mamba and model-runner rules, and how the architecture is found."""

from __future__ import annotations

import pytest

from tests.conftest import MakeRepo
from tests.rules.conftest import Check, messages
from tests.rules.layers import NEMOTRON, RELEASES, at_least, layer

TOKEN = "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"  # shaped like a Hugging Face token, not a real one


def test_literal_hf_token_is_refused_without_repeating_it(check: Check) -> None:
    text = layer("Qwen3ForCausalLM", env={"HF_TOKEN": TOKEN})
    found = check({"s.toml": text})
    assert messages(found) == [
        "env.HF_TOKEN holds a token-shaped value that looks like a credential; a secret written into a profile ends "
        "up in git history and in every rendered file (the value is not shown here)"
    ]
    assert found[0].fix == (
        "write HF_TOKEN = { secret = true } and pass the value from the launching environment; then revoke the "
        "exposed credential"
    )
    assert TOKEN not in repr(found[0])
    assert check({"s.toml": layer("Qwen3ForCausalLM", env={"HF_TOKEN": {"secret": True}})}) == []


@pytest.mark.parametrize(
    ("name", "value", "flagged"),
    [
        ("OPENAI_API_KEY", "abc123", True),
        ("WANDB_TOKEN", "wandb-value-42", True),
        ("DB_PASSWORD", "hunter2", True),
        ("HF_TOKEN", "${HF_TOKEN}", False),
        ("VLLM_LOGGING_LEVEL", "INFO", False),
        ("SOME_SETTING", "sk-" + "a" * 30, True),
        ("MAX_TOKENS", "", False),
    ],
)
def test_literal_secret_by_name_or_shape(check: Check, name: str, value: str, flagged: bool) -> None:
    found = check({"s.toml": layer("Qwen3ForCausalLM", env={name: value})}, rule="literal-secret")
    assert bool(found) is flagged
    if found:
        assert value not in found[0].message and value not in found[0].fix


def test_literal_api_key_option_in_a_role(check: Check) -> None:
    text = '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n\n[roles.a.serve]\napi_key = "s3cret"\n'
    found = check({"s.toml": text}, rule="literal-secret")
    assert messages(found) == [
        "roles.a.serve.api_key holds a literal value that looks like a credential; a secret written into a profile "
        "ends up in git history and in every rendered file (the value is not shown here)"
    ]


def test_missing_model(check: Check) -> None:
    found = check({"s.toml": "[serve]\nport = 8000\n"})
    assert [(f.rule, f.role, f.message) for f in found] == [
        ("missing-model", "serve", "role serve runs vLLM but no layer of the stack sets serve.model (s)")
    ]
    assert found[0].fix == 'add a model layer to the stack, or set model = "..." in [serve]'
    command_only = '[roles.proxy]\ncommand = ["vllm-router"]\n'
    assert check({"s.toml": command_only}) == []


@pytest.mark.parametrize("version", RELEASES)
def test_stochastic_rounding_needs_a_float16_ssm_cache(check: Check, version: str) -> None:
    found = check({"s.toml": layer(NEMOTRON, enable_mamba_cache_stochastic_rounding=True)}, version=version)
    assert messages(found) == [
        f"enable_mamba_cache_stochastic_rounding = true with mamba_ssm_cache_dtype unset; vLLM {version} refuses to start: "
        '"Stochastic rounding for Mamba cache requires the SSM cache to be float16. Please set it explicitly, by '
        "specifying `--mamba-ssm-cache-dtype float16`, or disable stochastic rounding by not specifying "
        '`--enable-mamba-cache-stochastic-rounding`."'
    ]
    ok = layer(NEMOTRON, enable_mamba_cache_stochastic_rounding=True, mamba_ssm_cache_dtype="float16")
    assert check({"s.toml": ok}, version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_model_runner_v2_requested_for_ngram(check: Check, version: str) -> None:
    spec = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4}
    text = layer("Qwen3ForCausalLM", env={"VLLM_USE_V2_MODEL_RUNNER": "1"}, speculative_config=spec)
    found = check({"s.toml": text}, version=version)
    if at_least(version, "0.32.0"):
        assert found == []  # V2 runs ngram from 0.32.0
        return
    feature = (
        "ngram/ngram_gpu speculative decoding" if not at_least(version, "0.30.0") else "speculative method 'ngram'"
    )
    assert messages(found) == [
        f'VLLM_USE_V2_MODEL_RUNNER = "1" asks for Model Runner V2 with {feature}; vLLM {version} refuses to start: '
        f'"Model Runner V2 does not yet support: {feature}"'
    ]
    unset = layer("Qwen3ForCausalLM", speculative_config=spec)
    assert check({"s.toml": unset}, version=version) == []


def test_architecture_from_a_local_config_json(check: Check, make_repo: MakeRepo) -> None:
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
