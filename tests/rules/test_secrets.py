"""literal-secret: credentials written into a layer are refused, and never repeated."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.layers import layer

TOKEN = "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z"  # shaped like a Hugging Face token, not a real one


@pytest.mark.parametrize(
    ("name", "value", "flagged"),
    [
        ("OPENAI_API_KEY", "abc123", True),
        ("WANDB_TOKEN", "wandb-value-42", True),
        ("DB_PASSWORD", "hunter2", True),
        ("HF_TOKEN", "$${HF_TOKEN}", False),
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
    text = '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n\n[roles.a.serve]\napi_key = "s3cret"\n\n[roles.a]\nkind = "vllm"\n'
    found = check({"s.toml": text}, rule="literal-secret")
    assert messages(found) == [
        "roles.a.serve.api_key holds a literal value that looks like a credential; a secret written into a profile "
        "ends up in git history and in every rendered file (the value is not shown here)"
    ]


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


def test_secrets_in_json_option_leaves_and_command_arguments(check: Check) -> None:
    text = (
        '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n'
        'kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_both", '
        'kv_connector_extra_config = { auth_token = "abc-123-xyz" } }\n'
        '[roles.proxy]\nkind = "command"\ncommand = ["router", "--api-key", "abc-456-xyz", "--client-secret=abc-789-xyz"]\n'
        '[roles.serve.serve]\napi_key = ["abc-000-xyz"]\n'
    )
    found = check({"s.toml": text}, rule="literal-secret")
    assert [loc.key for f in found for loc in f.locations] == [
        "serve.kv_transfer_config.kv_connector_extra_config.auth_token",
        "roles.proxy.command[2]",
        "roles.proxy.command[3]",
        "roles.serve.serve.api_key[0]",
    ]
    assert all("abc-" not in f.message + f.fix for f in found)


def test_references_in_secret_positions_pass(check: Check) -> None:
    text = (
        '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n'
        '[roles.proxy]\nkind = "command"\ncommand = ["router", "--api-key", "$${API_KEY}", "--token-file=/run/secrets/token"]\n'
        '[roles.serve.serve]\napi_key = ["$API_KEY"]\n'
    )
    assert check({"s.toml": text}, rule="literal-secret") == []
