"""`profilekit explain STACK KEY`: bare option names, vLLM's defaults, and keys vLLM does not have (issue 8 item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import MakeRepo, Run

BASE = """
[layer]
abstract = true

[serve]
model = "Qwen/Qwen3-0.6B"
max_num_seqs = 256
port = 8000

[env]
VLLM_LOGGING_LEVEL = "INFO"
"""

PD = """
[layer]
extends = ["base"]

[roles.prefill.serve]
port = 8100

[roles.decode.serve]
port = 8200

[roles.proxy]
kind = "command"
command = ["vllm-router", "--port", "8192"]

[roles.decode]
kind = "vllm"

[roles.prefill]
kind = "vllm"
"""


@pytest.fixture
def repo(make_repo: MakeRepo) -> Path:
    return make_repo({"base.toml": BASE, "qwen-pd.toml": PD})


def test_issue_row_bare_option_name_finds_the_value_base_sets(repo: Path, run: Run) -> None:
    result = run("--repo", repo, "explain", "qwen-pd", "max_num_seqs")
    assert result.code == 0, result
    assert result.out == (
        "[prefill] serve.max_num_seqs = 256\n"
        "    set at profiles/base.toml:6:1  (serve.max_num_seqs, layer base)\n"
        "[decode] serve.max_num_seqs = 256\n"
        "    set at profiles/base.toml:6:1  (serve.max_num_seqs, layer base)\n"
    )
    assert run("--repo", repo, "explain", "qwen-pd", "max-num-seqs").out == result.out
    assert run("--repo", repo, "explain", "qwen-pd", "serve.max_num_seqs").out == result.out


def test_bare_port_and_a_role_path(repo: Path, run: Run) -> None:
    result = run("--repo", repo, "explain", "qwen-pd", "port", "--role", "decode")
    assert result.code == 0, result
    assert result.out == (
        "[decode] serve.port = 8200\n"
        "    set at profiles/qwen-pd.toml:8:1  (roles.decode.serve.port, layer qwen-pd)\n"
        "    overrides 8000 from profiles/base.toml:7:1  (serve.port, layer base)\n"
    )
    assert run("--repo", repo, "explain", "qwen-pd", "roles.decode.serve.port").out == result.out


def test_bare_env_name_resolves_to_env(repo: Path, run: Run) -> None:
    result = run("--repo", repo, "explain", "qwen-pd", "VLLM_LOGGING_LEVEL", "--role", "prefill")
    assert result.code == 0, result
    assert result.out == (
        '[prefill] env.VLLM_LOGGING_LEVEL = "INFO"\n'
        "    set at profiles/base.toml:10:1  (env.VLLM_LOGGING_LEVEL, layer base)\n"
    )
    unset = run("--repo", repo, "explain", "qwen-pd", "UCX_TLS")
    assert (unset.code, unset.out) == (
        0,
        "env.UCX_TLS is not set by any layer of qwen-pd; the launching environment decides\n",
    )


def test_vllm_default_where_no_layer_sets_the_option(repo: Path, run: Run) -> None:
    result = run("--repo", repo, "explain", "qwen-pd", "gpu_memory_utilization")
    assert (result.code, result.out) == (
        0,
        "serve.gpu_memory_utilization is not set by any layer of qwen-pd; vLLM 0.33.0's default is 0.92\n",
    )
    older = run("--repo", repo, "--vllm-version", "0.27.0", "explain", "qwen-pd", "enforce_eager")
    assert older.out == "serve.enforce_eager is not set by any layer of qwen-pd; vLLM 0.27.0's default is false\n"
    derived = run("--repo", repo, "explain", "qwen-pd", "max_num_batched_tokens")  # vLLM picks it by GPU
    assert derived.out == (
        "serve.max_num_batched_tokens is not set by any layer of qwen-pd; vLLM 0.33.0's default depends on the GPU, "
        "and no layer declares one ([hardware] gpu): 2048 below 70 GiB or on an A100 or a GB10, 8192 from 70 GiB, "
        "16384 from 160 GiB\n"
    )
    other = run("--repo", repo, "explain", "qwen-pd", "max_model_len")  # decided at start-up, whatever the GPU
    assert other.out == (
        "serve.max_model_len is not set by any layer of qwen-pd; vLLM 0.33.0's default is None (vLLM decides at "
        "start-up)\n"
    )


def test_default_beside_roles_that_set_it(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "s.toml": '[serve]\nmodel = "m"\n[roles.a.serve]\nport = 9000\n[roles.b.serve]\nenforce_eager = true\n\n[roles.a]\nkind = "vllm"\n\n[roles.b]\nkind = "vllm"\n'
        }
    )
    result = run("--repo", root, "explain", "s", "port")
    assert result.out == (
        "[a] serve.port = 9000\n"
        "    set at profiles/s.toml:4:1  (roles.a.serve.port, layer s)\n"
        "[b] serve.port is not set by any layer; vLLM 0.33.0's default is 8000\n"
    )
    data = json.loads(run("--repo", root, "explain", "s", "port", "--format", "json").out)
    assert data["defaults"] == [{"role": "b", "key": "serve.port", "value": 8000, "vllm_version": "0.33.0"}]
    assert [e["role"] for e in data["entries"]] == ["a"]


def test_json_default_field_when_no_layer_sets_it(repo: Path, run: Run) -> None:
    result = run("--repo", repo, "explain", "qwen-pd", "max_model_len", "--format", "json")
    assert result.code == 0, result
    assert json.loads(result.out) == {
        "stack": "qwen-pd",
        "entries": [],
        "defaults": [
            {"role": "prefill", "key": "serve.max_model_len", "value": None, "vllm_version": "0.33.0"},
            {"role": "decode", "key": "serve.max_model_len", "value": None, "vllm_version": "0.33.0"},
        ],
    }


@pytest.mark.parametrize("key", ["max_num_seq", "serve.max_num_seq"])
def test_a_key_vllm_does_not_have_exits_1_with_did_you_mean(repo: Path, run: Run, key: str) -> None:
    result = run("--repo", repo, "explain", "qwen-pd", key)
    assert result.code == 1
    assert result.out == ""
    assert result.err == (
        "profilekit: error: vLLM 0.33.0 has no option 'max_num_seq'\n  hint: did you mean 'max_num_seqs'?\n"
    )


def test_an_unknown_option_a_layer_writes_is_still_explained(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"s.toml": '[serve]\nmodel = "m"\nnot_an_option = 1\n'})
    result = run("--repo", root, "explain", "s", "not_an_option")
    assert (result.code, result.out) == (
        0,
        "[serve] serve.not_an_option = 1\n    set at profiles/s.toml:3:1  (serve.not_an_option, layer s)\n",
    )
