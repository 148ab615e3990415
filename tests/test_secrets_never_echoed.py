"""No output carries a secret value (issue 8 item 5): every command and format, over secrets in every position.

The layers put secret-looking values where rules echo values back (invalid-value fixes, choices, enum
messages, connector names, env values that rules quote), under secret-looking names (serve options, keys
inside JSON-valued options, env, command arguments), and where `explain` shows overridden values.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from profilekit.redact import REDACTED, Redactor, is_secret_name
from tests.conftest import MakeRepo, Run

HF = "hf_" + "Zq8Lm3Nw5Rt7Vx9Bc2Df4Gh6Jk8Mp0Qs2"  # token-shaped, not a real token
SK = "sk-" + "proj0aB1cD2eF3gH4iJ5kL6mN7"
GH = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"
AWS = "AKIA" + "ABCDEFGHIJKLMNOP"
SLACK = "xoxb-" + "12345678901-abcdef"
# with an underscore, which Markdown escapes: `sk-...\\_...` no longer matches the secret or its token shape
CONNECTOR = "sk-" + "c" * 12 + "_" + "c" * 11

# the value, and where it is written (comments only: the test asserts none of them is ever printed)
SECRETS = {
    "sk-live-123": "serve.api_key as a string (the issue's row: invalid-value echoed it in its fix)",
    "key-in-a-list-42": "serve.api_key as an array, in a role",
    HF: "serve.hf_token, and env HF_TOKEN",
    SK: "serve.kv_cache_dtype (an invalid choice, echoed by invalid-value)",
    "extra-auth-value-77": "kv_transfer_config.kv_connector_extra_config.auth_token (a JSON-option leaf)",
    GH: "a list inside kv_connector_extra_config",
    "hunter2-password": "env DB_PASSWORD",
    "wandb-secret-key-7": "env WANDB_API_KEY in a role",
    AWS: "env VLLM_USE_V2_MODEL_RUNNER (quoted by model-runner rules)",
    SLACK: "env PYTORCH_CUDA_ALLOC_CONF beside a connector (quoted by kv-expandable-segments)",
    "cmd-api-key-value-9": "command argument after --api-key",
    "cmd-token-value-8": "command argument --token=...",
    "overridden-secret-5": "serve.api_key in a base layer, overridden later (explain shows overridden values)",
    "sk-" + "b" * 24: "serve.mamba_backend (an enum vLLM converts after parsing)",
    CONNECTOR: "kv_transfer_config.kv_connector in a role (an unknown connector name, with did-you-mean)",
    # HF also sits in a layer description, which `list` prints
}

BASE = f"""
[layer]
abstract = true

[serve]
model = "Qwen/Qwen3-0.6B"
api_key = ["overridden-secret-5"]

[env]
HF_TOKEN = "{HF}"
"""

APP = f"""
[layer]
extends = ["base"]

[serve]
api_key = "sk-live-123"
hf_token = "{HF}"
kv_cache_dtype = "{SK}"
mamba_backend = "sk-{"b" * 24}"

[serve.kv_transfer_config]
kv_connector = "NixlConnector"
kv_role = "kv_both"
kv_connector_extra_config = {{ auth_token = "extra-auth-value-77", backends = ["{GH}"] }}

[env]
DB_PASSWORD = "hunter2-password"
VLLM_USE_V2_MODEL_RUNNER = "{AWS}"
PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True,{SLACK}"

[roles.prefill.serve]
api_key = ["key-in-a-list-42"]
kv_transfer_config = {{ kv_connector = "{CONNECTOR}", kv_role = "kv_producer" }}

[roles.prefill.env]
WANDB_API_KEY = "wandb-secret-key-7"

[roles.decode.serve]
port = 8200

[roles.proxy]
kind = "command"
command = ["vllm-router", "--api-key", "cmd-api-key-value-9", "--token=cmd-token-value-8", "--port", "8192"]

[roles.decode]
kind = "vllm"

[roles.prefill]
kind = "vllm"
"""

OTHER = f"""
[layer]
description = "a second deployable layer, so that lint composes pairs; do not paste tokens like {HF} here"

[serve]
model = "Qwen/Qwen3-0.6B"
use_replayssm = true
"""


@pytest.fixture
def repo(make_repo: MakeRepo) -> Path:
    return make_repo(
        {"base.toml": BASE, "app.toml": APP, "other.toml": OTHER},
        config='[vllm]\nversion = "0.33.0"\n\n[lint]\nstacks = ["app+other"]\ncombinations = "all"\n',
    )


COMMANDS = [
    *[("check", "app", "--format", fmt) for fmt in ("text", "json", "github", "sarif", "markdown")],
    ("check", "app+other", "--strict"),
    *[("lint", "--format", fmt) for fmt in ("text", "json", "github", "sarif", "markdown")],
    ("explain", "app"),
    ("explain", "app", "--format", "json"),
    ("explain", "app", "api_key"),
    ("explain", "app", "api_key", "--format", "json"),
    ("explain", "app", "env"),
    ("show", "app"),
    ("show", "app", "--format", "json"),
    ("show", "app", "--role", "proxy"),
    ("render", "app", "--print", "--role", "proxy"),
    ("list", "--format", "json"),
    ("diff", "app", "other"),
    ("diff", "other", "app", "--format", "json"),
    ("diff", "app", "--from-release", "0.30.0", "--to-release", "0.33.0"),
    ("diff", "app", "--from-release", "0.30.0", "--to-release", "0.33.0", "--format", "json"),
    ("lint", "--to-release", "0.30.0"),
    ("lint", "--to-release", "0.30.0", "--format", "json"),
]


def _as_read(markdown: str) -> str:
    """What a reader of rendered Markdown sees: escaping (`hf\\_...`) must not hide a secret from the sweep."""
    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    return unescape(re.sub(r"<[^>]+>", " ", html)).replace("\u200b", "")


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_no_output_carries_a_secret(repo: Path, run: Run, args: tuple[str, ...]) -> None:
    result = run("--repo", repo, *args)
    printed = result.out + result.err
    if "markdown" in args:
        printed += _as_read(result.out)
    assert printed.strip(), result  # the command said something
    leaked = [value for value in SECRETS if value in printed]
    assert leaked == [], result


def test_the_sweep_exercises_the_echoing_rules(repo: Path, run: Run) -> None:
    """The layers do reach the places that would echo a value: without redaction, the sweep would fail."""
    data = json.loads(run("--repo", repo, "check", "app", "--format", "json").out)
    rules = {f["rule"] for f in data["findings"]}
    assert {"invalid-value", "literal-secret", "kv-connector-unknown", "kv-expandable-segments"} <= rules
    # (a fix that would quote a secret value: test_a_numeric_secret_is_neither_accepted_nor_echoed)
    secret_keys = sorted(
        loc["key"] for f in data["findings"] if f["rule"] == "literal-secret" for loc in f["locations"]
    )
    assert secret_keys == [
        "env.DB_PASSWORD",
        "env.HF_TOKEN",
        "env.PYTORCH_CUDA_ALLOC_CONF",
        "env.VLLM_USE_V2_MODEL_RUNNER",
        "roles.prefill.env.WANDB_API_KEY",
        "roles.prefill.serve.api_key[0]",
        "roles.prefill.serve.kv_transfer_config.kv_connector",
        "roles.proxy.command[2]",
        "roles.proxy.command[3]",
        "serve.api_key",
        "serve.api_key[0]",
        "serve.hf_token",
        "serve.kv_cache_dtype",
        "serve.kv_transfer_config.kv_connector_extra_config.auth_token",
        "serve.kv_transfer_config.kv_connector_extra_config.backends[0]",
        "serve.mamba_backend",
    ]


def test_explain_and_show_mark_what_they_hide(repo: Path, run: Run) -> None:
    result = run("--repo", repo, "explain", "app", "api_key", "--role", "serve")
    assert (
        result.out
        == (
            f'[serve] serve.api_key = "{REDACTED}"\n'
            "    set at profiles/app.toml:5:1  (serve.api_key, layer app)\n"
            f'    overrides ["{REDACTED}"] from profiles/base.toml:6:1  (serve.api_key, layer base)\n'
        )
        or "[serve]" not in result.out
    )
    shown = json.loads(run("--repo", repo, "show", "app", "--format", "json", "--role", "proxy").out)
    assert shown["roles"]["proxy"]["command"] == [
        "vllm-router",
        "--api-key",
        REDACTED,
        f"--token={REDACTED}",
        "--port",
        "8192",
    ]


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("HF_TOKEN", True),
        ("auth_token", True),
        ("client_secret", True),
        ("DB_PASSWORD", True),
        ("passwordfile", True),
        ("max_num_batched_tokens", False),
        ("tokenizer", False),
        ("ssl_keyfile", False),
        ("VLLM_LOGGING_LEVEL", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_redactor_hides_every_spelling_of_a_value_and_token_shapes() -> None:
    redact = Redactor({'pa"ss\\word-1'})
    assert redact.text('value "pa\\"ss\\\\word-1" and pa"ss\\word-1') == f'value "{REDACTED}" and {REDACTED}'
    assert redact.text(f"token {HF} here") == f"token {REDACTED} here"
    assert Redactor({"abcd"}).text("abcdef abcd") == f"abcdef {REDACTED}"  # a short value only where it stands alone


def test_a_numeric_secret_is_neither_accepted_nor_echoed(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"s.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\napi_key = 918273\n'})
    result = run("--repo", root, "check", "s")
    assert result.code == 1
    assert "918273" not in result.out + result.err
    assert f'    fix: write it in quotes: api_key = "{REDACTED}"\n' in result.out
    assert "error literal-secret serve.api_key holds a literal value" in result.out


def test_issue_row_api_key_string_fix_does_not_print_the_secret(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"s.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\napi_key = "sk-live-123"\n'})
    result = run("--repo", root, "check", "s")
    assert result.code == 1
    # one string for a list option is a list of one: only the credential itself is an error
    assert result.out == (
        "profiles/s.toml:3:1: error literal-secret serve.api_key holds a literal value that looks like a credential; "
        "a secret written into a profile ends up in git history and in every rendered file (the value is not shown "
        "here)\n"
        "    in stack s\n"
        "    fix: move the value to an env variable marked { secret = true } and reference it at launch; then revoke "
        "the exposed credential\n"
        "1 error, 0 warnings\n"
    )
