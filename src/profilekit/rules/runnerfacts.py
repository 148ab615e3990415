"""Which model runner vLLM picks for a role, and the features of the role that Model Runner V2 lacks.

Sources: `vllm/config/vllm.py` `VllmConfig.use_v2_model_runner`, `_is_default_v2_model_runner_model` (0.27.x-0.28.0)
and `_get_v2_model_runner_unsupported_features` of each release, on a GPU host with Triton (DESIGN section 6).
Every feature listed here depends only on the configuration and the model's config.json; the ones that need
more (a draft model's config, logits-processor plugins installed on the host) are left out.
"""

from __future__ import annotations

from typing import Any

from profilekit.rules.models import ModelFacts
from profilekit.vllm.versions import at_least, version_key

# `DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`: 0.27.x-0.28.0 default to V2 only for these (or a dense model)
_DEFAULT_V2_027 = frozenset(
    {
        "DeepseekV2ForCausalLM",
        "GraniteMoeForCausalLM",
        "InklingForCausalLM",
        "InklingForConditionalGeneration",
        "KimiK3ForConditionalGeneration",
        "LongcatFlashNgramForCausalLM",
        "Qwen2MoeForCausalLM",
    }
)
_DEFAULT_V2_028 = _DEFAULT_V2_027 | {"DeepseekV4ForCausalLM"}

# `ModelArchConfigConvertorBase.is_deepseek_mla` (vllm/transformers_utils/model_arch_config_convertor.py)
_MLA_MODEL_TYPES = frozenset(
    {
        "axk1",
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_v4",
        "deepseek_mtp",
        "k3_dspark",
        "glm_moe_dsa",
        "glm4_moe_lite",
        "glm4_moe_lite_mtp",
        "kimi_k2",
        "kimi_linear",
        "longcat_flash",
        "longcat_flash_ngram",
        "pangu_ultra_moe",
        "pangu_ultra_moe_mtp",
        "bailing_hybrid",
        "bailing_hybrid_mtp",
    }
)
EXPERT_KEYS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")
_EXPERT_DEFAULTS = {"nemotron_h": 8}  # transformers' NemotronHConfig: n_routed_experts = 8

_V2_SPEC_METHODS_027 = frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark"})
_V2_SPEC_METHODS_029 = frozenset({*_V2_SPEC_METHODS_027, "extract_hidden_states"})
_V1_SPEC_METHODS = {
    "0.30.0": frozenset({"ngram", "ngram_gpu", "draft_model", "suffix", "medusa", "mlp_speculator", "custom_class"}),
    "0.31.0": frozenset({"ngram", "ngram_gpu", "suffix", "medusa", "mlp_speculator", "custom_class"}),
    "0.32.0": frozenset({"suffix", "medusa", "mlp_speculator", "custom_class"}),
    "0.33.0": frozenset({"suffix", "custom_class"}),
}


def _text_config(model: ModelFacts) -> dict[str, Any] | None:
    raw = model.config
    if raw is None:
        return None
    text = raw.get("text_config")
    return text if isinstance(text, dict) else raw


def uses_mla(model: ModelFacts, env: dict[str, Any]) -> bool | None:
    """`ModelConfig.use_mla`: a DeepSeek-style MLA model type with `kv_lora_rank`, unless VLLM_MLA_DISABLE."""
    text = _text_config(model)
    if text is None:
        return None
    disabled = env.get("VLLM_MLA_DISABLE")
    if isinstance(disabled, str) and disabled.strip().lower() in ("1", "true"):
        return False
    if text.get("model_type") not in _MLA_MODEL_TYPES:
        return False
    if "compress_ratios" in text:  # DeepSeek-V4
        return text.get("head_dim") is not None
    return text.get("kv_lora_rank") is not None


def _is_moe(model: ModelFacts) -> bool | None:
    text = _text_config(model)
    if text is None:
        return None
    if any(isinstance(text.get(k), int) and text[k] > 0 for k in EXPERT_KEYS):
        return True
    raw = model.config or {}
    return not any(k in text for k in EXPERT_KEYS) and _EXPERT_DEFAULTS.get(str(raw.get("model_type")), 0) > 0


def _int(value: Any, default: int) -> int | None:
    if value is None:
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _spec_features(version: str, spec_method: str) -> list[str]:
    if not at_least(version, "0.30.0"):
        allowed = _V2_SPEC_METHODS_029 if at_least(version, "0.29.0") else _V2_SPEC_METHODS_027
        if spec_method in ("ngram", "ngram_gpu"):
            return ["ngram/ngram_gpu speculative decoding"]
        return [] if spec_method in allowed else [f"speculative method '{spec_method}'"]
    table = max((k for k in _V1_SPEC_METHODS if at_least(version, k)), key=version_key)
    return [f"speculative method '{spec_method}'"] if spec_method in _V1_SPEC_METHODS[table] else []


def v2_unsupported_features(
    version: str,
    serve: dict[str, Any],
    *,
    spec_method: str | None,
    mode: str | None,
    mla: bool | None,
) -> list[str]:
    """The features of a role that Model Runner V2 lacks, worded and ordered as vLLM lists them."""
    early = not at_least(version, "0.29.0")
    features: list[str] = []
    pcp = _int(serve.get("prefill_context_parallel_size"), 1)
    if early and pcp is not None and pcp > 1 and mla is False:
        features.append("prefill context parallelism")
    pp = _int(serve.get("pipeline_parallel_size"), 1)
    if serve.get("distributed_executor_backend") == "external_launcher" and pp is not None and pp > 1:
        features.append("pipeline parallelism with external_launcher")
    if spec_method is not None:
        features += _spec_features(version, spec_method)
    if not at_least(version, "0.30.0") and serve.get("enable_dbo") is True:
        features.append("dual batch overlap")
    if not at_least(version, "0.33.0") and serve.get("enable_elastic_ep") is True:
        features.append("elastic expert parallelism")
    if version in ("0.27.0", "0.27.1") and serve.get("enable_return_routed_experts") is True:
        features.append("routed experts capture")
    if not at_least(version, "0.31.0") and serve.get("logits_processors"):
        features.append("custom logits processors")
    if early and serve.get("enable_prompt_embeds") is True:
        features.append("prompt embeds")
    if not at_least(version, "0.30.0") and serve.get("kv_sharing_fast_prefill") is True:
        features.append("KV sharing fast prefill")
    if version in ("0.27.0", "0.27.1") and isinstance(serve.get("ec_transfer_config"), dict):
        features.append("EC transfer")
    if version in ("0.30.0", "0.31.0") and mode == "all":
        features.append("mamba cache mode 'all'")
    return features


_STEP5 = ("Step5ForCausalLM", "Step5ForConditionalGeneration")


def v1_unsupported_features(
    version: str, serve: dict[str, Any], model: ModelFacts, *, spec: dict[str, Any] | None
) -> list[str] | None:
    """`_get_v1_model_runner_unsupported_features` (0.29.0+): the features of a role Model Runner V1 lacks, worded
    and ordered as vLLM lists them; None when the draft model's checkpoint decides part of the list (DFlash drafts,
    the Parse 3.5 MTP draft)."""
    method = spec.get("method") if spec else None
    if method == "dflash" or (method is not None and model.architecture == "RadioMBartPrefixForCausalLM"):
        return None
    features: list[str] = []
    pcp = _int(serve.get("prefill_context_parallel_size"), 1)
    if pcp is not None and pcp > 1:
        features.append("prefill context parallel")
    pp = _int(serve.get("pipeline_parallel_size"), 1)
    if at_least(version, "0.31.0") and pp is not None and pp > 1 and serve.get("async_scheduling") is True:
        features.append("pipeline parallelism with async scheduling")
    if spec:
        if method == "dspark":
            features.append("dspark speculative decoding")
        if spec.get("enable_adaptive_verification") is True:
            features.append("adaptive draft verification")
        if at_least(version, "0.33.0") and spec.get("draft_lm_head_quantization") is not None:
            features.append("draft lm_head quantization")
    if model.config is not None and model.config.get("canvas_length") is not None:
        features.append("diffusion models")
    if serve.get("enable_batch_sharded_sampling") is True:
        features.append("batch-sharded sampling")
    if at_least(version, "0.33.0") and model.architecture in _STEP5:
        features.append("Step5")
    return features


def forces_v2(version: str, serve: dict[str, Any], spec_method: str | None) -> str | None:
    """0.27.x-0.28.0: the option that makes vLLM pick Model Runner V2 whatever else the role asks for."""
    if at_least(version, "0.29.0"):
        return None
    pcp = _int(serve.get("prefill_context_parallel_size"), 1)
    if pcp is not None and pcp > 1:
        return f"prefill_context_parallel_size = {pcp}"
    if spec_method == "dspark":
        return 'speculative method "dspark"'
    return None


def _default_v2_model(version: str, serve: dict[str, Any], model: ModelFacts) -> bool | None:
    """`_is_default_v2_model_runner_model` (0.27.x-0.28.0, a CUDA host); None when the model is unknown."""
    if serve.get("runner") == "pooling" or serve.get("convert") in ("embed", "classify", "reward"):
        return False
    info = model.info
    if info is None:
        return None
    default = model.architecture in (_DEFAULT_V2_028 if at_least(version, "0.28.0") else _DEFAULT_V2_027)
    if info.hybrid and not default:
        return False
    if default:
        return True
    moe = _is_moe(model)
    return None if moe is None else not moe


def _int_env(value: Any) -> bool | None:
    if not isinstance(value, str):
        return None
    try:
        return bool(int(value))
    except ValueError:
        return None


def hisparse(version: str, serve: dict[str, Any]) -> str | None:
    """What asks for HiSparse (0.30.0+): `attention_config.hisparse_config`, or a HiSparseConnector that vLLM
    infers it from (`KVTransferConfig.has_connector`: the connector itself or a MultiConnector child)."""
    if not at_least(version, "0.30.0"):
        return None
    attention = serve.get("attention_config")
    if isinstance(attention, dict) and isinstance(attention.get("hisparse_config"), dict):
        return "attention_config.hisparse_config"
    ktc = serve.get("kv_transfer_config")
    if not isinstance(ktc, dict):
        return None
    name = ktc.get("kv_connector")
    extra = ktc.get("kv_connector_extra_config")
    children = extra.get("connectors") if name == "MultiConnector" and isinstance(extra, dict) else None
    if name == "HiSparseConnector" or (
        isinstance(children, list)
        and any(isinstance(c, dict) and c.get("kv_connector") == "HiSparseConnector" for c in children)
    ):
        return 'kv_connector "HiSparseConnector"'
    return None


def v2_model_runner(
    version: str,
    serve: dict[str, Any],
    env: dict[str, Any],
    model: ModelFacts,
    *,
    spec_method: str | None,
    unsupported: list[str],
) -> bool | None:
    """`VllmConfig.use_v2_model_runner` on a GPU host with Triton; None when profilekit cannot tell.

    HiSparse (0.30.0+) runs only on V2: vLLM picks it whatever else the role asks for, and refuses
    VLLM_USE_V2_MODEL_RUNNER=0 (rules/hisparse.py; None here, so no rule judges the role as V1). Otherwise the
    env var wins when set; 0.27.x-0.28.0 then force V2 for prefill context parallelism and DSpark, and
    otherwise pick it only for their default architectures (and dense models); V2 unless a feature V2 does
    not support forces V1.
    """
    raw = env.get("VLLM_USE_V2_MODEL_RUNNER")
    if hisparse(version, serve) is not None:
        return None if isinstance(raw, str) and _int_env(raw) is False else True
    if isinstance(raw, str):
        return _int_env(raw)
    if not at_least(version, "0.29.0"):
        if forces_v2(version, serve, spec_method) is not None:
            return True
        if spec_method == "dflash":
            return None  # V2 when the draft mixes sliding and full attention: the draft's config decides
        default = _default_v2_model(version, serve, model)
        if not default:
            return default
    return not unsupported
