"""PoolerConfig's and QuantizationConfigArgs' validators, and resolve_quantization_config (rules/quantpool.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least

# vllm/config/quantization.py ONLINE_QUANT_SHORTHAND_NAMES of 0.27.x, sorted as the message prints them (0.28.0
# added mxfp4)
ONLINE_0_27 = (
    "['fp8_per_block', 'fp8_per_channel', 'fp8_per_tensor', 'int8_per_channel_weight_only', 'mxfp8', "
    "'nvfp4_per_token', 'online']"
)


@pytest.mark.parametrize("version", RELEASES)
def test_pooling_type_beside_seq_or_tok_pooling_type(check: Check, version: str) -> None:
    found = check(files(pooler_config={"pooling_type": "MEAN", "seq_pooling_type": "CLS"}), version=version)
    assert [(f.rule, f.message) for f in found] == [
        (
            "pooler-config",
            refuses(
                version,
                'pooler_config.pooling_type = "MEAN" beside seq_pooling_type = "CLS"',
                "1 validation error for PoolerConfig / Value error, Cannot set both `pooling_type` and "
                "`seq_pooling_type`",
            ),
        )
    ]
    found = check(files(pooler_config={"pooling_type": "LAST", "tok_pooling_type": "STEP"}), version=version)
    assert messages(found) == [
        refuses(
            version,
            'pooler_config.pooling_type = "LAST" beside tok_pooling_type = "STEP"',
            "1 validation error for PoolerConfig / Value error, Cannot set both `pooling_type` and `tok_pooling_type`",
        )
    ]
    assert check(files(pooler_config={"seq_pooling_type": "CLS", "tok_pooling_type": "STEP"}), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_logit_sigma_zero_divides_by_zero(check: Check, version: str) -> None:
    for zero in (0, 0.0):
        found = check(files(pooler_config={"logit_sigma": zero}), version=version)
        assert [(f.rule, f.message) for f in found] == [
            (
                "pooler-config",
                refuses(
                    version,
                    "pooler_config.logit_sigma = 0",
                    "1 validation error for PoolerConfig / Value error, logit_sigma cannot be 0 (division by zero)",
                ),
            )
        ]
    assert check(files(pooler_config={"logit_sigma": 0.5, "logit_mean": 0.0}), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_quantization_targets_exclude_linear_and_moe(check: Check, version: str) -> None:
    """0.30.0 added per-layer `targets`; earlier releases have no such key."""
    layer = files(quantization_config={"targets": {"re:.*proj": "fp8_per_tensor"}, "moe": {}})
    found = check(layer, version=version)
    if not at_least(version, "0.30.0"):
        assert [f.rule for f in found] == ["unknown-option"]
        return
    assert [(f.rule, f.message) for f in found] == [
        (
            "quantization-config",
            f'serve.quantization_config.moe: vLLM {version} refuses it: "1 validation error for '
            "QuantizationConfigArgs / Value error, quantization_config.targets is mutually exclusive with "
            "quantization_config.linear/moe, got targets={'re:.*proj': 'fp8_per_tensor'}, linear=None, moe=None.\"",
        )
    ]
    assert check(files(quantization_config={"targets": {"re:.*proj": "fp8_per_tensor"}}), version=version) == []
    assert check(files(quantization_config={"linear": {}, "moe": {}}), version=version) == []


@pytest.mark.parametrize("version", ["0.30.0", "0.33.0"])
def test_quantization_targets_name_online_shorthands(check: Check, version: str) -> None:
    found = check(files(quantization_config={"targets": {"model.layers.0": "fp4"}}), version=version)
    assert [f.rule for f in found] == ["invalid-value"]
    assert found[0].message.startswith(
        f'serve.quantization_config.targets: vLLM {version} refuses it: "1 validation error for QuantizationConfigArgs '
        "/ Value error, targets[model.layers.0] = fp4 is not a valid online shorthand name; expected one of ['"
    )
    found = check(files(quantization_config={"targets": {"re:(": "fp8_per_tensor"}}), version=version)
    assert messages(found) == [
        f'serve.quantization_config.targets: vLLM {version} refuses it: "1 validation error for QuantizationConfigArgs '
        '/ Value error, targets key re:( is not a valid regex: missing ), unterminated subpattern at position 0"'
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_quantization_config_needs_an_online_method_before_0_30(check: Check, version: str) -> None:
    """0.27.0-0.29.0 refuse a quantization_config beside a checkpoint method; 0.30.0 composes the two."""
    found = check(files(quantization="fp8", quantization_config={"linear": {}}), version=version)
    if at_least(version, "0.30.0"):
        assert found == []
        return
    online = ONLINE_0_27 if version in ("0.27.0", "0.27.1") else ONLINE_0_27.replace("'mxfp8'", "'mxfp4', 'mxfp8'")
    assert [(f.rule, f.message) for f in found] == [
        (
            "quantization-config",
            refuses(
                version,
                'quantization = "fp8" with a quantization_config',
                f"quantization_config is only supported when quantization is one of {online}, got quantization='fp8'",
            ),
        )
    ]
    assert check(files(quantization="fp8_per_tensor", quantization_config={"linear": {}}), version=version) == []
    assert check(files(quantization_config={"linear": {}}), version=version) == []
