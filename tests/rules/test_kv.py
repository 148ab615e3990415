"""KV-connector hygiene rules: one triggering and one non-triggering case each (per release where they differ)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.layers import RELEASES, at_least, layer

QWEN = "Qwen3ForCausalLM"
REGISTERED_033 = (
    "DecodeBenchConnector, ExampleConnector, ExampleHiddenStatesConnector, FlexKVConnectorV1, HF3FSKVConnector, "
    "HiSparseConnector, LMCacheConnectorV1, LMCacheMPConnector, MoRIIOConnector, MooncakeConnector, "
    "MooncakeStoreConnector, MultiConnector, NixlConnector, NixlPullConnector, NixlPushConnector, "
    "OffloadingConnector, SimpleCPUOffloadConnector"
)


@pytest.mark.parametrize("version", RELEASES)
def test_kv_role_missing(check: Check, version: str) -> None:
    found = check({"s.toml": layer(QWEN, kv_transfer_config={"kv_connector": "NixlConnector"})}, version=version)
    assert messages(found) == [
        f'kv_transfer_config sets kv_connector = "NixlConnector" without kv_role; vLLM {version} refuses to start: '
        "\"Please specify kv_role when kv_connector is set, supported roles are ('kv_producer', 'kv_both', "
        "'kv_consumer')\""
    ]
    assert found[0].rule == "kv-role-missing"
    assert [(loc.line, loc.key) for loc in found[0].locations] == [(8, "serve.kv_transfer_config.kv_connector")]
    ok = layer(QWEN, kv_transfer_config={"kv_connector": "NixlConnector", "kv_role": "kv_consumer"})
    assert check({"s.toml": ok}, version=version, rule="kv-role-missing") == []


def test_kv_role_invalid(check: Check) -> None:
    found = check({"s.toml": layer(QWEN, kv_transfer_config={"kv_connector": "NixlConnector", "kv_role": "kv_sender"})})
    assert messages(found) == [
        'kv_transfer_config has kv_role = "kv_sender"; vLLM 0.33.0 refuses to start: "kv_role: Input should be '
        "'kv_producer', 'kv_both' or 'kv_consumer'\""
    ]
    ok = layer(QWEN, kv_transfer_config={"kv_connector": "NixlConnector", "kv_role": "kv_producer"})
    assert check({"s.toml": ok}, rule="kv-role-invalid") == []


def test_unknown_connector_shared_storage_in_0_33(check: Check) -> None:
    """The error record's own example fix uses a connector 0.33.0 does not register (vllm-facts.md 8)."""
    text = layer(QWEN, kv_transfer_config={"kv_connector": "SharedStorageConnector", "kv_role": "kv_both"})
    found = check({"s.toml": text})
    assert messages(found) == [
        'serve.kv_transfer_config names kv_connector = "SharedStorageConnector", which vLLM 0.33.0 does not '
        'register; vLLM 0.33.0 refuses to start: "Unsupported connector type: SharedStorageConnector"'
    ]
    assert found[0].fix == (
        f"vLLM 0.33.0 registers: {REGISTERED_033}; an out-of-tree connector needs kv_connector_module_path"
    )
    out_of_tree = layer(
        QWEN,
        kv_transfer_config={
            "kv_connector": "SharedStorageConnector",
            "kv_role": "kv_both",
            "kv_connector_module_path": "acme.connectors",
        },
    )
    assert check({"s.toml": out_of_tree}, rule="kv-connector-unknown") == []


@pytest.mark.parametrize("version", RELEASES)
def test_unknown_connector_hisparse_before_0_30(check: Check, version: str) -> None:
    text = layer(QWEN, kv_transfer_config={"kv_connector": "HiSparseConnector", "kv_role": "kv_both"})
    found = check({"s.toml": text}, version=version, rule="kv-connector-unknown")
    assert bool(found) is not at_least(version, "0.30.0")


def test_unknown_connector_typo_child_and_later_check(check: Check) -> None:
    multi = {
        "kv_connector": "MultiConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {
            "connectors": [
                {"kv_connector": "NixlConector", "kv_role": "kv_producer"},
                {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"},
            ]
        },
    }
    found = check({"s.toml": layer(QWEN, disable_hybrid_kv_cache_manager=True, kv_transfer_config=multi)})
    assert messages(found) == [
        'kv_connector_extra_config.connectors[0] of the MultiConnector names kv_connector = "NixlConector", which '
        'vLLM 0.33.0 does not register; vLLM 0.33.0 refuses to start (when it builds the connector): "Unsupported '
        'connector type: NixlConector"'
    ]
    assert found[0].fix.startswith("did you mean 'NixlConnector'? vLLM 0.33.0 registers: ")


def test_kv_connector_missing(check: Check) -> None:
    found = check({"s.toml": layer(QWEN, kv_transfer_config={"kv_role": "kv_both"})})
    assert messages(found) == [
        'kv_transfer_config has no kv_connector; vLLM 0.33.0 refuses to start: "Connector name is not set in '
        'KVTransferConfig"'
    ]
    # with the HMA choice made explicitly, vLLM never looks the connector up: nothing is configured
    explicit = layer(QWEN, disable_hybrid_kv_cache_manager=False, kv_transfer_config={"kv_role": "kv_both"})
    found = check({"s.toml": explicit})
    assert [(f.rule, f.severity.value, f.message) for f in found] == [
        ("kv-connector-missing", "warning", "kv_transfer_config has no kv_connector, so it configures nothing")
    ]
    # kv_offloading_size fills the name in
    assert check({"s.toml": layer(QWEN, kv_offloading_size=4, kv_transfer_config={"kv_role": "kv_both"})}) == []


def test_offload_replaces_an_explicit_connector(check: Check) -> None:
    text = layer(
        QWEN, kv_offloading_size=4, kv_transfer_config={"kv_connector": "NixlConnector", "kv_role": "kv_producer"}
    )
    found = check({"s.toml": text})
    assert [(f.rule, f.severity.value) for f in found] == [("kv-offload-replaces-connector", "warning")]
    assert found[0].message == (
        'kv_offloading_size = 4 silently replaces the explicit KV connector NixlConnector (kv_role "kv_producer") with '
        'OffloadingConnector (kv_role "kv_both"): vLLM keeps only the offload connector'
    )
    assert [loc.key for loc in found[0].locations] == [
        "serve.kv_offloading_size",
        "serve.kv_transfer_config.kv_connector",
        "serve.kv_transfer_config.kv_role",
    ]
    assert found[0].fix == (
        "remove kv_offloading_size and, to offload beside another connector, use a MultiConnector whose connectors "
        "are NixlConnector and OffloadingConnector; or remove the explicit kv_transfer_config"
    )
    assert check({"s.toml": layer(QWEN, kv_offloading_size=4)}) == []


def test_extra_config_inherited_from_the_previous_connector(check: Check) -> None:
    first = layer(
        QWEN,
        kv_transfer_config={
            "kv_connector": "LMCacheConnectorV1",
            "kv_role": "kv_both",
            "kv_connector_extra_config": {"discard_partial_chunks": False, "lmcache_rpc_port": "producer1"},
        },
    )
    second = '[serve.kv_transfer_config]\nkv_connector = "OffloadingConnector"\n'
    found = check({"a.toml": first, "b.toml": second}, stack="a+b")
    assert messages(found) == [
        'layer \'b\' changes kv_connector from "LMCacheConnectorV1" to "OffloadingConnector" but inherits '
        'kv_connector_extra_config keys written for "LMCacheConnectorV1": discard_partial_chunks, lmcache_rpc_port'
    ]
    assert [(loc.file, loc.line) for loc in found[0].locations] == [
        ("profiles/b.toml", 2),
        ("profiles/a.toml", 8),
        ("profiles/a.toml", 12),
        ("profiles/a.toml", 13),
    ]
    fixed = (
        '[layer]\nunset = ["serve.kv_transfer_config.kv_connector_extra_config"]\n\n'
        '[serve.kv_transfer_config]\nkv_connector = "OffloadingConnector"\n'
    )
    assert check({"a.toml": first, "b.toml": fixed}, stack="a+b") == []


@pytest.mark.parametrize("version", RELEASES)
def test_expandable_segments_beside_a_connector(check: Check, version: str) -> None:
    env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    found = check({"s.toml": layer(QWEN, env=env, kv_offloading_size=4)}, version=version)
    assert messages(found) == [
        'PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True" beside the OffloadingConnector (kv_role "kv_both") that '
        f'kv_offloading_size = 4 creates; vLLM {version} refuses to start: "KV connector OffloadingConnector is '
        "incompatible with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True unless enable_cumem_allocator is also "
        'enabled"'
    ]
    assert [loc.key for loc in found[0].locations] == ["env.PYTORCH_CUDA_ALLOC_CONF", "serve.kv_offloading_size"]
    assert check({"s.toml": layer(QWEN, env=env)}, version=version) == []
    cumem = layer(QWEN, env=env, kv_offloading_size=4, enable_cumem_allocator=True)
    assert check({"s.toml": cumem}, version=version) == []


def _sleep(version: str, connector: str) -> str:
    return (
        f'enable_sleep_mode = true with KV connector {connector} (kv_role "kv_both", serve.kv_transfer_config); '
        f'vLLM {version} refuses to start: "{connector} does not support sleep mode."'
    )


@pytest.mark.parametrize("version", RELEASES)
def test_sleep_mode_with_a_connector_that_cannot_follow_it(check: Check, version: str) -> None:
    """0.33.0 `_verify_kv_transfer_compat`: the connector class's `supports_sleep_mode`."""
    push = {"kv_connector": "NixlPushConnector", "kv_role": "kv_both"}
    found = check(
        {"s.toml": layer(QWEN, enable_sleep_mode=True, kv_transfer_config=push)},
        version=version,
        rule="kv-connector-sleep-mode",
    )
    if not at_least(version, "0.33.0"):
        assert found == []
        return
    assert messages(found) == [_sleep(version, "NixlPushConnector")]
    libfabric = {
        "kv_connector": "NixlConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"backends": ["LIBFABRIC"]},
    }
    found = check(
        {"s.toml": layer(QWEN, enable_sleep_mode=True, kv_transfer_config=libfabric)},
        version=version,
        rule="kv-connector-sleep-mode",
    )
    assert messages(found) == [_sleep(version, "NixlConnector")]
    mooncake = {"kv_connector": "MooncakeConnector", "kv_role": "kv_both"}
    nvlink = layer(QWEN, enable_sleep_mode=True, kv_transfer_config=mooncake, env={"MC_INTRANODE_NVLINK": "1"})
    assert messages(check({"s.toml": nvlink}, version=version, rule="kv-connector-sleep-mode")) == [
        _sleep(version, "MooncakeConnector")
    ]


@pytest.mark.parametrize(
    "ktc",
    [
        {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
        {"kv_connector": "MooncakeConnector", "kv_role": "kv_both"},
        {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"},
        {
            "kv_connector": "MultiConnector",
            "kv_role": "kv_both",
            "kv_connector_extra_config": {
                "connectors": [
                    {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
                    {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"},
                ]
            },
        },
    ],
)
def test_sleep_mode_with_a_connector_that_follows_it(check: Check, ktc: dict[str, object]) -> None:
    found = check(
        {"s.toml": layer(QWEN, enable_sleep_mode=True, kv_transfer_config=ktc)}, rule="kv-connector-sleep-mode"
    )
    assert found == []
    multi = {
        "kv_connector": "MultiConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"connectors": [ktc, {"kv_connector": "MoRIIOConnector", "kv_role": "kv_both"}]},
    }
    found = check(
        {"s.toml": layer(QWEN, enable_sleep_mode=True, kv_transfer_config=multi)}, rule="kv-connector-sleep-mode"
    )
    assert messages(found) == [_sleep("0.33.0", "MultiConnector")]
