"""The serve front end's checks (rules/frontend.py): validate_parsed_serve_args and --device-ids."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least

AUTO_TOOL = "Error: --enable-auto-tool-choice requires --tool-call-parser"
LOG_OUTPUTS = "Error: --enable-log-outputs requires --enable-log-requests"
SSE = "Error: --sse-keep-alive-interval must be a non-negative integer (0 disables keep-alive comments)."
PER_REQUEST = (
    "Error: --enable-per-request-metrics requires engine statistics logging; remove --disable-log-stats to enable "
    "per-request metrics."
)


@pytest.mark.parametrize("version", RELEASES)
def test_auto_tool_choice_needs_a_parser(check: Check, version: str) -> None:
    found = check(files(enable_auto_tool_choice=True), version=version)
    assert messages(found) == [refuses(version, "enable_auto_tool_choice = true without a tool_call_parser", AUTO_TOOL)]
    assert found[0].rule == "auto-tool-choice-parser"
    assert check(files(enable_auto_tool_choice=True, tool_call_parser="hermes"), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_log_outputs_needs_log_requests(check: Check, version: str) -> None:
    found = check(files(enable_log_outputs=True), version=version)
    assert messages(found) == [refuses(version, "enable_log_outputs = true without enable_log_requests", LOG_OUTPUTS)]
    assert check(files(enable_log_outputs=True, enable_log_requests=True), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_sse_keep_alive_interval_must_not_be_negative(check: Check, version: str) -> None:
    """0.29.0 added the option and its check."""
    if not at_least(version, "0.29.0"):
        assert [f.rule for f in check(files(sse_keep_alive_interval=-1), version=version)] == ["unknown-option"]
        return
    found = check(files(sse_keep_alive_interval=-1), version=version)
    assert messages(found) == [refuses(version, "sse_keep_alive_interval = -1", SSE)]
    assert check(files(sse_keep_alive_interval=0), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_per_request_metrics_need_log_stats(check: Check, version: str) -> None:
    found = check(files(enable_per_request_metrics=True, disable_log_stats=True), version=version)
    assert messages(found) == [
        refuses(version, "enable_per_request_metrics = true with disable_log_stats = true", PER_REQUEST)
    ]
    assert check(files(enable_per_request_metrics=True), version=version) == []


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_grpc_port_needs_the_rust_frontend(check: Check, version: str) -> None:
    found = check(files(grpc_port=50051), version=version)
    assert messages(found) == [
        refuses(
            version,
            "grpc_port = 50051 without VLLM_USE_RUST_FRONTEND=1",
            "--grpc-port requires VLLM_USE_RUST_FRONTEND=1 vllm serve",
        )
    ]
    assert check(files(grpc_port=50051, env={"VLLM_USE_RUST_FRONTEND": "1"}), version=version) == []
    clash = check(files(grpc_port=8000, env={"VLLM_USE_RUST_FRONTEND": "1"}), version=version)
    assert messages(clash) == [
        refuses(version, "grpc_port = 8000 equals port", "--grpc-port must differ from --port when HTTP uses TCP")
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_multi_port_external_lb_needs_data_parallelism(check: Check, version: str) -> None:
    found = check(files(data_parallel_multi_port_external_lb=True), version=version)
    assert messages(found) == [
        refuses(
            version,
            "data_parallel_multi_port_external_lb = true",
            "Error: --data-parallel-multi-port-external-lb requires --data-parallel-size > 1",
        )
    ]
    assert found[0].rule == "data-parallel-multi-port-lb"
    local = check(files(data_parallel_multi_port_external_lb=True, data_parallel_size=4), version=version)
    assert messages(local) == [
        refuses(
            version,
            "data_parallel_multi_port_external_lb = true",
            "Error: --data-parallel-multi-port-external-lb requires --data-parallel-size-local >= 2",
        )
    ]
    fine = files(data_parallel_multi_port_external_lb=True, data_parallel_size=4, data_parallel_size_local=2)
    assert check(fine, version=version, rule="data-parallel-multi-port-lb") == []


@pytest.mark.parametrize("version", RELEASES)
def test_device_ids_must_not_repeat_a_gpu(check: Check, version: str) -> None:
    found = check(files(device_ids="0,0"), version=version)
    assert messages(found) == [
        refuses(version, 'device_ids = "0,0" names a GPU twice', "--device-ids must not contain duplicates: [0, 0]")
    ]
    assert check(files(device_ids="0,1"), version=version, rule="device-ids-duplicates") == []


@pytest.mark.parametrize("version", RELEASES)
def test_device_ids_are_all_indexes_or_all_uuids(check: Check, version: str) -> None:
    found = check(files(device_ids="0,GPU-5f2b"), version=version, rule="device-ids-mixed")
    assert messages(found) == [
        refuses(
            version,
            'device_ids = "0,GPU-5f2b" mixes GPU indexes and UUIDs',
            "--device-ids must not mix integer IDs and UUIDs",
        )
    ]
    assert check(files(device_ids="0,1"), version=version, rule="device-ids-mixed") == []


def test_reasoning_effort_map_keys_are_efforts(check: Check) -> None:
    found = check(files(reasoning_effort_map={"hgh": "high"}), version="0.33.0")
    assert messages(found) == [
        refuses(
            "0.33.0",
            "reasoning_effort_map",
            "Error: --reasoning-effort-map has unknown efforts ['hgh']; keys must be one of ['none', 'minimal', "
            "'low', 'medium', 'high', 'xhigh', 'max'].",
        )
    ]
    assert check(files(reasoning_effort_map={"max": "high"}), version="0.33.0") == []
