"""The config-family validators give vLLM's verdict (rules/subconfigs.py, the LoRA, profiler output-format and
histogram-bucket checks): a triggering and an accepted case per rule, in every release where it applies, and a
case per release where it does not. profilekit's `vllm_verdict` must equal the oracle's verdict (vLLM's message
mapped by tools/verdict_corpus.py `MESSAGE_RULES`), and both must equal what the case expects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable, verdicts
from tests.oracle.test_crossfield import LLAMA, Case
from tests.oracle.test_frontend_verdicts import since

PROTON = {"profiler": "proton", "proton_profiler_dir": "/tmp/pk-proton"}
# no accepted proton case: on the oracle's CPU host vLLM then stops on "The Proton profiler currently supports NVIDIA
# CUDA only" (a platform check); tests/rules/test_configs.py has the accepted cases

CASES = [
    Case(
        "per-kind-bogus", "attention-config", LLAMA, {"attention_config": {"backend_per_kind": {"bogus": "FLASH_ATTN"}}}
    ),
    Case("per-kind-ok", None, LLAMA, {"attention_config": {"backend_per_kind": {"sliding_window": "FLASH_ATTN"}}}),
    Case(
        "minimax-cp-nvfp4",
        "attention-config",
        LLAMA,
        {"attention_config": {"minimax_m3_indexer_cp": True, "indexer_kv_dtype": "nvfp4"}},
        releases=">=0.33.0",
    ),
    Case(
        "minimax-cp-fp8",
        None,
        LLAMA,
        {"attention_config": {"minimax_m3_indexer_cp": True, "indexer_kv_dtype": "fp8"}},
        releases=">=0.33.0",
    ),
    Case(
        "fp4-indexer-fp8",
        "attention-config",
        LLAMA,
        {"attention_config": {"use_fp4_indexer_cache": True, "indexer_kv_dtype": "fp8"}},
        releases=">=0.28.0,<0.30.0",
    ),
    Case(
        "fp4-indexer-mxfp4",
        None,
        LLAMA,
        {"attention_config": {"use_fp4_indexer_cache": True, "indexer_kv_dtype": "mxfp4"}},
        releases=">=0.28.0,<0.30.0",
    ),
    Case(
        "manager-no-cls",
        "ec-manager-config",
        LLAMA,
        {"ec_manager_config": {"manager_config": {"size": 1}}},
        releases=">=0.28.0",
    ),
    Case("manager-empty", None, LLAMA, {"ec_manager_config": {"manager_config": {}}}, releases=">=0.28.0"),
    Case("watermark-wide", "watermark-key", LLAMA, {"watermark_config": {"key": 2**64}}, releases=">=0.30.0"),
    Case("watermark-ok", None, LLAMA, {"watermark_config": {"key": 2**64 - 1}}, releases=">=0.30.0"),
    Case("cpu-loras-low", "lora-max-cpu-loras", LLAMA, {"enable_lora": True, "max_loras": 4, "max_cpu_loras": 2}),
    Case("cpu-loras-equal", None, LLAMA, {"enable_lora": True, "max_loras": 4, "max_cpu_loras": 4}),
    Case("cpu-loras-no-lora", None, LLAMA, {"max_loras": 4, "max_cpu_loras": 2}),
    Case(
        "buckets-family",
        "histogram-buckets",
        LLAMA,
        {"custom_histogram_buckets": {"bogus": [1.0]}},
        releases=">=0.32.0",
    ),
    Case(
        "buckets-order",
        "histogram-buckets",
        LLAMA,
        {"custom_histogram_buckets": {"request_latency": [2, 1]}},
        releases=">=0.32.0",
    ),
    Case(
        "buckets-bool",
        "histogram-buckets",
        LLAMA,
        {"custom_histogram_buckets": {"request_latency": [True]}},
        releases=">=0.32.0",
    ),
    Case(
        "buckets-ok",
        None,
        LLAMA,
        {"custom_histogram_buckets": {"request_latency": [0.5, 1, 2.5]}},
        releases=">=0.32.0",
    ),
    Case(
        "proton-chrome-tree",
        since("0.28.0", "profiler-config"),
        LLAMA,
        {"profiler_config": {**PROTON, "proton_output_format": "chrome_trace"}},
        releases=">=0.28.0",
    ),
    Case(
        "proton-hatchet-trace",
        "profiler-config",
        LLAMA,
        {"profiler_config": {**PROTON, "proton_output_format": "hatchet", "proton_data": "trace"}},
        releases=">=0.28.0",
    ),
    Case(
        "proton-graph-flushing",
        "profiler-config",
        LLAMA,
        {"profiler_config": {**PROTON, "proton_graph_attribution": True, "proton_mode": "periodic_flushing"}},
        releases=">=0.30.0",
    ),
    Case(
        "proton-graph-trace",
        "profiler-config",
        LLAMA,
        {"profiler_config": {**PROTON, "proton_graph_attribution": True, "proton_data": "trace"}},
        releases=">=0.30.0",
    ),
    Case("pooler-normalize", "unknown-option", LLAMA, {"pooler_config": {"normalize": True}}),
    Case("quant-deprecated", "quantization-deprecated", LLAMA, {"quantization": "fbgemm_fp8"}),
    Case(
        "pp-uni",
        "pipeline-parallel-executor",
        LLAMA,
        {"pipeline_parallel_size": 2, "distributed_executor_backend": "uni"},
    ),
    Case(
        "lora-mega-moe",
        "lora-moe-backend",
        LLAMA,
        {"enable_lora": True, "moe_backend": "deep_gemm_mega_moe"},
        releases=">=0.33.0",
    ),
    Case("lora-triton-moe", None, LLAMA, {"enable_lora": True, "moe_backend": "triton"}, releases=">=0.33.0"),
    Case("spec-unknown", "quantization-spec", LLAMA, {"quantization_config": {"linear": "bogus"}}),
    Case("spec-no-linear", "quantization-spec", LLAMA, {"quantization_config": {"linear": "nvfp4_per_token"}}),
    Case("spec-weight-int", "quantization-spec", LLAMA, {"quantization_config": {"moe": {"weight": 5}}}),
    Case("spec-named", None, LLAMA, {"quantization_config": {"linear": "fp8_per_tensor", "moe": {"weight": "mxfp8"}}}),
    Case("targets-string", "quantization-spec", LLAMA, {"quantization_config": {"targets": "x"}}, releases=">=0.30.0"),
    Case("pp-uni-single", None, LLAMA, {"pipeline_parallel_size": 1, "distributed_executor_backend": "uni"}),
    Case(
        "quant-deprecated-allowed",
        None,
        LLAMA,
        {"quantization": "fp_quant", "allow_deprecated_quantization": True},
    ),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = verdicts(
        oracle_pool.get(version), version, tmp_path, arch=case.arch, serve=case.serve, env=case.env or None
    )
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message


def test_every_new_rule_has_a_triggering_and_an_accepted_case() -> None:
    triggered = {c.expected(v) for c in CASES for v in ("0.28.0", "0.30.0", "0.33.0")}
    new = {
        "quantization-deprecated",
        "attention-config",
        "ec-manager-config",
        "watermark-key",
        "lora-max-cpu-loras",
        "histogram-buckets",
    }
    assert new | {"profiler-config", None} <= triggered
