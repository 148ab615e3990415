"""Contradictions inside speculative_config (rules/speculative.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages, no_config, not_checked
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES

NGRAM = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2, "prompt_lookup_max": 4}


@pytest.mark.parametrize("version", RELEASES)
def test_a_token_count_without_a_draft_model(check: Check, version: str) -> None:
    found = check(files(speculative_config={"num_speculative_tokens": 2}), version=version)
    assert messages(found) == [
        refuses(
            version,
            "speculative_config has num_speculative_tokens = 2 and no method but no draft model",
            "num_speculative_tokens was provided but without speculative model.",
        )
    ]
    assert found[0].rule == "speculative-draft-model"
    eagle = check(files(speculative_config={"method": "eagle3", "num_speculative_tokens": 2}), version=version)
    assert [f.rule for f in eagle] == ["speculative-draft-model"]
    assert check(files(speculative_config=NGRAM), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_prompt_lookup_bounds(check: Check, version: str) -> None:
    spec = {**NGRAM, "prompt_lookup_min": 5, "prompt_lookup_max": 3}
    found = check(files(speculative_config=spec), version=version)
    assert messages(found) == [
        refuses(
            version,
            "speculative_config.prompt_lookup_min = 5 is above prompt_lookup_max = 3",
            "prompt_lookup_min=5 must be <= prompt_lookup_max=3",
        )
    ]
    assert found[0].rule == "speculative-prompt-lookup"
    only_min = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 7}  # max defaults to min
    assert check(files(speculative_config=only_min), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_ngram_needs_a_token_count(check: Check, version: str) -> None:
    found = check(files(speculative_config={"method": "ngram"}), version=version)
    assert messages(found) == [
        refuses(
            version,
            'speculative_config with method = "ngram", no draft model and no num_speculative_tokens',
            "num_speculative_tokens must be provided with speculative model unless the draft model config contains an "
            "n_predict parameter.",
        )
    ]
    assert found[0].rule == "speculative-num-tokens"
    for spec in ({"method": "eagle"}, {"prompt_lookup_max": 3}, {"method": "ngram_gpu"}):
        assert [f.rule for f in check(files(speculative_config=spec), version=version)] == ["speculative-num-tokens"]
    # a draft model (read over the network) may name its count; suffix decoding defaults it
    assert check(files(speculative_config={"method": "eagle", "model": "org/eagle-head"}), version=version) == []
    assert check(files(speculative_config={"method": "suffix"}), version=version, rule="speculative-num-tokens") == []
    # an MTP method or dspark takes the target as its model only when a count is given
    for method in ("mtp", "nemotron_h_mtp", "dspark", "custom_class"):
        found = check(files(speculative_config={"method": method}), version=version, rule="speculative-num-tokens")
        assert [f.rule for f in found] == ["speculative-num-tokens"], method


# --spec-method / --spec-model / --spec-tokens: EngineArgs.create_speculative_config merges them into the table


@pytest.mark.parametrize("version", RELEASES)
def test_the_shorthand_options_are_judged_as_the_table_they_fill(check: Check, version: str) -> None:
    found = check(files(spec_method="ngram"), version=version)
    assert messages(found) == [
        refuses(
            version,
            'speculative_config with method = "ngram", no draft model and no num_speculative_tokens',
            "num_speculative_tokens must be provided with speculative model unless the draft model config contains an "
            "n_predict parameter.",
        )
    ]
    assert found[0].rule == "speculative-num-tokens"
    assert found[0].locations[0].key == "serve.spec_method"  # where the layer writes it
    count_only = check(files(spec_tokens=2), version=version)
    assert messages(count_only) == [
        refuses(
            version,
            "speculative_config has num_speculative_tokens = 2 and no method but no draft model",
            "num_speculative_tokens was provided but without speculative model.",
        )
    ]
    assert check(files(spec_method="ngram", spec_tokens=2), version=version) == []
    assert check(files(spec_method="ngram", speculative_config={"num_speculative_tokens": 2}), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_a_shorthand_token_count_has_the_fields_bound(check: Check, version: str) -> None:
    found = check(files(spec_method="ngram", spec_tokens=0), version=version)
    assert [(f.rule, f.message) for f in found] == [
        (
            "invalid-value",
            f'serve.spec_tokens: vLLM {version} refuses it: "1 validation error for SpeculativeConfig / '
            'num_speculative_tokens / Input should be greater than 0"',
        )
    ]
    assert found[0].fix == "write a value > 0"
    assert check(files(spec_method="ngram", spec_tokens=1), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_a_shorthand_and_the_same_key_in_the_table_conflict(check: Check, version: str) -> None:
    found = check(files(spec_tokens=2, speculative_config={**NGRAM, "num_speculative_tokens": 3}), version=version)
    assert messages(found) == [
        f"spec_tokens and speculative_config.num_speculative_tokens both set the speculative num_speculative_tokens; "
        f"vLLM {version} refuses to start: \"--spec-tokens and --speculative-config['num_speculative_tokens'] are "
        'mutually exclusive"'
    ]
    assert found[0].rule == "speculative-shorthand-conflict"
    assert found[0].fix == "remove spec_tokens, or remove num_speculative_tokens from speculative_config"
    other_keys = {"method": "ngram", "prompt_lookup_min": 2, "prompt_lookup_max": 4}
    assert check(files(spec_tokens=2, speculative_config=other_keys), version=version) == []


def test_an_empty_table_builds_a_speculative_config_without_a_count(check: Check) -> None:
    found = check(files(speculative_config={}))
    assert [f.rule for f in found] == ["speculative-num-tokens"]


@pytest.mark.parametrize("version", RELEASES)
def test_every_method_but_the_draft_free_ones_needs_a_draft_model_for_a_count(check: Check, version: str) -> None:
    for method in ("dflash", "eagle"):
        found = check(files(speculative_config={"method": method, "num_speculative_tokens": 2}), version=version)
        assert [f.rule for f in found] == ["speculative-draft-model"], method
    for method in ("ngram_gpu", "nemotron_h_mtp", "extract_hidden_states"):
        found = check(files(speculative_config={"method": method, "num_speculative_tokens": 2}), version=version)
        assert "speculative-draft-model" not in [f.rule for f in found], method


# an MTP method drafts with the served model's own MTP layers (SpeculativeConfig.hf_config_override)

MTP = {"method": "mtp", "num_speculative_tokens": 1}
NEMOTRON = "NemotronHForCausalLM"
NEMOTRON_MTP = {"num_nextn_predict_layers": 1, "mtp_hybrid_override_pattern": "*E"}
MTP_FIX = (
    "serve a model whose checkpoint has MTP layers vLLM can draft with (DeepSeek-V3, Qwen3-Next, GLM-4.5, MiMo, "
    '...), or use a method with a separate draft model (method = "eagle3" and speculative_config.model) or none '
    '(method = "ngram")'
)


@pytest.mark.parametrize("version", RELEASES)
def test_an_mtp_method_on_a_model_without_mtp_layers(check: Check, version: str) -> None:
    found = check(files(speculative_config=MTP), version=version)
    assert messages(found) == [
        refuses(
            version,
            'speculative_config.method = "mtp" drafts with the model\'s own MTP layers, and vLLM '
            f'{version} has none for a "llama" model (LlamaForCausalLM)',
            "Unsupported speculative method: 'mtp'",
        )
    ]
    assert found[0].rule == "speculative-mtp-model"
    assert found[0].fix == MTP_FIX
    assert [loc.key for loc in found[0].locations] == ["serve.speculative_config.method", "model.config"]
    # a per-architecture name is the same method; Nemotron-H has MTP layers only when its config.json says so
    alias = {"method": "nemotron_h_mtp", "num_speculative_tokens": 2}
    assert [f.rule for f in check(files(NEMOTRON, speculative_config=alias), version=version)] == [
        "speculative-mtp-model"
    ]
    assert check(files(NEMOTRON, config=NEMOTRON_MTP, speculative_config=alias), version=version) == []
    # an architecture hf_config_override maps (MiMo), and a model type it maps (DeepSeek-V3)
    mimo = {"architectures": ["MiMoForCausalLM"], "num_nextn_predict_layers": 1}
    assert check(files(config=mimo, speculative_config=MTP), version=version) == []
    assert check(files(config={"model_type": "deepseek_v3"}, speculative_config=MTP), version=version) == []


@pytest.mark.parametrize(
    ("version", "model_type", "accepted"),
    [
        ("0.28.0", "hy_v4", False),  # hy_v4_mtp from 0.29.0
        ("0.29.0", "hy_v4", True),
        ("0.27.1", "qwen3_5_text", False),  # the text-only Qwen3.5 checkpoints from 0.28.0
        ("0.28.0", "qwen3_5_text", True),
        ("0.31.0", "longcat_flash_ngram", True),  # dropped in 0.32.0
        ("0.32.0", "longcat_flash_ngram", False),
        ("0.33.0", "pangu", True),  # vLLM tests `model_type in ("pangu_ultra_moe")`, a substring
    ],
)
def test_the_model_types_with_an_mtp_draft_differ_by_release(
    check: Check, version: str, model_type: str, accepted: bool
) -> None:
    found = check(files(config={"model_type": model_type}, speculative_config=MTP), version=version)
    assert [f.rule for f in found] == ([] if accepted else ["speculative-mtp-model"])


def test_a_draft_named_like_eagle_is_not_an_mtp_draft(check: Check) -> None:
    """vLLM names the draft's method from the model's name before its model type."""
    layer = files(speculative_config=MTP)
    layer["s.toml"] = layer["s.toml"].replace('"dummy/LlamaForCausalLM"', '"org/EAGLE-LLaMA3-Instruct-8B"')
    assert check(layer) == []


def test_inkling_without_mtp_weights(check: Check) -> None:
    inkling = {"model_type": "inkling_model", "mtp_config": {"num_nextn_predict_layers": 0}}
    found = check(files(config=inkling, speculative_config=MTP))
    assert messages(found) == [
        refuses(
            "0.33.0",
            'speculative_config.method = "mtp" drafts with the model\'s own MTP layers, which vLLM cannot build',
            "The Inkling checkpoint does not contain MTP weights",
        )
    ]
    with_weights = {**inkling, "mtp_config": {"num_nextn_predict_layers": 1}}
    assert check(files(config=with_weights, speculative_config=MTP)) == []


@pytest.mark.parametrize("version", ["0.27.1", "0.28.0"])
def test_inkling_drafts_one_token_before_0_28(check: Check, version: str) -> None:
    inkling = {"model_type": "inkling_model", "mtp_config": {"num_nextn_predict_layers": 1}}
    found = check(files(config=inkling, speculative_config={**MTP, "num_speculative_tokens": 2}), version=version)
    if version == "0.28.0":
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            "speculative_config.num_speculative_tokens = 2 with Inkling's MTP draft",
            "Inkling MTP currently supports exactly one speculative token",
        )
    ]
    assert found[0].fix == "set speculative_config.num_speculative_tokens = 1"
    assert check(files(config=inkling, speculative_config=MTP), version=version) == []


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0"])
def test_deepseek_v41_has_no_classic_mtp_draft(check: Check, version: str) -> None:
    found = check(files(config={"model_type": "deepseek_v41"}, speculative_config=MTP), version=version)
    if version == "0.29.0":  # before 0.30.0 vLLM knows no V4.1 and finds no MTP draft for it
        assert [f.rule for f in found] == ["speculative-mtp-model"]
        assert "Unsupported speculative method: 'mtp'" in found[0].message
        return
    assert messages(found) == [
        refuses(
            version,
            'speculative_config.method = "mtp" on DeepSeek V4.1, whose checkpoints have no classic MTP draft',
            "DeepSeek V4.1 has no classic-MTP draft: its checkpoints ship DSpark stages under mtp.* "
            "(main_proj/markov_head/confidence_head) and carry no e_proj/h_proj/enorm/hnorm/hc_head weights. Use "
            "speculative method 'dspark' instead of 'mtp'.",
        )
    ]


def test_an_mtp_method_without_the_models_config_json_is_not_decided(check: Check) -> None:
    found = check(files(speculative_config=MTP, with_config=False))
    assert [f.rule for f in found] == ["model-facts-missing"]
    assert [f.message for f in found] == [no_config("dummy/LlamaForCausalLM")]
    assert not_checked(found) == ['speculative_config.method = "mtp" against the model\'s MTP layers']
    # a draft model of its own is judged by its own config.json, which vLLM reads, not this one
    own = {"method": "mtp", "num_speculative_tokens": 1, "model": "org/draft"}
    assert check(files(speculative_config=own)) == []


@pytest.mark.parametrize("version", RELEASES)
def test_the_batch_size_schedule_takes_triples(check: Check, version: str) -> None:
    spec = {**NGRAM, "num_speculative_tokens_per_batch_size": [[1]]}
    found = check(files(speculative_config=spec), version=version)
    assert [(f.rule, f.message) for f in found] == [
        (
            "invalid-value",
            f"serve.speculative_config.num_speculative_tokens_per_batch_size[0][{i}]: vLLM {version} refuses it: "
            f'"1 validation error for SpeculativeConfig / num_speculative_tokens_per_batch_size.0.{i} / Field required"',
        )
        for i in (1, 2)
    ]
    long = {**NGRAM, "num_speculative_tokens_per_batch_size": [[1, 8, 2, 4]]}
    assert [f.message for f in check(files(speculative_config=long), version=version)] == [
        f"serve.speculative_config.num_speculative_tokens_per_batch_size[0]: vLLM {version} refuses it: "
        '"1 validation error for SpeculativeConfig / num_speculative_tokens_per_batch_size.0 / Tuple should have at '
        'most 3 items after validation, not 4"'
    ]
    ok = {**NGRAM, "num_speculative_tokens_per_batch_size": [[1, 8, 2], [9, 64, 1]]}
    assert check(files(speculative_config=ok), version=version) == []


def test_dots3_names_one_layer_type_per_mtp_layer(check: Check) -> None:
    dots3 = {"model_type": "dots3_note", "layer_types": ["full_attention"] * 2, "num_nextn_predict_layers": 2}
    wrong = {**dots3, "mtp_layer_types": ["sliding_attention"]}
    found = check(files(config=wrong, speculative_config=MTP), version="0.28.0")
    assert messages(found) == [
        refuses(
            "0.28.0",
            'speculative_config.method = "mtp" drafts with the model\'s own MTP layers, which vLLM cannot build',
            "mtp_layer_types must have one entry per MTP layer: got 1 for 2 layers",
        )
    ]
    assert check(files(config=dots3, speculative_config=MTP), version="0.28.0") == []
    # before 0.28.0 vLLM has no Dots3 MTP draft at all
    assert [f.rule for f in check(files(config=wrong, speculative_config=MTP), version="0.27.1")] == [
        "speculative-mtp-model"
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_the_draft_s_tensor_parallel_size_has_its_own_key(check: Check, version: str) -> None:
    """_verify_args refuses the target's key before it asks for a count (seed 11: 0.31.0 named the count)."""
    found = check(files(speculative_config={"method": "inkling_mtp", "tensor_parallel_size": 0}), version=version)
    assert messages(found) == [
        refuses(
            version,
            "speculative_config.tensor_parallel_size = 0",
            "'tensor_parallel_size' is not a valid argument in the speculative_config. Please pass "
            "'draft_tensor_parallel_size' instead.",
        )
    ]
    assert found[0].rule == "speculative-tensor-parallel-size"
    assert check(files(speculative_config={**NGRAM, "draft_tensor_parallel_size": 1}), version=version) == []
