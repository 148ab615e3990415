"""Experts, Engram tables, API servers and object-storage models against the parallel launch (rules/moe_parallel.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages, no_config, not_checked
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least

NEMOTRON = "NemotronHForCausalLM"
KIMI = "KimiLinearForCausalLM"
EP = {"enable_expert_parallel": True, "tensor_parallel_size": 2}
ENGRAM_MODEL = {"architectures": ["DeepseekV41ForCausalLM"], "engram_layer_ids": [0]}
NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
MOONEP_EPLB = (
    "The moonep all2all backend does not support EPLB yet: EPLB rearranges expert parameters in a layout MoonEP's "
    "replicated [E+B] weights do not follow. Disable --enable-eplb or use a different --all2all-backend."
)


@pytest.mark.parametrize("version", RELEASES)
def test_moonep_refuses_eplb(check: Check, version: str) -> None:
    found = check(
        files(NEMOTRON, all2all_backend="moonep", enable_eplb=True, **EP), version=version, rule="moonep-all2all"
    )
    if not at_least(version, "0.31.0"):
        assert found == []  # no moonep backend before 0.31.0 (its name is refused as invalid-value)
        return
    assert messages(found) == [refuses(version, 'all2all_backend = "moonep" with enable_eplb = true', MOONEP_EPLB)]
    assert check(files(NEMOTRON, all2all_backend="moonep", **EP), version=version, rule="moonep-all2all") == []


@pytest.mark.parametrize("version", ["0.31.0", "0.32.0", "0.33.0"])
def test_moonep_needs_an_unquantized_bf16_model(check: Check, version: str) -> None:
    fp16 = check(files(NEMOTRON, all2all_backend="moonep", dtype="float16", enable_eplb=True, **EP), version=version)
    assert [(f.rule, f.message, f.fix) for f in fp16 if f.rule == "moonep-all2all"] == [
        (
            "moonep-all2all",
            refuses(
                version,
                'all2all_backend = "moonep" with a float16 model',
                "The moonep all2all backend currently supports BF16 models only; got dtype=torch.float16. Use a "
                "different --all2all-backend or --dtype bfloat16.",
            ),
            'set dtype = "bfloat16", or choose another all2all_backend',
        )
    ]
    # the checkpoint's quantization_config counts as much as the option
    quantized = files(NEMOTRON, config={"quantization_config": {"quant_method": "fp8"}}, all2all_backend="moonep", **EP)
    found = check(quantized, version=version, rule="moonep-all2all")
    assert messages(found) == [
        refuses(
            version,
            'all2all_backend = "moonep" with a model quantized as "fp8"',
            "The moonep all2all backend currently supports unquantized BF16 models only; got quantization='fp8'. "
            "Use a different --all2all-backend for quantized models.",
        )
    ]
    assert [loc.key for loc in found[0].locations] == ["serve.all2all_backend", "model.config"]
    # a float32 checkpoint runs as bfloat16 with dtype = "auto"
    float32 = files(NEMOTRON, config={"torch_dtype": "float32"}, all2all_backend="moonep", **EP)
    assert check(float32, version=version, rule="moonep-all2all") == []
    assert check(files(NEMOTRON, all2all_backend="moonep", dtype="bfloat16", **EP), version=version) == []


def test_moonep_without_the_config_json_says_the_check_could_not_run(check: Check) -> None:
    found = check(files(NEMOTRON, with_config=False, all2all_backend="moonep"), rule="model-facts-missing")
    assert [f.message for f in found] == [no_config("dummy/NemotronHForCausalLM")]
    assert not_checked(found) == ['all2all_backend = "moonep" against the model\'s dtype and quantization']
    written = files(NEMOTRON, with_config=False, all2all_backend="moonep", dtype="bfloat16", quantization="fp8")
    assert check(written, rule="model-facts-missing") == []


@pytest.mark.parametrize("version", ["0.31.0", "0.33.0"])
def test_moonep_needs_linear_expert_placement(check: Check, version: str) -> None:
    layer = files(NEMOTRON, all2all_backend="moonep", expert_placement_strategy="round_robin", **EP)
    assert messages(check(layer, version=version, rule="moonep-all2all")) == [
        refuses(
            version,
            'all2all_backend = "moonep" with expert_placement_strategy = "round_robin"',
            "The moonep all2all backend requires linear expert placement: its load-time all-gather assumes each "
            "rank holds a contiguous chunk of the global expert range. Got --expert-placement-strategy "
            "'round_robin'.",
        )
    ]
    linear = files(NEMOTRON, all2all_backend="moonep", expert_placement_strategy="linear", **EP)
    assert check(linear, version=version, rule="moonep-all2all") == []


@pytest.mark.parametrize("version", RELEASES)
def test_a_self_dispatching_moe_backend_refuses_an_all2all_backend(check: Check, version: str) -> None:
    layer = files(NEMOTRON, moe_backend="flashinfer_moe_ep_cutedsl", all2all_backend="deepep_low_latency", **EP)
    found = check(layer, version=version, rule="moe-backend-all2all")
    if not at_least(version, "0.32.0"):
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            'moe_backend = "flashinfer_moe_ep_cutedsl" with all2all_backend = "deepep_low_latency"',
            "moe_backend='flashinfer_moe_ep_cutedsl' dispatches and combines itself and cannot be paired with "
            "all2all_backend='deepep_low_latency'; leave --all2all-backend unset.",
        )
    ]
    for fine in ({}, {"all2all_backend": "allgather_reducescatter"}, {"all2all_backend": "naive"}):
        layer = files(NEMOTRON, moe_backend="flashinfer_moe_ep_cutedsl", **EP, **fine)
        assert check(layer, version=version, rule="moe-backend-all2all") == [], fine
    other = files(NEMOTRON, moe_backend="triton", all2all_backend="deepep_low_latency", **EP)
    assert check(other, version=version, rule="moe-backend-all2all") == []


@pytest.mark.parametrize("version", RELEASES)
def test_engram_shared_tables_need_data_parallelism(check: Check, version: str) -> None:
    layer = files(config=ENGRAM_MODEL, engram_config={"dp_shared_memory": True})
    found = check(layer, version=version, rule="engram-parallel")
    if not at_least(version, "0.30.0"):
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            "engram_config.dp_shared_memory = true with data_parallel_size = 1",
            "dp_shared_memory requires data_parallel_size > 1.",
        )
    ]
    dp = files(config=ENGRAM_MODEL, engram_config={"dp_shared_memory": True}, data_parallel_size=2)
    assert check(dp, version=version, rule="engram-parallel") == []


@pytest.mark.parametrize("version", ["0.30.0", "0.33.0"])
def test_engram_tables_and_elastic_ep(check: Check, version: str) -> None:
    elastic = {"data_parallel_size": 2, "enable_elastic_ep": True}
    shared = files(config=ENGRAM_MODEL, engram_config={"dp_shared_memory": True}, **elastic)
    assert messages(check(shared, version=version, rule="engram-parallel")) == [
        refuses(
            version,
            "engram_config.dp_shared_memory = true with enable_elastic_ep = true",
            "dp_shared_memory is not supported with elastic EP.",
        )
    ]
    across = files(config=ENGRAM_MODEL, engram_config={"embedding_across_dp": True}, **elastic)
    assert messages(check(across, version=version, rule="engram-parallel")) == [
        refuses(
            version,
            "engram_config.embedding_across_dp = true with data_parallel_size = 2 and enable_elastic_ep = true",
            "Engram embedding_across_dp is not supported with elastic EP yet.",
        )
    ]
    one_replica = files(config=ENGRAM_MODEL, engram_config={"embedding_across_dp": True}, enable_elastic_ep=True)
    assert check(one_replica, version=version, rule="engram-parallel") == []


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0"])
def test_engram_shared_tables_need_a_loader_with_weight_callbacks_in_0_30(check: Check, version: str) -> None:
    layer = files(
        config=ENGRAM_MODEL, engram_config={"dp_shared_memory": True}, data_parallel_size=2, load_format="dummy"
    )
    found = check(layer, version=version, rule="engram-parallel")
    if version != "0.30.0":
        assert found == []  # 0.31.0 dropped EngramConfig.verify_load_config
        return
    assert messages(found) == [
        refuses(
            version,
            'engram_config.dp_shared_memory = true with load_format = "dummy"',
            "dp_shared_memory requires load_format 'auto', 'safetensors' or 'pt'; got 'dummy'.",
        )
    ]
    pt = files(config=ENGRAM_MODEL, engram_config={"dp_shared_memory": True}, data_parallel_size=2, load_format="pt")
    assert check(pt, version=version, rule="engram-parallel") == []


@pytest.mark.parametrize("version", RELEASES)
def test_fault_tolerance_needs_a_single_api_server(check: Check, version: str) -> None:
    ft = {"enable_fault_tolerance": True, "data_parallel_size": 2, "data_parallel_rank": 0}
    found = check(files(KIMI, api_server_count=2, **ft), version=version, rule="fault-tolerance-api-servers")
    assert messages(found) == [
        refuses(
            version,
            "enable_fault_tolerance = true with api_server_count = 2",
            "Fault tolerance requires a single API server process (--api-server-count=1), but got 2. The FT system "
            "assumes one AsyncMPClient manages all engines.",
        )
    ]
    for fine in ({"api_server_count": 1}, {}, {"api_server_count": 2, "enable_elastic_ep": True}):
        layer = files(KIMI, **ft, **fine)
        assert check(layer, version=version, rule="fault-tolerance-api-servers") == [], fine
    rust = files(KIMI, api_server_count=2, env={"VLLM_USE_RUST_FRONTEND": "1"}, **ft)
    assert check(rust, version=version, rule="fault-tolerance-api-servers") == []


@pytest.mark.parametrize("version", RELEASES)
def test_an_object_storage_model_needs_a_streaming_load_format(check: Check, version: str) -> None:
    layer = files(model="s3://models/llama", load_format="safetensors")
    assert messages(check(layer, version=version, rule="object-storage-load-format")) == [
        refuses(
            version,
            'model = "s3://models/llama" with load_format = "safetensors"',
            "To load a model from object storage (S3/GCS/Azure), 'load_format' must be 'modelexpress', "
            "'runai_streamer' or 'runai_streamer_sharded', but got 'safetensors'. Model: <the local copy of "
            "s3://models/llama>",
        )
    ]
    for fine in (
        files(model="s3://models/llama"),
        files(model="GS://models/llama", load_format="runai_streamer"),
        files(load_format="safetensors"),
    ):
        assert check(fine, version=version, rule="object-storage-load-format") == []


@pytest.mark.parametrize("version", ["0.31.0", "0.33.0"])
def test_routed_experts_output_refuses_a_pd_connector(check: Check, version: str) -> None:
    base = {"enable_return_routed_experts": True, "enable_prefix_caching": True}
    found = check(files(KIMI, kv_transfer_config=NIXL, **base), version=version, rule="aux-output-compatibility")
    assert messages(found) == [
        refuses(
            version,
            f"enable_return_routed_experts = true for a {KIMI} model",
            "--enable-return-routed-experts is incompatible with NixlConnector; PD auxiliary output is not supported.",
        )
    ]
    multi = {
        "kv_connector": "MultiConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {
            "connectors": [
                {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"},
                {"kv_connector": "MooncakeConnector", "kv_role": "kv_both"},
            ]
        },
    }
    found = check(files(KIMI, kv_transfer_config=multi, **base), version=version, rule="aux-output-compatibility")
    assert [f.message.split('"')[-2] for f in found] == [
        "--enable-return-routed-experts is incompatible with MooncakeConnector; PD auxiliary output is not supported."
    ]
    offload = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"}
    assert (
        check(files(KIMI, kv_transfer_config=offload, **base), version=version, rule="aux-output-compatibility") == []
    )
