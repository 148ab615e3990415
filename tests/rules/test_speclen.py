"""The draft's speculative_config.max_model_len against the target's max_model_len."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES

RULE = "speculative-max-model-len"
MTP = {"method": "mtp", "num_speculative_tokens": 1}
MIMO = {"architectures": ["MiMoForCausalLM"], "num_nextn_predict_layers": 1}  # a checkpoint with an MTP layer
EAGLE = {"method": "eagle3", "model": "org/draft", "num_speculative_tokens": 2}
MESSAGE = "speculative_max_model_len={} cannot be larger than target_max_model_len={}"


@pytest.mark.parametrize("version", RELEASES)
def test_a_draft_length_above_the_written_max_model_len(check: Check, version: str) -> None:
    spec = {**MTP, "max_model_len": 384}
    found = check(files(config=MIMO, max_model_len=256, speculative_config=spec), version=version)
    assert messages(found) == [
        refuses(
            version,
            "speculative_config.max_model_len = 384 is more than the target's 256 (max_model_len)",
            MESSAGE.format(384, 256),
        )
    ]
    assert found[0].rule == RULE
    assert found[0].fix == (
        "set speculative_config.max_model_len to 256 or less, or remove it (the draft then takes the target's)"
    )
    assert [loc.key for loc in found[0].locations] == ["serve.speculative_config.max_model_len", "serve.max_model_len"]


@pytest.mark.parametrize("version", RELEASES)
def test_a_draft_length_within_the_target(check: Check, version: str) -> None:
    spec = {**MTP, "max_model_len": 256}
    assert check(files(config=MIMO, max_model_len=256, speculative_config=spec), version=version) == []
    assert check(files(config=MIMO, speculative_config={**MTP, "max_model_len": 512}), version=version) == []


def test_the_target_length_derived_from_the_config_json(check: Check) -> None:
    found = check(files(speculative_config={**EAGLE, "max_model_len": 1024}), rule=RULE)
    assert messages(found) == [
        refuses(
            "0.33.0",
            "speculative_config.max_model_len = 1024 is more than the target's 512 (the model's positions in its "
            "config.json)",
            MESSAGE.format(1024, 512),
        )
    ]
    assert [loc.key for loc in found[0].locations] == ["serve.speculative_config.max_model_len", "model.config"]


def test_methods_without_a_draft_model_ignore_it(check: Check) -> None:
    ngram = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4, "max_model_len": 4096}
    assert check(files(max_model_len=256, speculative_config=ngram), rule=RULE) == []
    # no count: the draft checkpoint's n_predict is read first
    assert (
        check(
            files(max_model_len=256, speculative_config={"method": "eagle3", "model": "org/d", "max_model_len": 4096}),
            rule=RULE,
        )
        == []
    )


def test_without_the_config_json_the_check_is_named_as_not_run(check: Check) -> None:
    found = check(files(with_config=False, speculative_config={**EAGLE, "max_model_len": 1024}))
    assert [f.rule for f in found] == ["model-facts-missing"]
    assert "not checked: speculative_config.max_model_len = 1024 against the target's max_model_len" in found[0].notes
    assert (
        check(
            files(with_config=False, max_model_len=256, speculative_config={**EAGLE, "max_model_len": 1024}), rule=RULE
        )
        != []
    )


HEAD_RULE = "speculative-head-dtype"
LM_HEAD = {**MTP, "draft_lm_head_quantization": "fp8"}


@pytest.mark.parametrize(
    ("written", "shown_", "message"), [("FP4", '"FP4"', "Unknown dtype: 'fp4'"), (8, "8", "Unknown dtype: 8")]
)
def test_an_mtp_draft_head_dtype_vllm_does_not_know(check: Check, written: object, shown_: str, message: str) -> None:
    found = check(files(config={**MIMO, "head_dtype": written}, speculative_config=LM_HEAD), rule=HEAD_RULE)
    assert messages(found) == [
        refuses(
            "0.33.0",
            f"speculative_config.draft_lm_head_quantization with an MTP draft whose head_dtype is {shown_} (in the "
            "model's config.json)",
            message,
        )
    ]
    assert [loc.key for loc in found[0].locations] == [
        "serve.speculative_config.draft_lm_head_quantization",
        "model.config",
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_an_mtp_draft_head_dtype_vllm_knows_or_does_not_read(check: Check, version: str) -> None:
    for head in ("model", "BFloat16", "float32", None):
        assert (
            check(
                files(config={**MIMO, "head_dtype": head}, speculative_config=LM_HEAD), version=version, rule=HEAD_RULE
            )
            == []
        )
    # without draft_lm_head_quantization the head dtype is not read at start-up; before 0.33.0 not at all
    assert (
        check(files(config={**MIMO, "head_dtype": "fp4"}, speculative_config=MTP), version=version, rule=HEAD_RULE)
        == []
    )
    found = check(
        files(config={**MIMO, "head_dtype": "fp4"}, speculative_config=LM_HEAD), version=version, rule=HEAD_RULE
    )
    assert len(found) == (1 if version == "0.33.0" else 0)


DSPARK = {"method": "dspark", "num_speculative_tokens": 2}
BLOCK = "DSpark requires num_speculative_tokens >= dspark_block_size (4); got 2. Smaller values produce incorrect output. Use num_speculative_tokens=4 or larger (e.g. 7)."


@pytest.mark.parametrize("version", ["0.27.0", "0.27.1"])
def test_fewer_speculative_tokens_than_the_dspark_block(check: Check, version: str) -> None:
    found = check(files(config={"dspark_block_size": 4}, speculative_config=DSPARK), version=version)
    assert messages(found) == [
        refuses(
            version,
            "speculative_config.num_speculative_tokens = 2 with a DSpark draft whose dspark_block_size is 4 (in the "
            "model's config.json)",
            BLOCK,
        )
    ]
    assert found[0].rule == "dspark-block-size"
    assert found[0].fix == "set speculative_config.num_speculative_tokens = 4 or more"


@pytest.mark.parametrize("version", RELEASES)
def test_the_dspark_block_where_vllm_does_not_refuse_it(check: Check, version: str) -> None:
    rule = "dspark-block-size"
    assert (
        check(
            files(config={"dspark_block_size": 4}, speculative_config={**DSPARK, "num_speculative_tokens": 4}),
            version=version,
            rule=rule,
        )
        == []
    )
    assert check(files(speculative_config=DSPARK), version=version, rule=rule) == []  # no block size
    separate = {**DSPARK, "model": "org/dspark-draft"}  # the draft checkpoint's own block size
    assert check(files(config={"dspark_block_size": 4}, speculative_config=separate), version=version, rule=rule) == []
    later = check(files(config={"dspark_block_size": 4}, speculative_config=DSPARK), version=version, rule=rule)
    assert len(later) == (1 if version in ("0.27.0", "0.27.1") else 0)  # 0.28.0 dropped the check


PARSE = {
    "architectures": ["RadioMBartPrefixForCausalLM"],
    "model_type": "vision-encoder-decoder",
    "encoder": {"model_type": "radio"},
    "decoder": {"model_type": "mbart", "causal_vision_prefix": True},
}


def test_more_than_one_token_with_parse_3_5s_mtp_draft(check: Check) -> None:
    found = check(
        files(config=PARSE, speculative_config={**MTP, "num_speculative_tokens": 2}), rule="parse-mtp-one-step"
    )
    assert messages(found) == [
        refuses(
            "0.33.0",
            "speculative_config.num_speculative_tokens = 2 with Nemotron Parse 3.5's MTP draft "
            "(decoder.causal_vision_prefix in the model's config.json)",
            "Parse 3.5 has only one trained MTP step",
        )
    ]
    assert found[0].fix == "set speculative_config.num_speculative_tokens = 1"


@pytest.mark.parametrize("version", RELEASES)
def test_parse_3_5_with_one_token_or_without_the_vision_prefix(check: Check, version: str) -> None:
    rule = "parse-mtp-one-step"
    assert check(files(config=PARSE, speculative_config=MTP), version=version, rule=rule) == []
    if version == "0.33.0":  # the one-step draft is known: nothing left undecided (no model-facts-missing)
        assert check(files(config=PARSE, speculative_config=MTP), version=version) == []
    plain = {**PARSE, "decoder": {"model_type": "mbart"}}  # MBart's config has no causal_vision_prefix: false
    assert (
        check(files(config=plain, speculative_config={**MTP, "num_speculative_tokens": 2}), version=version, rule=rule)
        == []
    )
    two = check(
        files(config=PARSE, speculative_config={**MTP, "num_speculative_tokens": 2}), version=version, rule=rule
    )
    assert len(two) == (1 if version == "0.33.0" else 0)  # the Parse 3.5 draft arrived in 0.33.0


VL_MTP = {"architectures": ["PaliGemmaForConditionalGeneration"], "text_config": {"num_mtp_layers": 1}}
TRANSFORMERS_MTP = "The Transformers modeling backend does not support MTP for multimodal models yet."


def test_mtp_through_the_transformers_backend_for_a_model_with_a_text_config(check: Check) -> None:
    found = check(
        files(config=VL_MTP, model_impl="transformers", speculative_config=MTP), rule="transformers-mtp-multimodal"
    )
    assert messages(found) == [
        refuses(
            "0.33.0",
            'speculative_config.method = "mtp" with model_impl = "transformers" for a model whose config.json has a '
            "text_config with num_mtp_layers",
            TRANSFORMERS_MTP,
        )
    ]
    assert [loc.key for loc in found[0].locations] == [
        "serve.speculative_config.method",
        "serve.model_impl",
        "model.config",
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_mtp_through_the_transformers_backend_where_vllm_allows_it(check: Check, version: str) -> None:
    rule = "transformers-mtp-multimodal"
    assert check(files(config=VL_MTP, speculative_config=MTP), version=version, rule=rule) == []  # the registry decides
    text_only = {"num_mtp_layers": 1}
    assert (
        check(files(config=text_only, model_impl="transformers", speculative_config=MTP), version=version, rule=rule)
        == []
    )
    no_mtp = {"text_config": {"hidden_size": 64}}
    assert (
        check(files(config=no_mtp, model_impl="transformers", speculative_config=MTP), version=version, rule=rule) == []
    )
    found = check(files(config=VL_MTP, model_impl="transformers", speculative_config=MTP), version=version, rule=rule)
    assert len(found) == (1 if version == "0.33.0" else 0)
