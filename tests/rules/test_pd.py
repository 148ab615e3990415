"""Prefill/decode pair rules across roles (vllm-facts.md 7, launch-examples.md D3)."""

from __future__ import annotations

from tests.rules.conftest import Check, messages
from tests.rules.layers import NEMOTRON, layer

QWEN = layer("Qwen3ForCausalLM")
NEMO = layer(NEMOTRON)


def pd(
    *,
    prefill_role: str = "kv_producer",
    decode_role: str = "kv_consumer",
    decode_connector: str = "NixlConnector",
    prefill_extra: str = "",
    decode_extra: str = "",
    prefill_port: str = "5600",
    decode_port: str = "5601",
    env_extra: str = "",
) -> str:
    return f"""
[roles.prefill.serve]
port = 8100
kv_transfer_config = {{ kv_connector = "NixlConnector", kv_role = "{prefill_role}" }}
{prefill_extra}
[roles.prefill.env]
VLLM_NIXL_SIDE_CHANNEL_PORT = "{prefill_port}"
{env_extra}
[roles.decode.serve]
port = 8200
kv_transfer_config = {{ kv_connector = "{decode_connector}", kv_role = "{decode_role}" }}
{decode_extra}
[roles.decode.env]
VLLM_NIXL_SIDE_CHANNEL_PORT = "{decode_port}"
{env_extra}
[roles.proxy]
kind = "command"
command = ["vllm-router", "--port", "8192"]

[roles.decode]
kind = "vllm"

[roles.prefill]
kind = "vllm"
"""


def test_a_correct_pair_has_no_findings(check: Check) -> None:
    assert check({"m.toml": QWEN, "d.toml": pd()}, stack="m+d") == []


def test_two_producers(check: Check) -> None:
    found = check({"m.toml": QWEN, "d.toml": pd(decode_role="kv_producer")}, stack="m+d")
    assert [(f.rule, f.role) for f in found] == [("pd-roles-unpaired", None)]
    assert found[0].message == (
        "every P/D role of this stack is a kv_producer, none a kv_consumer: prefill (kv_producer), decode "
        "(kv_producer); KV is never transferred (vllm-project/vllm#11490)"
    )
    assert [(loc.line, loc.key) for loc in found[0].locations] == [
        (3, "roles.prefill.serve.kv_transfer_config.kv_connector"),
        (3, "roles.prefill.serve.kv_transfer_config.kv_role"),
        (10, "roles.decode.serve.kv_transfer_config.kv_connector"),
        (10, "roles.decode.serve.kv_transfer_config.kv_role"),
    ]


def test_kv_both_is_deprecated_for_nixl_but_pairs(check: Check) -> None:
    found = check({"m.toml": QWEN, "d.toml": pd(prefill_role="kv_both", decode_role="kv_both")}, stack="m+d")
    assert [(f.rule, f.severity.value, f.role) for f in found] == [
        ("nixl-kv-both-deprecated", "warning", "prefill"),
        ("nixl-kv-both-deprecated", "warning", "decode"),
    ]
    assert found[0].message == (
        'NixlConnector with kv_role = "kv_both" is deprecated: vLLM says "Please set kv_role=\'kv_producer\' for '
        "prefill instances and kv_role='kv_consumer' for decode instances\""
    )
    # D3d: prefill kv_producer with decode kv_both is a working pair
    mixed = check({"m.toml": QWEN, "d.toml": pd(decode_role="kv_both")}, stack="m+d")
    assert [f.rule for f in mixed] == ["nixl-kv-both-deprecated"]


def test_connector_mismatch(check: Check) -> None:
    found = check({"m.toml": QWEN, "d.toml": pd(decode_connector="MooncakeConnector")}, stack="m+d")
    assert messages(found) == [
        "the P/D roles use different KV connectors (prefill uses NixlConnector, decode uses MooncakeConnector); both "
        "sides of a pair need the same one"
    ]


def test_model_dtype_and_block_size_must_match(check: Check) -> None:
    extra = 'kv_cache_dtype = "fp8"\nblock_size = 128\nmodel = "Qwen/Qwen3-8B"'
    found = check({"m.toml": QWEN, "d.toml": pd(prefill_extra=extra)}, stack="m+d")
    assert [(f.rule, f.message) for f in found] == [
        (
            "pd-kv-cache-dtype-mismatch",
            'the P/D roles differ in kv_cache_dtype: prefill "fp8", decode "auto" (vLLM default); the NIXL handshake '
            "rejects peers whose KV cache dtype differs",
        ),
        (
            "pd-block-size-mismatch",
            "the P/D roles differ in block_size: prefill 128, decode (vLLM default); the NIXL handshake rejects peers "
            "whose block size differs",
        ),
        (
            "pd-model-mismatch",
            'the P/D roles differ in serve.model: prefill "Qwen/Qwen3-8B", decode "org/Qwen3ForCausalLM"; the KV '
            "handshake requires the same model on both sides",
        ),
    ]
    same = 'kv_cache_dtype = "fp8"\nblock_size = 128'
    assert check({"m.toml": QWEN, "d.toml": pd(prefill_extra=same, decode_extra=same)}, stack="m+d") == []


def test_speculative_config_must_match(check: Check) -> None:
    spec = 'speculative_config = { method = "ngram", num_speculative_tokens = 2, prompt_lookup_max = 4 }'
    found = check({"m.toml": QWEN, "d.toml": pd(decode_extra=spec)}, stack="m+d", rule="pd-speculative-mismatch")
    assert len(found) == 1
    assert found[0].message.startswith("the P/D roles differ in speculative_config: prefill (vLLM default), decode ")


def test_decode_tensor_parallel_at_least_prefill(check: Check) -> None:
    found = check(
        {
            "m.toml": QWEN,
            "d.toml": pd(prefill_extra="tensor_parallel_size = 4", decode_extra="tensor_parallel_size = 2"),
        },
        stack="m+d",
        rule="pd-tensor-parallel",
    )
    assert messages(found) == [
        "prefill role prefill has tensor_parallel_size = 4, decode role decode has 2; NIXL needs decode tensor "
        "parallelism >= prefill's"
    ]
    assert found[0].fix == "raise tensor_parallel_size of decode to at least 4, or lower prefill's"
    larger = pd(prefill_extra="tensor_parallel_size = 1", decode_extra="tensor_parallel_size = 4")
    assert check({"m.toml": QWEN, "d.toml": larger}, stack="m+d", rule="pd-tensor-parallel") == []


def test_hybrid_models_need_equal_tensor_parallel_and_ds_layout(check: Check) -> None:
    larger = pd(prefill_extra="tensor_parallel_size = 1", decode_extra="tensor_parallel_size = 4")
    found = check({"m.toml": NEMO, "d.toml": larger}, stack="m+d")
    assert sorted((f.rule, f.role or "") for f in found) == [
        ("model-facts-missing", "decode"),  # tensor_parallel_size = 4 against heads it does not know
        ("pd-hybrid-conv-layout", "decode"),
        ("pd-hybrid-conv-layout", "prefill"),
        ("pd-tensor-parallel", ""),
    ]
    tp = next(f for f in found if f.rule == "pd-tensor-parallel")
    assert tp.message == (
        "prefill role prefill has tensor_parallel_size = 1, decode role decode has 4; hybrid (Mamba) models need "
        "equal tensor parallelism on both sides"
    )
    layout = next(f for f in found if f.rule == "pd-hybrid-conv-layout")
    assert layout.severity.value == "error"
    assert layout.message == (
        "NemotronHForCausalLM is a hybrid (Mamba) model transferring KV over NixlConnector with "
        'VLLM_SSM_CONV_STATE_LAYOUT unset; P/D of hybrid models needs it set to "DS" ("3-read Mamba conv transfer '
        'requires DS conv state layout")'
    )
    fixed = pd(env_extra='VLLM_SSM_CONV_STATE_LAYOUT = "DS"')
    assert check({"m.toml": NEMO, "d.toml": fixed}, stack="m+d") == []


def test_one_role_of_a_pair_gets_at_most_a_warning(check: Check) -> None:
    text = layer(NEMOTRON, kv_transfer_config={"kv_connector": "NixlConnector", "kv_role": "kv_producer"})
    found = check({"s.toml": text})
    assert [(f.rule, f.severity.value) for f in found] == [("pd-hybrid-conv-layout", "warning")]


def test_side_channel_ports_on_one_host(check: Check) -> None:
    found = check({"m.toml": QWEN, "d.toml": pd(decode_port="5600")}, stack="m+d")
    assert messages(found) == [
        "roles prefill and decode run on one host with the same NIXL side-channel port (prefill 5600, decode 5600; "
        "shared: 5600); the second instance cannot bind it (vllm-project/vllm#20965)"
    ]
    # the default port is 5600 on both when neither sets it
    both_default = pd(prefill_port="5600", decode_port="5600").replace('VLLM_NIXL_SIDE_CHANNEL_PORT = "5600"\n', "")
    found = check({"m.toml": QWEN, "d.toml": both_default}, stack="m+d", rule="pd-side-channel-port")
    assert found[0].message.startswith(
        "roles prefill and decode run on one host with the same NIXL side-channel port "
        "(prefill 5600 (default), decode 5600 (default)"
    )
    # data parallelism: prefill 5600..5601 overlaps decode 5601
    dp = pd(prefill_extra="data_parallel_size = 2")
    assert len(check({"m.toml": QWEN, "d.toml": dp}, stack="m+d", rule="pd-side-channel-port")) == 1
    # two hosts (D3b): the same port is fine
    hosts = (
        pd(decode_port="5600")
        .replace("[roles.decode.env]\n", '[roles.decode.env]\nVLLM_NIXL_SIDE_CHANNEL_HOST = "10.0.0.2"\n')
        .replace("[roles.prefill.env]\n", '[roles.prefill.env]\nVLLM_NIXL_SIDE_CHANNEL_HOST = "10.0.0.1"\n')
    )
    assert check({"m.toml": QWEN, "d.toml": hosts}, stack="m+d") == []
