"""The front-end, observability, output and config-validator rules give vLLM's verdict: a triggering and a
non-triggering case per rule, in every release where the rule applies (and a case per release where it does not).

Same method as tests/oracle/test_crossfield.py: profilekit's `vllm_verdict` must equal the oracle's verdict
(`validate_parsed_serve_args`, then `create_engine_config()`, vLLM's message mapped by tools/verdict_corpus.py
`MESSAGE_RULES`), and both must equal what the case expects, so a case cannot agree vacuously.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from profilekit.compose.index import LayerIndex
from profilekit.compose.merge import compose
from profilekit.rules import vllm_verdict
from profilekit.vllm.argv import render_argv
from profilekit.vllm.catalogue import load_catalogue
from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.oracle_client import OracleWorker
from tests.oracle.test_crossfield import KIMI, LLAMA, NEMOTRON, Case, Expect, _before, _config, _layer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from verdict_common import vllm_rule


def since(release: str, rule: str) -> Expect:
    """`rule` from `release` on; accepted before it."""
    return lambda v: None if _before(v, release) else rule


TORCH = {"profiler": "torch", "torch_profiler_dir": "/tmp/pk-traces", "capture_torch_profiler": True}

CASES = [
    # validate_parsed_serve_args
    Case("auto-tool", "auto-tool-choice-parser", LLAMA, {"enable_auto_tool_choice": True}),
    Case("auto-tool-parser", None, LLAMA, {"enable_auto_tool_choice": True, "tool_call_parser": "hermes"}),
    Case("log-outputs", "log-outputs-requests", LLAMA, {"enable_log_outputs": True}),
    Case("log-outputs-requests", None, LLAMA, {"enable_log_outputs": True, "enable_log_requests": True}),
    Case("sse-negative", "sse-keep-alive-interval", LLAMA, {"sse_keep_alive_interval": -1}, releases=">=0.29.0"),
    Case("sse-zero", None, LLAMA, {"sse_keep_alive_interval": 0}, releases=">=0.29.0"),
    Case(
        "per-request-metrics",
        "per-request-metrics-log-stats",
        LLAMA,
        {"enable_per_request_metrics": True, "disable_log_stats": True},
    ),
    Case("per-request-metrics-stats", None, LLAMA, {"enable_per_request_metrics": True}),
    Case("grpc-port", "grpc-port", LLAMA, {"grpc_port": 50051}, releases=">=0.32.0"),
    Case(
        "grpc-port-same", "grpc-port", LLAMA, {"grpc_port": 8000}, {"VLLM_USE_RUST_FRONTEND": "1"}, releases=">=0.32.0"
    ),
    Case(
        "effort-map-typo", "reasoning-effort-map", LLAMA, {"reasoning_effort_map": {"hgh": "high"}}, releases=">=0.33.0"
    ),
    Case("effort-map", None, LLAMA, {"reasoning_effort_map": {"max": "high"}}, releases=">=0.33.0"),
    Case("multi-port-dp1", "data-parallel-multi-port-lb", LLAMA, {"data_parallel_multi_port_external_lb": True}),
    Case(
        "multi-port-local",
        "data-parallel-multi-port-lb",
        LLAMA,
        {"data_parallel_multi_port_external_lb": True, "data_parallel_size": 4},
    ),
    # EngineArgs._resolve_device_ids
    Case("device-ids-twice", "device-ids-duplicates", LLAMA, {"device_ids": "0,0"}),
    Case("device-ids-once", None, LLAMA, {"device_ids": "0"}),
    Case("device-ids-mixed", "device-ids-mixed", LLAMA, {"device_ids": "0,GPU-5f2b"}),
    # ObservabilityConfig
    Case("traces", "detailed-traces-endpoint", LLAMA, {"collect_detailed_traces": ["worker"]}),
    Case("hidden-metrics-bogus", "show-hidden-metrics-version", LLAMA, {"show_hidden_metrics_for_version": "bogus"}),
    Case("hidden-metrics", None, LLAMA, {"show_hidden_metrics_for_version": "0.26"}),
    # StructuredOutputsConfig
    Case(
        "whitespace-auto",
        "structured-outputs-backend",
        LLAMA,
        {"structured_outputs_config": {"disable_any_whitespace": True}},
    ),
    Case(
        "additional-xgrammar",
        "structured-outputs-backend",
        LLAMA,
        {"structured_outputs_config": {"backend": "xgrammar", "disable_additional_properties": True}},
    ),
    Case(
        "whitespace-guidance",
        None,
        LLAMA,
        {"structured_outputs_config": {"backend": "guidance", "disable_any_whitespace": True}},
    ),
    # MambaConfig.validate_ssu_algorithm, the KDA prefill platform check
    Case("ssu-triton", "mamba-ssu-algorithm-backend", NEMOTRON, {"mamba_ssu_algorithm": "auto"}),
    Case("kda-fused", "kda-prefill-backend-platform", KIMI, {"kda_prefill_backend": "fused"}, releases=">=0.30.0"),
    Case("kda-triton", None, KIMI, {"kda_prefill_backend": "triton"}, releases=">=0.30.0"),
    # VllmConfig.__post_init__
    Case(
        "spec-metrics",
        "spec-decode-metrics-speculative",
        LLAMA,
        {"per_request_spec_decode_metrics": "summary"},
        releases=">=0.29.0",
    ),
    Case("spec-metrics-none", None, LLAMA, {"per_request_spec_decode_metrics": "none"}, releases=">=0.29.0"),
    Case("replay-raw", "sampling-replay", LLAMA, {"return_sampling_mask": True}, releases=">=0.28.0"),
    Case(
        "replay-processed",
        None,
        LLAMA,
        {"return_sampling_mask": True, "logprobs_mode": "processed_logprobs"},
        releases=">=0.28.0",
    ),
    Case(
        "replay-v1",
        "sampling-replay",
        LLAMA,
        {"return_sampling_mask": True, "logprobs_mode": "processed_logprobs"},
        {"VLLM_USE_V2_MODEL_RUNNER": "0"},
        releases=">=0.28.0",
    ),
    Case("sharded-tp1", "batch-sharded-sampling", LLAMA, {"enable_batch_sharded_sampling": True}, releases=">=0.29.0"),
    Case(
        "sharded-logprobs",
        "batch-sharded-sampling",
        LLAMA,
        {"enable_batch_sharded_sampling": True, "tensor_parallel_size": 2, "max_logprobs": -1},
        releases=">=0.29.0",
    ),
    Case(
        "sharded-tp2",
        None,
        LLAMA,
        {"enable_batch_sharded_sampling": True, "tensor_parallel_size": 2},
        releases=">=0.29.0",
    ),
    Case("aux-dense", since("0.31.0", "aux-output-compatibility"), LLAMA, {"enable_return_routed_experts": True}),
    Case(
        "routed-experts-kv-connector",
        "aux-output-compatibility",
        LLAMA,
        {
            "enable_return_routed_experts": True,
            "kv_transfer_config": {"kv_connector": "ExampleConnector", "kv_role": "kv_both"},
        },
        releases="<0.31.0",
    ),
    Case(
        "aux-moe",
        None,
        KIMI,
        {"enable_return_routed_experts": True, "enable_prefix_caching": True},
        releases=">=0.31.0",
    ),
    Case("engram-llama", "engram-model", LLAMA, {"engram_config": {}}, releases=">=0.30.0"),
    # ProfilerConfig, ECTransferConfig (while the parser reads them)
    Case("capture-no-torch", "profiler-config", LLAMA, {"profiler_config": {"capture_torch_profiler": True}}),
    Case("capture-torch", None, LLAMA, {"profiler_config": TORCH}),
    Case("torch-no-dir", "profiler-config", LLAMA, {"profiler_config": {"profiler": "torch"}}),
    Case(
        "proton-hook-no-proton",
        "profiler-config",
        LLAMA,
        {"profiler_config": {"proton_hook": "triton"}},
        releases=">=0.28.0",
    ),
    # (profiler = "proton" itself: the CPU oracle refuses "The Proton profiler currently supports NVIDIA CUDA
    # only"; tests/rules/test_configs.py covers the accepted case)
    Case("ec-no-role", "ec-role-missing", LLAMA, {"ec_transfer_config": {"ec_connector": "ECExampleConnector"}}),
    Case(
        "ec-producer-text",
        "ec-producer-multimodal",
        LLAMA,
        {"ec_transfer_config": {"ec_connector": "ECExampleConnector", "ec_role": "ec_producer"}},
        releases=">=0.29.0",
    ),
    Case(
        "ec-role",
        None,
        LLAMA,
        {"ec_transfer_config": {"ec_connector": "ECExampleConnector", "ec_role": "ec_consumer"}},
    ),
]


def _verdicts(case: Case, version: str, oracle: OracleWorker, root: Path) -> tuple[str | None, str | None, str]:
    """(profilekit's verdict, vLLM's verdict, vLLM's message): the argument parser's pydantic details count."""
    (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
    (root / "profiles").mkdir()
    (root / "profiles" / "s.toml").write_text(_layer(case), encoding="utf-8")
    config = _config(case)
    (root / "models" / "dummy").mkdir(parents=True)
    (root / "models" / "dummy" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    catalogue = load_catalogue(version)
    stack = compose(LayerIndex(root, catalogue), "s")
    predicted = vllm_verdict(stack, "serve", version=version, catalogue=catalogue, root=root)
    answer = oracle.validate(render_argv(stack.roles["serve"].serve, catalogue), env=dict(case.env), config_json=config)
    assert not answer.get("undecidable"), answer
    message = "\n".join(str(answer.get(k, "")) for k in ("error", "stderr", "raw_error"))
    return (None if predicted.accepted else predicted.rule), vllm_rule(answer), message[-2000:]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message


def test_every_new_rule_has_a_triggering_and_an_accepted_case() -> None:
    from profilekit.rules import RULES

    triggered = {c.expected(v) for c in CASES for v in ("0.27.0", "0.29.0", "0.31.0", "0.33.0")}
    new = {
        "auto-tool-choice-parser",
        "log-outputs-requests",
        "sse-keep-alive-interval",
        "per-request-metrics-log-stats",
        "grpc-port",
        "reasoning-effort-map",
        "data-parallel-multi-port-lb",
        "device-ids-duplicates",
        "device-ids-mixed",
        "detailed-traces-endpoint",
        "show-hidden-metrics-version",
        "structured-outputs-backend",
        "mamba-ssu-algorithm-backend",
        "kda-prefill-backend-platform",
        "spec-decode-metrics-speculative",
        "sampling-replay",
        "batch-sharded-sampling",
        "aux-output-compatibility",
        "profiler-config",
        "ec-role-missing",
        "engram-model",
        "ec-producer-multimodal",
    }
    assert new <= set(RULES)
    assert triggered == {*new, None}
