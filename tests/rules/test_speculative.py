"""Contradictions inside speculative_config (rules/speculative.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
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
