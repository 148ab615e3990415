"""The profiler, encoder-cache transfer and auxiliary-output validators (rules/configs.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least

KIMI = "KimiLinearForCausalLM"


@pytest.mark.parametrize("version", RELEASES)
def test_capture_torch_profiler_needs_the_torch_profiler(check: Check, version: str) -> None:
    found = check(files(profiler_config={"capture_torch_profiler": True}), version=version)
    assert messages(found) == [
        refuses(
            version,
            "profiler_config with no profiler",
            "1 validation error for ProfilerConfig / capture_torch_profiler is only applicable when profiler is set "
            "to 'torch'",
        )
    ]
    assert found[0].rule == "profiler-config"
    torch = {"profiler": "torch", "torch_profiler_dir": "/tmp/traces", "capture_torch_profiler": True}
    assert check(files(profiler_config=torch), version=version) == []
    no_dir = check(files(profiler_config={"profiler": "torch"}), version=version)
    assert messages(no_dir) == [
        refuses(
            version,
            'profiler_config with profiler = "torch"',
            "1 validation error for ProfilerConfig / torch_profiler_dir must be set when profiler is 'torch'",
        )
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_proton_options_need_the_proton_profiler(check: Check, version: str) -> None:
    """0.28.0 added the proton profiler and its options."""
    layer = files(profiler_config={"proton_hook": "triton"})
    if not at_least(version, "0.28.0"):
        assert check(layer, version=version, rule="profiler-config") == []
        return
    assert messages(check(layer, version=version)) == [
        refuses(
            version,
            "profiler_config with no profiler",
            "1 validation error for ProfilerConfig / proton_hook only applicable when profiler is set to 'proton'",
        )
    ]
    proton = {"profiler": "proton", "proton_profiler_dir": "/tmp/proton", "proton_hook": "triton"}
    assert check(files(profiler_config=proton), version=version, rule="profiler-config") == []


@pytest.mark.parametrize("version", RELEASES)
def test_an_ec_connector_needs_a_role(check: Check, version: str) -> None:
    found = check(files(ec_transfer_config={"ec_connector": "ECExampleConnector"}), version=version)
    assert messages(found) == [
        refuses(
            version,
            'ec_transfer_config.ec_connector = "ECExampleConnector" without an ec_role',
            "1 validation error for ECTransferConfig / Please specify ec_role when ec_connector is set, supported "
            "roles are ('ec_producer', 'ec_both', 'ec_consumer')",
        )
    ]
    fine = files(ec_transfer_config={"ec_connector": "ECExampleConnector", "ec_role": "ec_consumer"})
    assert check(fine, version=version, rule="ec-role-missing") == []


@pytest.mark.parametrize("version", RELEASES)
def test_routed_experts_output_needs_a_moe_model(check: Check, version: str) -> None:
    found = check(files(enable_return_routed_experts=True), version=version, rule="aux-output-compatibility")
    if not at_least(version, "0.31.0"):
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            "enable_return_routed_experts = true for a LlamaForCausalLM model",
            "AuxOutput Connector only supports MoE models.",
        )
    ]
    cp = check(
        files(KIMI, enable_return_routed_experts=True, enable_prefix_caching=True, decode_context_parallel_size=2),
        version=version,
        rule="aux-output-compatibility",
    )
    assert messages(cp) == [
        refuses(
            version,
            f"enable_return_routed_experts = true for a {KIMI} model",
            "--enable-return-routed-experts is incompatible with context parallelism (DCP/PCP > 1).",
        )
    ]
    moe = check(
        files(KIMI, enable_return_routed_experts=True, enable_prefix_caching=True),
        version=version,
        rule="aux-output-compatibility",
    )
    assert moe == []


@pytest.mark.parametrize("version", RELEASES)
def test_routed_experts_output_before_031_refuses_pipeline_parallelism(check: Check, version: str) -> None:
    layer = files(KIMI, enable_return_routed_experts=True, enable_prefix_caching=True, pipeline_parallel_size=2)
    found = check(layer, version=version, rule="aux-output-compatibility")
    what = (
        "enable_return_routed_experts = true"
        if not at_least(version, "0.31.0")
        else f"enable_return_routed_experts = true for a {KIMI} model"
    )
    assert messages(found) == [
        refuses(version, what, "--enable-return-routed-experts is incompatible with pipeline parallelism (PP > 1).")
    ]
    if not at_least(version, "0.31.0"):
        dense = files(enable_return_routed_experts=True)
        assert check(dense, version=version, rule="aux-output-compatibility") == []


def test_nemotron_h_has_experts_by_default(check: Check) -> None:
    """transformers' NemotronHConfig defaults to 8 routed experts, so vLLM accepts routed-experts output for it."""
    layer = files("NemotronHForCausalLM", enable_return_routed_experts=True, enable_prefix_caching=True)
    assert check(layer, rule="aux-output-compatibility") == []


@pytest.mark.parametrize("version", RELEASES)
def test_an_ec_producer_only_role_needs_a_multimodal_model(check: Check, version: str) -> None:
    producer = files(ec_transfer_config={"ec_connector": "ECExampleConnector", "ec_role": "ec_producer"})
    found = check(producer, version=version, rule="ec-producer-multimodal")
    if not at_least(version, "0.29.0"):
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            'ec_transfer_config.ec_role = "ec_producer" for a LlamaForCausalLM model',
            "An EC producer-only instance requires a multimodal model.",
        )
    ]
    both = files(ec_transfer_config={"ec_connector": "ECExampleConnector", "ec_role": "ec_both"})
    assert check(both, version=version, rule="ec-producer-multimodal") == []


@pytest.mark.parametrize("version", RELEASES)
def test_a_proton_output_format_needs_its_proton_data(check: Check, version: str) -> None:
    """0.28.0: chrome_trace writes a trace, hatchet a tree (profiled eagerly, as vLLM asks of Proton: rules/proton.py)."""
    proton = {"profiler": "proton", "proton_profiler_dir": "/tmp/proton"}
    chrome = files(profiler_config={**proton, "proton_output_format": "chrome_trace"}, enforce_eager=True)
    if not at_least(version, "0.28.0"):
        assert check(chrome, version=version, rule="profiler-config") == []
        return
    found = check(chrome, version=version)
    assert messages(found) == [
        refuses(
            version,
            'profiler_config with profiler = "proton"',
            "1 validation error for ProfilerConfig / chrome_trace output requires proton_data='trace'",
        )
    ]
    assert found[0].fix == "set profiler_config.proton_data to what the output format or graph attribution needs"
    hatchet = {**proton, "proton_data": "trace", "proton_output_format": "hatchet"}
    assert messages(check(files(profiler_config=hatchet, enforce_eager=True), version=version)) == [
        refuses(
            version,
            'profiler_config with profiler = "proton"',
            "1 validation error for ProfilerConfig / hatchet output requires proton_data='tree'",
        )
    ]
    fitting = {**proton, "proton_data": "trace", "proton_output_format": "chrome_trace"}
    assert check(files(profiler_config=fitting), version=version, rule="profiler-config") == []


@pytest.mark.parametrize("version", [v for v in RELEASES if at_least(v, "0.30.0")])
def test_proton_graph_attribution_needs_tree_data_and_no_periodic_flushing(check: Check, version: str) -> None:
    proton = {"profiler": "proton", "proton_profiler_dir": "/tmp/proton", "proton_graph_attribution": True}
    assert messages(check(files(profiler_config={**proton, "proton_data": "trace"}), version=version)) == [
        refuses(
            version,
            'profiler_config with profiler = "proton"',
            "1 validation error for ProfilerConfig / proton_graph_attribution requires proton_data='tree'",
        )
    ]
    flushing = {**proton, "proton_mode": "periodic_flushing:format=hatchet_msgpack"}
    assert messages(check(files(profiler_config=flushing), version=version)) == [
        refuses(
            version,
            'profiler_config with profiler = "proton"',
            "1 validation error for ProfilerConfig / proton_graph_attribution is incompatible with periodic_flushing: "
            "both manage Proton data phases.",
        )
    ]
    assert check(files(profiler_config=proton), version=version, rule="profiler-config") == []


RULE = "engram-config"


@pytest.mark.parametrize("version", [v for v in RELEASES if at_least(v, "0.30.0")])
def test_engram_shared_memory_and_huge_pages_need_cpu_offload(check: Check, version: str) -> None:
    """EngramConfig._validate_shared_memory: 0.30.0 checks the shared memory, 0.31.0 added use_thp."""
    # (Llama has no Engram embeddings either: engram-model, a later check, is left out here)
    shared = check(files(engram_config={"cpu_offload": False, "dp_shared_memory": True}), version=version, rule=RULE)
    assert messages(shared) == [
        refuses(
            version,
            "engram_config with dp_shared_memory = true, cpu_offload = false",
            "1 validation error for EngramConfig / dp_shared_memory requires cpu_offload=True",
        )
    ]
    fine = files(engram_config={"cpu_offload": True, "dp_shared_memory": True})
    assert check(fine, version=version, rule=RULE) == []
    if not at_least(version, "0.31.0"):
        return  # no use_thp before 0.31.0 (an unknown key)
    thp = check(files(engram_config={"use_thp": True, "dp_shared_memory": True}), version=version, rule=RULE)
    assert messages(thp) == [
        refuses(
            version,
            "engram_config with use_thp = true, dp_shared_memory = true",
            "1 validation error for EngramConfig / use_thp requires cpu_offload=True and dp_shared_memory=False",
        )
    ]
    private = files(engram_config={"use_thp": True, "dp_shared_memory": False})
    assert check(private, version=version, rule=RULE) == []
