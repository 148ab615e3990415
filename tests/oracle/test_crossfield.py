"""The cross-field rules give vLLM's verdict: a triggering and a non-triggering case per rule and release.

Each case is one layer with `[model] config` pointing at the dummy config.json the oracle's model folder
holds (tests/oracle/models.py, with the case's overrides), so profilekit and vLLM judge the same model.
profilekit's verdict (`vllm_verdict`: accept, or the rule vLLM reports first) must equal the oracle's
`create_engine_config()` verdict (vLLM's message mapped by tools/verdict_corpus.py `MESSAGE_RULES`), and
both must equal the verdict the case expects, so a case cannot agree vacuously.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.models import config_json
from tests.oracle.oracle_client import OracleWorker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from verdict_corpus import rule_for_message

from profilekit.compose.index import LayerIndex
from profilekit.compose.merge import compose
from profilekit.rules import vllm_verdict
from profilekit.vllm.argv import render_argv
from profilekit.vllm.catalogue import load_catalogue

LLAMA = "LlamaForCausalLM"
NEMOTRON = "NemotronHForCausalLM"
KIMI = "KimiLinearForCausalLM"
ZAMBA2 = "Zamba2ForCausalLM"
QWEN3 = "Qwen3ForCausalLM"

Expect = str | None | Callable[[str], str | None]


def _before(version: str, release: str) -> bool:
    return tuple(map(int, version.split("."))) < tuple(map(int, release.split(".")))


@dataclass(frozen=True)
class Case:
    id: str
    expect: Expect  # the rule vLLM reports, None for accept, or a function of the release
    arch: str
    serve: dict[str, Any]
    env: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)  # changes to the dummy config.json; None deletes a key
    releases: str = ""  # a PEP 440 specifier; empty: every release

    def expected(self, version: str) -> str | None:
        return self.expect(version) if callable(self.expect) else self.expect


NGRAM = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2, "prompt_lookup_max": 4}
OTLP = {"otlp_traces_endpoint": "http://127.0.0.1:4317"}
YARN_600 = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256}}

CASES = [
    # ModelConfig.verify_with_parallel_config
    Case("heads-tp3", "attention-heads-tensor-parallel", LLAMA, {"tensor_parallel_size": 3}),
    Case("heads-tp4", None, LLAMA, {"tensor_parallel_size": 4}),
    Case("heads-nemotron-tp3", "attention-heads-tensor-parallel", NEMOTRON, {"tensor_parallel_size": 3}),
    Case(
        "dcp-kv-heads-equal",
        "context-parallel-kv-heads",
        LLAMA,
        {"tensor_parallel_size": 2, "decode_context_parallel_size": 2},
    ),
    Case(
        "dcp-kv-heads-max",
        "context-parallel-kv-heads",
        LLAMA,
        {"tensor_parallel_size": 4, "decode_context_parallel_size": 4},
    ),
    Case("dcp-kv-heads-ok", None, LLAMA, {"tensor_parallel_size": 4, "decode_context_parallel_size": 2}),
    Case("dcp-mla", None, KIMI, {"tensor_parallel_size": 2, "decode_context_parallel_size": 2}),
    Case("pp-zamba2", "pipeline-parallel-unsupported", ZAMBA2, {"pipeline_parallel_size": 2}),
    Case("pp-llama", None, LLAMA, {"pipeline_parallel_size": 2}),
    Case("pp-more-stages-than-layers", None, LLAMA, {"pipeline_parallel_size": 3}),  # only a warning
    # ParallelConfig._validate_parallel_config
    Case("dcp-divides-tp", "context-parallel-size", LLAMA, {"decode_context_parallel_size": 3}),
    # (EPLB, microbatching, NUMA values, offloading: tests/oracle/test_parallel_verdicts.py)
    Case(
        "pcp-with-dp",
        lambda v: None if not _before(v, "0.31.0") else "context-parallel-size",
        LLAMA,
        {"prefill_context_parallel_size": 2, "data_parallel_size": 2},
        releases=">=0.28.0",  # 0.27.x: Model Runner V2 refuses prefill context parallelism first
    ),
    Case("numa-without-bind", "numa-bind", LLAMA, {"numa_bind_nodes": [0]}),
    Case("numa-with-bind", None, LLAMA, {"numa_bind": True, "numa_bind_nodes": [0]}),
    Case("nsight-without-ray", "ray-nsight", LLAMA, {"ray_workers_use_nsight": True}),
    Case("elastic-without-eplb", "elastic-expert-parallel", KIMI, {"enable_elastic_ep": True}),
    Case(
        "elastic-with-pp",
        "elastic-expert-parallel",
        KIMI,
        {"enable_elastic_ep": True, "enable_eplb": True, "pipeline_parallel_size": 2},
    ),
    Case("ep-dense-model", "expert-parallel-dense-model", LLAMA, {"enable_expert_parallel": True}),
    Case("ep-moe-model", None, KIMI, {"enable_expert_parallel": True}),
    # the data-parallel launch block, ParallelConfig.__post_init__ and its validators
    Case(
        "dp-two-lb-modes",
        "data-parallel-launch",
        LLAMA,
        {"data_parallel_size": 2, "data_parallel_hybrid_lb": True, "data_parallel_external_lb": True},
    ),
    Case("dp-external-without-rank", "data-parallel-launch", LLAMA, {"data_parallel_external_lb": True}),
    Case("dp-nnodes-ray", "data-parallel-launch", LLAMA, {"nnodes": 2, "data_parallel_backend": "ray"}),
    Case(
        "dp-hybrid-without-local",
        "data-parallel-launch",
        LLAMA,
        {"data_parallel_size": 2, "data_parallel_hybrid_lb": True},
    ),
    Case("dp-nnodes-world", "data-parallel-launch", KIMI, {"nnodes": 2, "data_parallel_size": 3}),
    Case("dp-node-rank", "data-parallel-launch", KIMI, {"nnodes": 2, "node_rank": 2, "data_parallel_size": 2}),
    Case(
        "dp-external-nodes",
        lambda v: None if _before(v, "0.31.0") else "data-parallel-launch",
        KIMI,
        {"nnodes": 2, "data_parallel_size": 4, "data_parallel_external_lb": True},
    ),
    Case("dp-fault-tolerance", "data-parallel-launch", LLAMA, {"enable_fault_tolerance": True}),
    Case("dp-local-above-size", "data-parallel-size-local", LLAMA, {"data_parallel_size_local": 2}),
    Case("dp-local-ok", None, LLAMA, {"data_parallel_size": 2, "data_parallel_size_local": 2}),
    Case("dp-rank-without-dp", "data-parallel-external-lb", LLAMA, {"data_parallel_rank": 0}),
    Case("dp-dense-external", "data-parallel-dense-model", LLAMA, {"data_parallel_size": 2, "data_parallel_rank": 1}),
    Case("dp-moe-external", None, KIMI, {"data_parallel_size": 2, "data_parallel_rank": 1}),
    Case(
        "dp-start-rank-out-of-range",
        "data-parallel-rank",
        LLAMA,
        {"data_parallel_size": 2, "data_parallel_size_local": 1, "data_parallel_start_rank": 5},
    ),
    # ModelConfig: max_model_len against the positions
    Case("len-above-positions", "max-model-len-positions", LLAMA, {"max_model_len": 1024}),
    Case("len-at-positions", None, LLAMA, {"max_model_len": 512}),
    Case("len-allowed-long", None, LLAMA, {"max_model_len": 1024}, env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}),
    Case(
        "len-rope-linear",
        None,
        LLAMA,
        {"max_model_len": 2048},
        config={"rope_scaling": {"rope_type": "linear", "factor": 4.0}},
    ),
    Case("len-model-max-length", None, LLAMA, {"max_model_len": 1024}, config={"model_max_length": 2048}),
    Case(
        "len-smallest-key",
        "max-model-len-positions",
        LLAMA,
        {"max_model_len": 600},
        config={"max_position_embeddings": None, "n_positions": 700, "max_seq_len": 550},
    ),
    Case(
        "len-yarn",
        lambda v: None if _before(v, "0.30.0") else "max-model-len-positions",
        LLAMA,
        {"max_model_len": 600},
        config=YARN_600,
    ),
    # VllmConfig.validate_mamba_block_size
    Case(
        "mamba-block-no-prefix",
        "mamba-block-size-prefix-caching",
        NEMOTRON,
        {"mamba_block_size": 256, "enable_prefix_caching": False},
    ),
    Case(
        "mamba-block-default-prefix",
        lambda v: "mamba-block-size-prefix-caching" if _before(v, "0.28.0") else None,
        NEMOTRON,
        {"mamba_block_size": 256},
    ),
    Case("mamba-block-equals-len", None, LLAMA, {"mamba_block_size": 512, "enable_prefix_caching": False}),
    # list items, keys of JSON options and their config classes' validators (rules/options.py, rules/quantpool.py)
    Case("traces-pair", "invalid-value", LLAMA, {"collect_detailed_traces": ["all", "model,worker"], **OTLP}),
    Case("traces-none-item", "invalid-value", LLAMA, {"collect_detailed_traces": ["None", "all"], **OTLP}),
    Case("traces-bogus", "invalid-value", LLAMA, {"enable_log_outputs": True, "collect_detailed_traces": ["bogus"]}),
    Case("traces-modules", None, LLAMA, {"collect_detailed_traces": ["model", "worker"], **OTLP}),
    Case(
        "pooler-both-types",
        "pooler-config",
        LLAMA,
        {"pooler_config": {"pooling_type": "MEAN", "seq_pooling_type": "CLS"}},
    ),
    Case("pooler-sigma-zero", "pooler-config", LLAMA, {"pooler_config": {"logit_sigma": 0.0}}),
    Case("pooler-fine", None, LLAMA, {"pooler_config": {"seq_pooling_type": "CLS", "logit_sigma": 0.5}}),
    Case(
        "quant-targets-and-moe",
        "quantization-config",
        LLAMA,
        {"quantization_config": {"targets": {"re:.*proj": "fp8_per_tensor"}, "moe": {}}},
        releases=">=0.30.0",
    ),
    Case(
        "quant-targets-shorthand",
        "invalid-value",
        LLAMA,
        {"quantization_config": {"targets": {"model.layers.0": "fp4"}}},
        releases=">=0.30.0",
    ),
    Case(
        "quant-targets",
        None,
        LLAMA,
        {"quantization_config": {"targets": {"re:.*proj": "fp8_per_tensor"}}},
        releases=">=0.30.0",
    ),
    Case(
        "quant-checkpoint-method",
        lambda v: "quantization-config" if _before(v, "0.30.0") else None,
        LLAMA,
        {"quantization": "fp8", "quantization_config": {"linear": {}}},
    ),
    Case("quant-online-method", None, LLAMA, {"quantization": "fp8_per_tensor", "quantization_config": {"linear": {}}}),
    Case("retention-negative", "invalid-value", LLAMA, {"prefix_cache_retention_interval": -1}, releases=">=0.29.0"),
    Case("retention-zero", None, LLAMA, {"prefix_cache_retention_interval": 0}, releases=">=0.29.0"),
    Case(
        "kernel-per-quant-empty",
        "invalid-value",
        LLAMA,
        {"kernel_config": {"linear_backend_per_quant": {}}},
        releases=">=0.30.0",
    ),
    Case(
        "kernel-per-quant",
        None,
        LLAMA,
        {"kernel_config": {"linear_backend_per_quant": {"nvfp4_w4a16": "marlin"}}},
        releases=">=0.30.0",
    ),
    Case("attention-backend-bogus", "invalid-value", LLAMA, {"attention_config": {"backend": "bogus"}}),
    Case("attention-backend-auto", None, LLAMA, {"attention_config": {"backend": "auto"}}),
    # MambaModelConfig.verify_and_update_config: Mamba prefix caching needs chunked prefill
    Case(
        "mamba-prefix-no-chunked",
        lambda v: None if _before(v, "0.28.0") else "mamba-prefix-caching-chunked-prefill",
        NEMOTRON,
        {"enable_prefix_caching": True, "enable_chunked_prefill": False},
    ),
    Case(
        "mamba-prefix-no-chunked-kimi",
        "mamba-prefix-caching-chunked-prefill",
        KIMI,
        {"enable_prefix_caching": True, "enable_chunked_prefill": False},
    ),
    Case(
        "mamba-no-prefix-no-chunked", None, NEMOTRON, {"enable_prefix_caching": False, "enable_chunked_prefill": False}
    ),
    # SchedulerConfig.verify_max_model_len, after the defaults
    Case(
        "budget-below-len",
        "max-num-batched-tokens-model-len",
        LLAMA,
        {"max_num_batched_tokens": 100, "enable_chunked_prefill": False},
    ),
    Case("budget-chunked", None, LLAMA, {"max_num_batched_tokens": 100}),
    Case(
        "budget-below-seqs", "max-num-batched-tokens-seqs", LLAMA, {"max_num_seqs": 1000, "max_num_batched_tokens": 512}
    ),
    Case("budget-default-below-seqs", "max-num-batched-tokens-seqs", LLAMA, {"max_num_seqs": 4096}),
    Case("budget-default-fits-seqs", None, LLAMA, {"max_num_seqs": 2048}),
    Case(
        "budget-throughput-default",
        None,
        LLAMA,
        {"max_num_seqs": 4096, "performance_mode": "throughput"},
    ),
    Case("active-above-seqs", "max-num-active-seqs", LLAMA, {"max_num_active_seqs": 300}, releases=">=0.31.0"),
    Case("active-within-seqs", None, LLAMA, {"max_num_active_seqs": 200}, releases=">=0.31.0"),
    Case("long-prefill-above-len", "long-prefill-token-threshold", LLAMA, {"long_prefill_token_threshold": 1024}),
    Case("long-prefill-within-len", None, LLAMA, {"long_prefill_token_threshold": 256}),
    # VllmConfig._reject_mismatched_float_kv_cache (0.33.0)
    Case(
        "kv-float16-on-bfloat16",
        lambda v: None if _before(v, "0.33.0") else "kv-cache-dtype-model-dtype",
        LLAMA,
        {"kv_cache_dtype": "float16"},
    ),
    Case("kv-bfloat16-on-bfloat16", None, LLAMA, {"kv_cache_dtype": "bfloat16"}),
    Case(
        "kv-bfloat16-dtype-float32",
        lambda v: None if _before(v, "0.33.0") else "kv-cache-dtype-model-dtype",
        LLAMA,
        {"kv_cache_dtype": "bfloat16", "dtype": "float32"},
    ),
    Case(
        "kv-bfloat16-on-float32-checkpoint",
        None,
        LLAMA,
        {"kv_cache_dtype": "bfloat16"},
        config={"torch_dtype": "float32"},
    ),
    # SpeculativeConfig
    Case(
        "spec-count-without-model",
        "speculative-draft-model",
        LLAMA,
        {"speculative_config": {"num_speculative_tokens": 2}},
    ),
    Case("spec-ngram", None, LLAMA, {"speculative_config": NGRAM}),
    Case(
        "spec-lookup-bounds",
        "speculative-prompt-lookup",
        LLAMA,
        {"speculative_config": {**NGRAM, "prompt_lookup_min": 5, "prompt_lookup_max": 3}},
    ),
    Case("spec-ngram-without-count", "speculative-num-tokens", LLAMA, {"speculative_config": {"method": "ngram"}}),
    Case("spec-eagle-without-count", "speculative-num-tokens", LLAMA, {"speculative_config": {"method": "eagle"}}),
    Case("spec-lookup-only", "speculative-num-tokens", LLAMA, {"speculative_config": {"prompt_lookup_max": 3}}),
    # rules/runner.py: 0.27.x-0.28.0 force Model Runner V2 for prefill context parallelism
    Case(
        "pcp-forces-v2",
        lambda v: "model-runner-v2-unsupported" if _before(v, "0.29.0") else None,
        LLAMA,
        {"prefill_context_parallel_size": 2},
    ),
    Case("pcp-mla-on-v2", None, KIMI, {"prefill_context_parallel_size": 2}),
    Case(
        "pcp-mla-prompt-embeds",
        lambda v: "model-runner-v2-unsupported" if _before(v, "0.29.0") else None,
        KIMI,
        {"prefill_context_parallel_size": 2, "enable_prompt_embeds": True},
    ),
    Case(
        "pcp-on-v1",
        "prefill-context-parallel-v1",
        QWEN3,
        {"prefill_context_parallel_size": 2},
        env={"VLLM_USE_V2_MODEL_RUNNER": "0"},
        releases="<0.29.0",
    ),
    # rules/archsupport.py
    Case(
        "transformers-nemotron",
        lambda v: "transformers-backend-incompatible" if _before(v, "0.30.0") else None,
        NEMOTRON,
        {"model_impl": "transformers"},
    ),
    Case(
        "transformers-kimi",
        "transformers-backend-incompatible",
        KIMI,
        {"model_impl": "transformers"},
        releases="<0.30.0",
    ),
    Case("transformers-llama", None, LLAMA, {"model_impl": "transformers"}),
    Case("lora-kimi", lambda v: "lora-unsupported" if v == "0.33.0" else None, KIMI, {"enable_lora": True}),
    Case("lora-nemotron", None, NEMOTRON, {"enable_lora": True}),
    Case(
        "moe-ep-backend-llama",
        "moe-backend-architecture",
        LLAMA,
        {"moe_backend": "flashinfer_moe_ep_mega_deep_gemm"},
        releases=">=0.29.0",
    ),
    Case(
        "moe-ep-backend-deepseek-v4",
        None,
        LLAMA,
        {"moe_backend": "flashinfer_moe_ep_mega_deep_gemm"},
        config={"architectures": ["DeepseekV4ForCausalLM"]},
        releases=">=0.29.0",
    ),
]


def _config(case: Case) -> dict[str, Any]:
    config = config_json(case.arch)
    for key, value in case.config.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return config


def _layer(case: Case) -> str:
    doc = tomlkit.document()
    doc["model"] = {"config": "models/dummy/config.json"}
    doc["serve"] = {"model": f"dummy/{case.arch}", **case.serve}
    if case.env:
        doc["env"] = case.env
    return tomlkit.dumps(doc)


def _verdicts(case: Case, version: str, oracle: OracleWorker, root: Path) -> tuple[str | None, str | None, str]:
    """(profilekit's verdict, vLLM's verdict, vLLM's message) for one case."""
    (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
    (root / "profiles").mkdir()
    (root / "profiles" / "s.toml").write_text(_layer(case), encoding="utf-8")
    config = _config(case)
    (root / "models" / "dummy").mkdir(parents=True)
    (root / "models" / "dummy" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    catalogue = load_catalogue(version)
    stack = compose(LayerIndex(root, catalogue), "s")
    predicted = vllm_verdict(stack, "serve", version=version, catalogue=catalogue, root=root)
    argv = render_argv(stack.roles["serve"].serve, catalogue)
    answer = oracle.validate(argv, env=dict(case.env), config_json=config)
    assert not answer.get("undecidable"), answer
    message = str(answer.get("error", ""))
    # a JSON option's validator fails inside argparse: the error names the option, stderr holds pydantic's details
    detail = "\n".join(str(answer.get(k, "")) for k in ("error", "stderr", "raw_error"))
    actual = None if answer.get("ok") else (rule_for_message(detail) or f"unmapped: {message[:300]}")
    return (None if predicted.accepted else predicted.rule), actual, message


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    oracle = oracle_pool.get(version)
    predicted, actual, message = _verdicts(case, version, oracle, tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message


def test_every_new_rule_has_a_triggering_and_an_accepted_case() -> None:
    from profilekit.rules import RULES

    triggered = {c.expected(v) for c in CASES for v in ("0.27.0", "0.31.0", "0.33.0")}
    cross = {
        "attention-heads-tensor-parallel",
        "context-parallel-kv-heads",
        "context-parallel-size",
        "pipeline-parallel-unsupported",
        "data-parallel-launch",
        "data-parallel-size-local",
        "data-parallel-external-lb",
        "data-parallel-dense-model",
        "data-parallel-rank",
        "max-model-len-positions",
        "mamba-block-size-prefix-caching",
        "max-num-batched-tokens-model-len",
        "max-num-batched-tokens-seqs",
        "max-num-active-seqs",
        "long-prefill-token-threshold",
        "kv-cache-dtype-model-dtype",
        "speculative-draft-model",
        "speculative-prompt-lookup",
        "speculative-num-tokens",
        "numa-bind",
        "ray-nsight",
        "elastic-expert-parallel",
        "expert-parallel-dense-model",
        "mamba-prefix-caching-chunked-prefill",
        "pooler-config",
        "quantization-config",
        "model-runner-v2-unsupported",
        "prefill-context-parallel-v1",
        "transformers-backend-incompatible",
        "lora-unsupported",
        "moe-backend-architecture",
    }
    assert cross <= set(RULES)
    assert triggered == {*cross, "invalid-value", None}
