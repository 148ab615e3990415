"""max_model_len against the model's positions, and the warning for checks a missing config.json stops."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import MakeRepo, Run
from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least, layer

LONG = (
    "User-specified max_model_len ({mml}) is greater than the derived max_model_len ({key}={derived} or "
    "model_max_length={mmlen} in model's config.json). To allow overriding this maximum, set the env var "
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model "
    "uses relative position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model "
    "uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA array "
    "out-of-bounds error."
)


@pytest.mark.parametrize("version", RELEASES)
def test_max_model_len_above_the_positions(check: Check, version: str) -> None:
    found = check(files(max_model_len=1024), version=version)
    assert messages(found) == [
        refuses(
            version,
            "max_model_len = 1024 is more than the model allows (max_position_embeddings = 512 in its config.json)",
            LONG.format(mml=1024, key="max_position_embeddings", derived="512.0", mmlen=None),
        )
    ]
    assert found[0].rule == "max-model-len-positions"
    assert found[0].fix == (
        'set max_model_len to 512 or less, or set env VLLM_ALLOW_LONG_MAX_MODEL_LEN = "1" (only for a model whose '
        "positions really extend that far)"
    )
    assert check(files(max_model_len=512), version=version) == []
    assert check(files(max_model_len="512"), version=version) == []
    assert check(files(max_model_len="auto"), version=version) == []


def test_the_override_env_and_the_keys_vllm_reads(check: Check) -> None:
    assert check(files(env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "true"}, max_model_len=1024)) == []
    assert check(files(config={"model_max_length": 2048}, max_model_len=1024)) == []
    linear = {"rope_scaling": {"rope_type": "linear", "factor": 4.0}}
    assert check(files(config=linear, max_model_len=2048)) == []
    smallest_keys = {"max_position_embeddings": None, "n_positions": 700, "max_seq_len": 550}
    smallest = check(files(config=smallest_keys, max_model_len=600))
    assert messages(smallest) == [
        refuses(
            "0.33.0",
            "max_model_len = 600 is more than the model allows (max_seq_len = 550 in its config.json)",
            LONG.format(mml=600, key="max_seq_len", derived="550.0", mmlen=None),
        )
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_yarn_scales_the_original_length_before_0_30(check: Check, version: str) -> None:
    yarn = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256}}
    found = check(files(config=yarn, max_model_len=600), version=version)
    if at_least(version, "0.30.0"):
        assert [f.rule for f in found] == ["max-model-len-positions"]
    else:
        assert found == []  # 256 x 4 = 1024 positions


def test_a_declared_architecture_still_reads_the_config_json(check: Check) -> None:
    text = layer("LlamaForCausalLM", max_model_len=1024).replace(
        '[model]\narchitecture = "LlamaForCausalLM"', '[model]\narchitecture = "LlamaForCausalLM"\nconfig = "m.json"'
    )
    config = '{"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 512}'
    found = check({"s.toml": text, "profiles/../m.json": config})
    assert [(f.rule, [loc.key for loc in f.locations]) for f in found] == [
        ("max-model-len-positions", ["serve.max_model_len", "model.architecture", "model.config"])
    ]


def test_a_config_json_without_the_keys_is_named(check: Check) -> None:
    found = check(
        files(
            config={"max_position_embeddings": None, "num_attention_heads": None},
            max_model_len=600,
            tensor_parallel_size=2,
        )
    )
    assert messages(found) == [
        "vLLM 0.33.0's checks against the config.json of model 'dummy/LlamaForCausalLM' did not run: the file lacks "
        "the keys they read"
    ]
    assert found[0].notes == [
        "not checked: max_model_len = 600 against the model's positions (the config.json has no "
        "max_position_embeddings or other length key)",
        "not checked: tensor_parallel_size = 2 against the attention heads (the config.json has no num_attention_heads)",
    ]
    assert [loc.key for loc in found[0].locations] == [
        "model.config",
        "serve.max_model_len",
        "serve.tensor_parallel_size",
    ]


def test_nothing_to_check_means_no_warning(check: Check) -> None:
    assert check(files(with_config=False)) == []


def test_strict_makes_the_missing_facts_an_error(make_repo: MakeRepo, run: Run) -> None:
    root: Path = make_repo(files(with_config=False, max_model_len=4096))
    result = run("check", "s", cwd=root)
    assert result.code == 0
    assert "warning model-facts-missing vLLM 0.33.0's checks against the config.json of model" in result.out
    assert "    not checked: max_model_len = 4096 against the model's positions\n" in result.out
    assert run("check", "s", "--strict", cwd=root).code == 1
    assert run("lint", "--strict", cwd=root).code == 1


@pytest.mark.parametrize(
    ("serve", "message"),
    [
        (
            {"tensor_parallel_size": 3},
            "Total number of attention heads (4) must be divisible by tensor parallel size (3).",
        ),
        (
            {"mamba_block_size": 256, "enable_prefix_caching": False},
            "--mamba-block-size can only be set with --enable-prefix-caching",
        ),
    ],
)
def test_the_issue_rows_fail_check_lint_and_render(
    make_repo: MakeRepo, run: Run, serve: dict[str, object], message: str
) -> None:
    """Issue 8's table: each of these passed `check`, `lint --strict` and `render` without a word."""
    root: Path = make_repo(files(**serve))
    result = run("check", "s", cwd=root)
    assert result.code == 1
    assert f'vLLM 0.33.0 refuses to start: "{message}"' in result.out
    assert run("lint", "--strict", cwd=root).code == 1
    assert run("render", "s", "--out", str(root / "out"), cwd=root).code == 1
    assert not (root / "out").exists()
