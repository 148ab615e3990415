"""The last start-up checks against the model's config.json give vLLM's verdict: a triggering and a non-triggering
case per rule and release (rules/checkpoint.py).

The cases run as tests/oracle/test_crossfield.py's do: one layer whose `[model] config` is the dummy config.json
(with the case's changes) that the oracle's model folder holds too; profilekit's verdict must equal vLLM's and the
verdict the case expects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.models import config_json
from tests.oracle.test_crossfield import LLAMA, Case, _verdicts

MIMO = {"architectures": ["MiMoForCausalLM"], "num_nextn_predict_layers": 1}  # MTP from the target's checkpoint
MTP = {"method": "mtp", "num_speculative_tokens": 1}
CHUNKED = {"attention_chunk_size": 128}  # chunked local attention
HMA_ON = {"disable_hybrid_kv_cache_manager": False}
CHUNKS_OFF = {"VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": "0"}
# Nemotron Parse 3.5: hf_config_override makes a one-step ParseAuxMTPModel draft of it
PARSE = {
    "architectures": ["RadioMBartPrefixForCausalLM"],
    "model_type": "vision-encoder-decoder",
    "encoder": {"model_type": "radio"},
    "decoder": {
        "model_type": "mbart",
        "causal_vision_prefix": True,
        "d_model": 64,
        "decoder_layers": 2,
        "decoder_attention_heads": 4,
        "vocab_size": 256,
        "max_position_embeddings": 512,
    },
}
PALIGEMMA = "PaliGemmaForConditionalGeneration"
VL_MTP = {"text_config": {**config_json(PALIGEMMA)["text_config"], "num_mtp_layers": 1}}
HC_SP = {"enable_hc_sp": True, "tensor_parallel_size": 2}
HC_SP_CAPABLE = {"architectures": ["Qwen4ExpForCausalLM"]}  # the registry marks it supports_hc_sp
QWEN25_VL = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl", "vision_config": {}}
VIDCOM2 = {"video_pruning_rate": 0.5, "video_pruning_method": "vidcom2"}
FP8 = {"quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}

CASES = [
    # ModelConfig._verify_quantization: the checkpoint's method against --quantization
    Case("quant-mismatch", "quantization-checkpoint-mismatch", LLAMA, {"quantization": "awq"}, config=FP8),
    Case(
        "quant-no-method",
        "quantization-checkpoint-mismatch",
        LLAMA,
        {"quantization": "fp8"},
        config={"quantization_config": {"bits": 4}},
    ),
    Case(
        "quant-upper-case-method",
        None,
        LLAMA,
        {"quantization": "fp8"},
        config={"quantization_config": {"quant_method": "FP8", "activation_scheme": "dynamic"}},
    ),
    Case("quant-agrees", None, LLAMA, {"quantization": "fp8"}, config=FP8),
    Case("quant-from-checkpoint", None, LLAMA, {}, config=FP8),
    # VllmConfig._get_quantization_config: the model dtype against the method's activation dtypes
    Case("fp8-float32-online", "quantization-dtype-unsupported", LLAMA, {"quantization": "fp8", "dtype": "float32"}),
    Case("fp8-float32-checkpoint", "quantization-dtype-unsupported", LLAMA, {"dtype": "float32"}, config=FP8),
    Case("fp8-bfloat16", None, LLAMA, {"quantization": "fp8", "dtype": "bfloat16"}),
    # SpeculativeConfig._maybe_override_draft_max_model_len: the draft's length against the target's
    Case(
        "spec-len-above-target",
        "speculative-max-model-len",
        LLAMA,
        {"max_model_len": 256, "speculative_config": {**MTP, "max_model_len": 384}},
        config=MIMO,
    ),
    Case(
        "spec-len-target",
        None,
        LLAMA,
        {"max_model_len": 256, "speculative_config": {**MTP, "max_model_len": 256}},
        config=MIMO,
    ),
    Case("spec-len-within-positions", None, LLAMA, {"speculative_config": {**MTP, "max_model_len": 512}}, config=MIMO),
    # ModelConfig.__post_init__: the video pruning method against the methods the multimodal class lists (a
    # text-only model builds no multimodal config)
    Case("video-pruning-text-only", None, LLAMA, VIDCOM2),
    # SpeculativeConfig._verify_args (0.33.0): the MTP draft's head_dtype, read for draft_lm_head_quantization
    Case(
        "head-dtype-unknown",
        "speculative-head-dtype",
        LLAMA,
        {"speculative_config": {**MTP, "draft_lm_head_quantization": "fp8"}},
        config={**MIMO, "head_dtype": "fp4"},
        releases=">=0.33.0",
    ),
    Case(
        "head-dtype-model",
        None,
        LLAMA,
        {"speculative_config": {**MTP, "draft_lm_head_quantization": "fp8"}},
        config={**MIMO, "head_dtype": "model"},
        releases=">=0.33.0",
    ),
    # SpeculativeConfig.__post_init__ (0.27.x): a DSpark draft from the target, fewer tokens than its block
    Case(
        "dspark-below-block",
        "dspark-block-size",
        LLAMA,
        {"speculative_config": {"method": "dspark", "num_speculative_tokens": 2}},
        config={"dspark_block_size": 4},
        releases="<0.28.0",
    ),
    Case(
        "dspark-block",
        None,
        LLAMA,
        {"speculative_config": {"method": "dspark", "num_speculative_tokens": 4}},
        config={"dspark_block_size": 4},
        releases="<0.28.0",
    ),
    # SpeculativeConfig.__post_init__ (0.33.0): Parse 3.5's MTP draft has one step
    Case(
        "parse-mtp-two",
        "parse-mtp-one-step",
        LLAMA,
        {"speculative_config": {**MTP, "num_speculative_tokens": 2}},
        config=PARSE,
        releases=">=0.33.0",
    ),
    Case("parse-mtp-one", None, LLAMA, {"speculative_config": MTP}, config=PARSE, releases=">=0.33.0"),
    # VllmConfig.__post_init__: the hybrid KV cache manager forced on where vLLM turns it off
    Case("hma-chunked-env-off", "hybrid-kv-cache-manager-unsupported", LLAMA, HMA_ON, env=CHUNKS_OFF, config=CHUNKED),
    Case(
        "hma-chunked-mtp",
        "hybrid-kv-cache-manager-unsupported",
        LLAMA,
        {**HMA_ON, "speculative_config": MTP},
        config={**MIMO, **CHUNKED},
    ),
    Case("hma-chunked", None, LLAMA, HMA_ON, config=CHUNKED),
    Case("hma-chunked-auto", None, LLAMA, {}, env=CHUNKS_OFF, config=CHUNKED),
    # ModelConfig.verify_with_parallel_config: --enable-hc-sp is checked only with tensor parallelism
    Case("hc-sp-without-tp", None, LLAMA, {"enable_hc_sp": True}, releases=">=0.32.0"),
]

# Named limits: cases whose verdict the CPU oracle gives differently from a GPU host, each with vLLM's answer
# (the rule its message maps to, or the message no rule claims).
INSPECTION = "unmapped: Model architectures ['{}'] failed to be inspected. Please check the logs for more details."
LIMITS: list[tuple[Case, str]] = [
    # --enable-hc-sp on a platform that is not CUDA or ROCm is refused before the model checks, which profilekit
    # judges as on a CUDA host
    (
        Case("hc-sp-llama", "hc-sp-unsupported", LLAMA, HC_SP, releases=">=0.32.0"),
        "unmapped: --enable-hc-sp currently requires CUDA or ROCm",
    ),
    # the hc-sp capable Qwen4-Exp class and every class that lists video pruning methods import torchvision,
    # which the oracle does not install: its inspection subprocess cannot load them (the registry facts come from
    # tools/gen_registry.py, which stands such libraries in)
    (
        Case(
            "hc-sp-pp",
            "hc-sp-pipeline-parallel",
            LLAMA,
            {**HC_SP, "pipeline_parallel_size": 2},
            config=HC_SP_CAPABLE,
            releases=">=0.32.0",
        ),
        INSPECTION.format("Qwen4ExpForCausalLM"),
    ),
    (
        Case("hc-sp-capable", None, LLAMA, HC_SP, config=HC_SP_CAPABLE, releases=">=0.32.0"),
        INSPECTION.format("Qwen4ExpForCausalLM"),
    ),
    (
        Case("video-pruning-vidcom2", "video-pruning-method-unsupported", LLAMA, VIDCOM2, config=QWEN25_VL),
        INSPECTION.format("Qwen2_5_VLForConditionalGeneration"),
    ),
    (
        Case("video-pruning-evs", None, LLAMA, {"video_pruning_rate": 0.5}, config=QWEN25_VL),
        INSPECTION.format("Qwen2_5_VLForConditionalGeneration"),
    ),
    # the Transformers modeling backend of a multimodal model loads its image processor from the model folder,
    # which holds only a config.json: refused before the speculative config (a served model has its processor files)
    (
        Case(
            "transformers-mtp-vl",
            "transformers-mtp-multimodal",
            PALIGEMMA,
            {"model_impl": "transformers", "speculative_config": MTP},
            config=VL_MTP,
            releases=">=0.33.0",
        ),
        "unmapped: Can't load image processor for '/tmp/profilekit-oracle-model-",
    ),
    # not a CPU limit: a draft built from the target's config.json (MTP) longer than the model's positions fails
    # the draft's own _get_and_verify_max_len first, the same refusal under vLLM's positions message
    (
        Case(
            "spec-len-above-positions",
            "speculative-max-model-len",
            LLAMA,
            {"speculative_config": {**MTP, "max_model_len": 1024}},
            config=MIMO,
        ),
        "max-model-len-positions",
    ),
]
LIMITED = [case for case, _ in LIMITS]
ANSWERS = {case.id: said for case, said in LIMITS}


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("version", "case"), applicable(LIMITED), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(LIMITED)]
)
def test_the_named_limits(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    assert predicted == case.expected(version), message
    assert actual is not None and actual.startswith(ANSWERS[case.id]), message  # a model folder's path varies


def test_every_rule_has_a_triggering_and_an_accepted_case() -> None:
    from profilekit.rules import RULES

    ours = {
        r.id
        for r in RULES.values()
        if r.check.__module__.endswith((".checkpoint", ".speclen")) or r.id == "hybrid-kv-cache-manager-unsupported"
    }
    triggered = {c.expected(v) for c in CASES for v in ("0.27.0", "0.33.0")}
    assert triggered == {*ours, None} - {"transformers-mtp-multimodal"}  # a named limit only
    limited = {r.id for r in RULES.values() if r.id.startswith(("hc-sp-", "video-pruning-", "transformers-mtp-"))}
    assert {c.expected("0.33.0") for c in LIMITED} == {*limited, "speculative-max-model-len", None}
