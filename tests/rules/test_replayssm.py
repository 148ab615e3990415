"""The ReplaySSM rules, release by release: one triggering and one non-triggering case per rule and release.

Messages are asserted whole: each holds profilekit's account of the values and vLLM's own text for the release.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.rules.conftest import Check, messages, no_config, not_checked
from tests.rules.layers import KIMI, LLAMA, RELEASES, at_least, layer

V1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
V2 = {"VLLM_USE_V2_MODEL_RUNNER": "1"}
MTP2 = {"method": "mtp", "num_speculative_tokens": 2}
# MTP on a declared architecture without its config.json: profilekit also warns that it cannot check the MTP draft
# against the model (rules/speculative.py, `model-facts-missing`); the tests here are about the ReplaySSM rules
MTP_UNCHECKED = "model-facts-missing"
NGRAM3 = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
KV_MSG = '"--use-replayssm is incompatible with KV connectors (P/D disaggregation, KV cache offload)"'


def refuses(version: str, text: str) -> str:
    return f"; vLLM {version} refuses to start: {text}"


@pytest.mark.parametrize("version", RELEASES)
def test_a_valid_replayssm_layer_has_no_findings(check: Check, version: str) -> None:
    assert check({"s.toml": layer(use_replayssm=True, env=V1)}, version=version) == []


# ---- replayssm-architecture -------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_architecture_llama_is_refused(check: Check, version: str) -> None:
    found = check({"s.toml": layer(LLAMA, use_replayssm=True, env=V1)}, version=version, rule="replayssm-architecture")
    vllm = (
        "\"--use-replayssm is not supported for architecture 'LlamaForCausalLM'\""
        if at_least(version, "0.29.0")
        else "\"--use-replayssm is only supported for Nemotron-H models (got architecture 'LlamaForCausalLM')\""
    )
    assert messages(found) == ["use_replayssm = true with a LlamaForCausalLM model (declared)" + refuses(version, vllm)]
    supported = "Nemotron-H (NemotronHForCausalLM)" + (
        " and Kimi KDA models (KimiLinearForCausalLM, KimiK3ForConditionalGeneration)"
        if at_least(version, "0.29.0")
        else ""
    )
    assert (
        found[0].fix
        == f"ReplaySSM runs only on {supported} in vLLM {version}: serve such a model, or remove use_replayssm"
    )
    assert [(loc.file, loc.line, loc.key) for loc in found[0].locations] == [
        ("profiles/s.toml", 6, "serve.use_replayssm"),
        ("profiles/s.toml", 2, "model.architecture"),
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_architecture_kimi_is_accepted_from_0_29(check: Check, version: str) -> None:
    found = check({"s.toml": layer(KIMI, use_replayssm=True, env=V1)}, version=version, rule="replayssm-architecture")
    assert bool(found) is not at_least(version, "0.29.0")


@pytest.mark.parametrize("version", RELEASES)
def test_architecture_from_a_well_known_model_id(check: Check, version: str) -> None:
    text = '[serve]\nmodel = "meta-llama/Llama-3.2-1B"\nuse_replayssm = true\n'
    found = check({"s.toml": text}, version=version, rule="replayssm-architecture")
    assert len(found) == 1
    assert found[0].message.startswith("use_replayssm = true with a LlamaForCausalLM model (well-known id); ")


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_architecture_from_the_config_json_profilekit_ships(check: Check, version: str) -> None:
    text = '[serve]\nmodel = "meta-llama/Llama-3.1-8B-Instruct"\nuse_replayssm = true\n'
    found = check({"s.toml": text}, version=version, rule="replayssm-architecture")
    assert len(found) == 1
    assert found[0].message.startswith(
        "use_replayssm = true with a LlamaForCausalLM model (config.json shipped with profilekit); "
    )


# ---- replayssm-kv-connector -------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_kv_connector_explicit(check: Check, version: str) -> None:
    kv = {"kv_connector": "NixlConnector", "kv_role": "kv_producer"}
    found = check(
        {"s.toml": layer(use_replayssm=True, env=V1, kv_transfer_config=kv)},
        version=version,
        rule="replayssm-kv-connector",
    )
    assert messages(found) == [
        'use_replayssm = true with KV connector NixlConnector (kv_role "kv_producer", serve.kv_transfer_config)'
        + refuses(version, KV_MSG)
    ]
    assert [loc.key for loc in found[0].locations] == [
        "serve.use_replayssm",
        "serve.kv_transfer_config.kv_connector",
        "serve.kv_transfer_config.kv_role",
    ]


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize(
    ("extra", "env", "connector"),
    [
        ({}, {}, "OffloadingConnector"),
        ({}, {"VLLM_USE_SIMPLE_KV_OFFLOAD": "1"}, "SimpleCPUOffloadConnector"),
        ({"kv_offloading_backend": "lmcache"}, {}, "LMCacheMPConnector"),
    ],
)
def test_kv_connector_implied_by_kv_offloading_size(
    check: Check, version: str, extra: dict[str, Any], env: dict[str, str], connector: str
) -> None:
    text = layer(use_replayssm=True, env={**V1, **env}, kv_offloading_size=8, **extra)
    found = check({"s.toml": text}, version=version, rule="replayssm-kv-connector")
    simple = " with VLLM_USE_SIMPLE_KV_OFFLOAD=1" if env else ""
    assert messages(found) == [
        f'use_replayssm = true with the {connector} (kv_role "kv_both") that kv_offloading_size = 8 creates{simple}'
        + refuses(version, KV_MSG)
    ]
    assert found[0].locations[1].key == "serve.kv_offloading_size"


@pytest.mark.parametrize("version", RELEASES)
def test_kv_connector_multiconnector_and_no_connector(check: Check, version: str) -> None:
    multi = {
        "kv_connector": "MultiConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"connectors": [{"kv_connector": "OffloadingConnector", "kv_role": "kv_both"}]},
    }
    found = check({"s.toml": layer(use_replayssm=True, env=V1, kv_transfer_config=multi)}, version=version)
    assert [f.rule for f in found] == ["replayssm-kv-connector"]
    # a kv_transfer_config without a role is no transfer instance; without a connector at all, nothing is active
    assert check({"s.toml": layer(use_replayssm=True, env=V1)}, version=version, rule="replayssm-kv-connector") == []


@pytest.mark.parametrize("version", RELEASES)
def test_kv_connector_exemption_on_the_kimi_kda_path_from_0_33(check: Check, version: str) -> None:
    text = layer(KIMI, use_replayssm=True, env=V2, kv_offloading_size=8, speculative_config=MTP2)
    found = check({"s.toml": text}, version=version, rule="replayssm-kv-connector")
    # before 0.29 the architecture check refuses Kimi first; 0.33.0 exempts the KDA path
    assert bool(found) is (at_least(version, "0.29.0") and version != "0.33.0")


# ---- replayssm-prefix-caching -----------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.27.0", "0.27.1"])
def test_prefix_caching_turned_on_gives_mode_all_before_0_28(check: Check, version: str) -> None:
    found = check({"s.toml": layer(use_replayssm=True, enable_prefix_caching=True)}, version=version)
    assert messages(found) == [
        "use_replayssm = true with enable_prefix_caching = true gives Mamba cache mode 'all'"
        + refuses(
            version, '"--use-replayssm supports prefix caching only in align mode; pass --mamba-cache-mode align"'
        )
    ]
    assert found[0].rule == "replayssm-prefix-caching"
    fixed = layer(use_replayssm=True, enable_prefix_caching=True, mamba_cache_mode="align")
    assert check({"s.toml": fixed}, version=version) == []


@pytest.mark.parametrize("version", ["0.28.0", "0.29.0", "0.30.0", "0.31.0"])
def test_prefix_caching_mode_all_is_refused(check: Check, version: str) -> None:
    found = check(
        {"s.toml": layer(use_replayssm=True, mamba_cache_mode="all", env=V1)},
        version=version,
        rule="replayssm-prefix-caching",
    )
    assert messages(found) == [
        f"use_replayssm = true with prefix caching on (vLLM {version}'s default for this model) gives "
        'mamba_cache_mode = "all"'
        + refuses(
            version, '"--use-replayssm supports prefix caching only in align mode; pass --mamba-cache-mode align"'
        )
    ]
    assert check({"s.toml": layer(use_replayssm=True, mamba_cache_mode="align", env=V1)}, version=version) == []


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_prefix_caching_with_flashinfer(check: Check, version: str) -> None:
    found = check({"s.toml": layer(use_replayssm=True, mamba_backend="flashinfer")}, version=version)
    vllm = (
        '"FlashInfer ReplaySSM does not support prefix caching yet; use --disable-prefix-caching"'
        if version == "0.33.0"
        else '"FlashInfer ReplaySSM does not support --mamba-cache-mode align yet; use none"'
    )
    assert messages(found) == [
        f'use_replayssm = true with mamba_backend = "flashinfer" and prefix caching on (vLLM {version}\'s default '
        "for this model) gives Mamba cache mode 'align'" + refuses(version, vllm)
    ]
    assert (
        check(
            {"s.toml": layer(use_replayssm=True, mamba_backend="flashinfer", enable_prefix_caching=False)},
            version=version,
        )
        == []
    )


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.31.0"])
def test_prefix_caching_kda_modes(check: Check, version: str) -> None:
    text = layer(
        KIMI, use_replayssm=True, env=V2, speculative_config=MTP2, mamba_cache_mode="all", enable_prefix_caching=True
    )
    # Kimi has no Mamba prefix caching "all" support: vLLM falls back to align, so the KDA path accepts it
    assert [f.rule for f in check({"s.toml": text}, version=version)] == [MTP_UNCHECKED]


# ---- replayssm-speculative --------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_speculative_decoding_on_nemotron(check: Check, version: str) -> None:
    found = check(
        {"s.toml": layer(use_replayssm=True, env=V1, speculative_config=NGRAM3)},
        version=version,
        rule="replayssm-speculative",
    )
    if not at_least(version, "0.29.0"):
        expected = [
            "use_replayssm = true with speculative decoding (num_speculative_tokens = 3)"
            + refuses(version, '"--use-replayssm does not support speculative decoding"')
        ]
    elif not at_least(version, "0.32.0"):
        expected = [
            "use_replayssm = true with speculative decoding (num_speculative_tokens = 3) on a NemotronHForCausalLM "
            f"model: vLLM {version} takes the Kimi KDA RecoverSSM path for any speculative tokens"
            + refuses(version, '"RecoverSSM is only supported for Kimi-K3 KDA"')
        ]
    else:
        prefix = (
            '"FlashInfer ReplaySSM speculative decoding does not support prefix caching; use --disable-prefix-caching"'
            if version == "0.33.0"
            else '"FlashInfer ReplaySSM speculative decoding requires --mamba-cache-mode none"'
        )
        expected = [
            "use_replayssm = true with speculative decoding (num_speculative_tokens = 3) and mamba_backend (default "
            "triton)" + refuses(version, '"Mamba2 ReplaySSM speculative decoding requires --mamba-backend flashinfer"'),
            "use_replayssm = true with speculative decoding (num_speculative_tokens = 3) and prefix caching on "
            f"(vLLM {version}'s default for this model) gives Mamba cache mode 'align'" + refuses(version, prefix),
        ]
    assert messages(found) == expected


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_speculative_decoding_mamba2_on_flashinfer(check: Check, version: str) -> None:
    ok = layer(use_replayssm=True, mamba_backend="flashinfer", enable_prefix_caching=False, speculative_config=NGRAM3)
    assert check({"s.toml": ok}, version=version) == []
    short = layer(
        use_replayssm=True,
        mamba_backend="flashinfer",
        enable_prefix_caching=False,
        replayssm_buffer_len=2,
        speculative_config=NGRAM3,
    )
    assert messages(check({"s.toml": short}, version=version)) == [
        "use_replayssm = true with speculative decoding (num_speculative_tokens = 3) and replayssm_buffer_len = 2"
        + refuses(
            version,
            '"FlashInfer ReplaySSM speculative decoding requires --replayssm-buffer-len >= 1 + num_speculative_tokens '
            '(4); got 2"',
        )
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_speculative_decoding_on_kimi(check: Check, version: str) -> None:
    found = check({"s.toml": layer(KIMI, use_replayssm=True, env=V2, speculative_config=MTP2)}, version=version)
    if at_least(version, "0.29.0"):
        assert [f.rule for f in found] == [MTP_UNCHECKED]  # the KDA RecoverSSM path
        assert [f.message for f in found] == [no_config("org/KimiLinearForCausalLM", version)]
        assert not_checked(found) == ['speculative_config.method = "mtp" against the model\'s MTP layers']
    else:
        assert [f.rule for f in found] == [MTP_UNCHECKED, "replayssm-architecture"]


# ---- replayssm-backend ------------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_backend(check: Check, version: str) -> None:
    found = check({"s.toml": layer(use_replayssm=True, env=V1, mamba_backend="cpu")}, version=version)
    vllm = (
        '"--use-replayssm requires --mamba-backend triton or flashinfer"'
        if at_least(version, "0.30.0")
        else '"--use-replayssm requires --mamba-backend triton"'
    )
    assert messages(found) == ['use_replayssm = true with mamba_backend = "cpu"' + refuses(version, vllm)]
    assert found[0].fix == (
        'set mamba_backend = "triton" or "flashinfer"'
        if at_least(version, "0.30.0")
        else 'set mamba_backend = "triton"'
    )
    assert check({"s.toml": layer(use_replayssm=True, env=V1, mamba_backend="TRITON")}, version=version) == []


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_backend_kda_path_needs_triton(check: Check, version: str) -> None:
    text = layer(KIMI, use_replayssm=True, env=V2, speculative_config=MTP2, mamba_backend="flashinfer")
    found = check({"s.toml": text}, version=version, rule="replayssm-backend")
    assert messages(found) == [
        'use_replayssm = true with speculative decoding on a Kimi KDA model and mamba_backend = "flashinfer"'
        + refuses(version, '"RecoverSSM requires --mamba-backend triton"')
    ]


# ---- replayssm-buffer-len ---------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_buffer_len(check: Check, version: str) -> None:
    base = {"use_replayssm": True, "mamba_backend": "flashinfer", "enable_prefix_caching": False}
    found = check({"s.toml": layer(**base, replayssm_buffer_len=17)}, version=version, rule="replayssm-buffer-len")
    if at_least(version, "0.32.0"):
        assert messages(found) == [
            'replayssm_buffer_len = 17 with mamba_backend = "flashinfer"'
            + refuses(version, '"FlashInfer ReplaySSM requires --replayssm-buffer-len <= 16"')
        ]
    else:
        assert found == []
    assert check({"s.toml": layer(**base, replayssm_buffer_len=16)}, version=version, rule="replayssm-buffer-len") == []


# ---- replayssm-model-runner -------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_model_runner_triton_needs_v1(check: Check, version: str) -> None:
    found = check({"s.toml": layer(use_replayssm=True)}, version=version)
    if at_least(version, "0.30.0"):
        assert messages(found) == [
            "use_replayssm = true with mamba_backend (default triton) and VLLM_USE_V2_MODEL_RUNNER unset: vLLM "
            f"{version} on a GPU host picks Model Runner V2"
            + refuses(
                version,
                '"Triton ReplaySSM requires Model Runner V1; use --mamba-backend flashinfer or Model Runner V1"',
            )
        ]
        assert found[0].fix == (
            'set env VLLM_USE_V2_MODEL_RUNNER = "0" (Model Runner V1), or mamba_backend = "flashinfer"'
        )
    else:
        assert found == []
    assert check({"s.toml": layer(use_replayssm=True, env=V1)}, version=version) == []


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_model_runner_kda_with_prefix_caching_needs_v2(check: Check, version: str) -> None:
    found = check({"s.toml": layer(KIMI, use_replayssm=True, env=V1, speculative_config=MTP2)}, version=version)
    wording = "prefix caching" if version == "0.33.0" else "align mode"
    assert messages([f for f in found if f.rule != MTP_UNCHECKED]) == [
        f"use_replayssm = true with speculative decoding on a Kimi KDA model, prefix caching on (vLLM {version}'s "
        "default for this model) gives Mamba cache mode 'align', and VLLM_USE_V2_MODEL_RUNNER = \"0\" selects Model "
        "Runner V1" + refuses(version, f'"RecoverSSM with {wording} requires VLLM_USE_V2_MODEL_RUNNER=1"')
    ]
    off = layer(KIMI, use_replayssm=True, env=V1, speculative_config=MTP2, enable_prefix_caching=False)
    assert [f.rule for f in check({"s.toml": off}, version=version)] == [MTP_UNCHECKED]


# ---- replayssm-pipeline-parallel, replayssm-stochastic-rounding -------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_pipeline_parallel_on_the_kda_path(check: Check, version: str) -> None:
    text = layer(KIMI, use_replayssm=True, env=V2, speculative_config=MTP2, pipeline_parallel_size=2)
    found = check({"s.toml": text}, version=version, rule="replayssm-pipeline-parallel")
    if at_least(version, "0.29.0"):
        assert messages(found) == [
            "use_replayssm = true with speculative decoding on a Kimi KDA model and pipeline_parallel_size = 2"
            + refuses(version, '"RecoverSSM currently requires pipeline_parallel_size=1"')
        ]
    else:
        assert found == []
    plain = layer(use_replayssm=True, env=V1, pipeline_parallel_size=2)
    assert check({"s.toml": plain}, version=version, rule="replayssm-pipeline-parallel") == []


@pytest.mark.parametrize("version", RELEASES)
def test_stochastic_rounding_on_the_kda_path(check: Check, version: str) -> None:
    rounding = {"enable_mamba_cache_stochastic_rounding": True, "mamba_ssm_cache_dtype": "float16"}
    text = layer(KIMI, use_replayssm=True, env=V2, speculative_config=MTP2, **rounding)
    found = check({"s.toml": text}, version=version, rule="replayssm-stochastic-rounding")
    if at_least(version, "0.29.0"):
        assert messages(found) == [
            "use_replayssm = true with speculative decoding on a Kimi KDA model and "
            "enable_mamba_cache_stochastic_rounding = true"
            + refuses(
                version,
                '"RecoverSSM supports bfloat16/float32 SSM state caches, not --enable-mamba-cache-stochastic-rounding, '
                'which requires an explicit float16 cache"',
            )
        ]
    else:
        assert found == []
    plain = layer(use_replayssm=True, env=V1, **rounding)
    assert check({"s.toml": plain}, version=version, rule="replayssm-stochastic-rounding") == []


def test_every_failing_rule_is_reported_not_only_the_first(check: Check) -> None:
    text = layer(
        use_replayssm=True,
        mamba_backend="cpu",
        kv_transfer_config={"kv_connector": "NixlConnector", "kv_role": "kv_consumer"},
        env=V1,
    )
    rules = sorted({f.rule for f in check({"s.toml": text}, version="0.33.0") if f.is_error})
    assert rules == ["replayssm-backend", "replayssm-kv-connector"]


def test_unknown_architecture_warns_how_to_declare_it(check: Check) -> None:
    text = '[serve]\nmodel = "acme/secret-model"\nuse_replayssm = true\n\n[env]\nVLLM_USE_V2_MODEL_RUNNER = "0"\n'
    found = check({"s.toml": text})
    assert [(f.rule, f.severity.value) for f in found] == [("unknown-architecture", "warning")]
    assert found[0].message == (
        "profilekit does not know the architecture of model 'acme/secret-model', so the ReplaySSM rules that "
        "depend on it cannot decide"
    )
    assert found[0].fix == (
        'declare it in the layer that sets the model: [model] architecture = "NemotronHForCausalLM" (the first '
        '`architectures` entry of the model\'s config.json), or [model] config = "path/to/config.json"'
    )


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_tensor_parallel_heads_from_a_local_config_json(check: Check, version: str) -> None:
    config = '{"architectures": ["NemotronHForCausalLM"], "mamba_num_heads": 8, "num_attention_heads": 6}'
    text = (
        '[model]\nconfig = "nemo.json"\n\n[serve]\nmodel = "acme/nemo"\nuse_replayssm = true\n'
        'tensor_parallel_size = 3\n\n[env]\nVLLM_USE_V2_MODEL_RUNNER = "0"\n'
    )
    found = check({"s.toml": text, "profiles/../nemo.json": config}, version=version)
    assert messages(found) == [
        "use_replayssm = true with tensor_parallel_size = 3 and a model with mamba_num_heads = 8 (config.json); "
        f'vLLM {version} refuses to start when it builds the model: "--use-replayssm requires tensor-parallel heads '
        'to divide evenly"'
    ]
    assert found[0].fix == "set tensor_parallel_size to a divisor of 8"
    even = text.replace("tensor_parallel_size = 3", "tensor_parallel_size = 2")
    assert check({"s.toml": even, "profiles/../nemo.json": config}, version=version) == []
