"""Tiny hand-written ``config.json`` dicts for the oracle's dummy model folders.

No weights, no tokenizer, no transformers import: only what vLLM's config
code reads to build a ``ModelConfig`` (architecture, layer layout, head
counts). Sizes are tiny; the field names follow the published checkpoints
(``nvidia/NVIDIA-Nemotron-Nano-9B-v2``, ``meta-llama/Llama-3.2-1B``,
``Qwen/Qwen3-0.6B``, ``moonshotai/Kimi-Linear-48B-A3B-Instruct``).
"""

from __future__ import annotations

import copy
from typing import Any

_NEMOTRON_H: dict[str, Any] = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "torch_dtype": "bfloat16",
    "vocab_size": 256,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 5,
    # M = Mamba2, - = MLP, * = attention
    "hybrid_override_pattern": "M-M*-",
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 512,
    "attention_bias": False,
    "mlp_bias": False,
    "mlp_hidden_act": "relu2",
    "mamba_num_heads": 8,
    "mamba_head_dim": 16,
    "mamba_hidden_act": "silu",
    "ssm_state_size": 16,
    "n_groups": 2,
    "conv_kernel": 4,
    "expand": 2,
    "chunk_size": 64,
    "use_conv_bias": True,
    "mamba_proj_bias": False,
    "layer_norm_epsilon": 1e-05,
    "residual_in_fp32": False,
    "rescale_prenorm_residual": True,
    "tie_word_embeddings": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}

_LLAMA: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "torch_dtype": "bfloat16",
    "vocab_size": 256,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "hidden_act": "silu",
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
}

_QWEN3: dict[str, Any] = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "torch_dtype": "bfloat16",
    "vocab_size": 256,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "hidden_act": "silu",
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "attention_bias": False,
    "tie_word_embeddings": True,
    "bos_token_id": 1,
    "eos_token_id": 2,
}

_KIMI_LINEAR: dict[str, Any] = {
    "architectures": ["KimiLinearForCausalLM"],
    "model_type": "kimi_linear",
    "torch_dtype": "bfloat16",
    "vocab_size": 256,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "head_dim": 16,
    "hidden_act": "silu",
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
    # MLA for the full-attention layers, as in the published checkpoint
    "q_lora_rank": None,
    "kv_lora_rank": 32,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 8,
    "v_head_dim": 16,
    "mla_use_nope": True,
    # MoE
    "num_experts": 4,
    "num_experts_per_token": 2,
    "num_shared_experts": 1,
    "moe_intermediate_size": 32,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "moe_renormalize": True,
    "moe_router_activation_func": "sigmoid",
    "routed_scaling_factor": 1.0,
    "use_grouped_topk": True,
    "num_expert_group": 1,
    "topk_group": 1,
    # KDA (linear attention) layers; layer numbers are 1-based
    "linear_attn_config": {
        "kda_layers": [1, 2, 3],
        "full_attn_layers": [4],
        "num_heads": 4,
        "head_dim": 16,
        "short_conv_kernel_size": 4,
    },
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}

# A hybrid model whose class does not implement SupportsPP (layer layout as in Zyphra/Zamba2-1.2B:
# Mamba2 layers with a shared attention block at the "hybrid" ones).
_ZAMBA2: dict[str, Any] = {
    "architectures": ["Zamba2ForCausalLM"],
    "model_type": "zamba2",
    "torch_dtype": "bfloat16",
    "vocab_size": 256,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "layers_block_type": ["mamba", "hybrid"],
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 512,
    "mamba_d_state": 16,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_ngroups": 1,
    "mamba_headdim": 16,
    "n_mamba_heads": 8,
    "num_mem_blocks": 1,
    "use_shared_attention_adapter": False,
    "adapter_rank": 8,
    "use_mem_rope": False,
    "hidden_act": "gelu",
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": True,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}

# A multimodal model (vision encoder + Gemma text model; field names as in google/paligemma-3b-pt-224):
# vLLM builds a MultiModalConfig for it, and its model module imports without torchvision.
_PALIGEMMA: dict[str, Any] = {
    "architectures": ["PaliGemmaForConditionalGeneration"],
    "model_type": "paligemma",
    "torch_dtype": "bfloat16",
    "image_token_index": 255,
    "projection_dim": 64,
    "hidden_size": 64,
    "vocab_size": 256,
    "text_config": {
        "model_type": "gemma",
        "vocab_size": 256,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "max_position_embeddings": 512,
        "torch_dtype": "bfloat16",
    },
    "vision_config": {
        "model_type": "siglip_vision_model",
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "image_size": 28,
        "patch_size": 14,
        "projection_dim": 64,
        "num_image_tokens": 4,
    },
    "bos_token_id": 2,
    "eos_token_id": 1,
    "pad_token_id": 0,
}

_MODELS: dict[str, dict[str, Any]] = {
    "NemotronHForCausalLM": _NEMOTRON_H,
    "LlamaForCausalLM": _LLAMA,
    "Qwen3ForCausalLM": _QWEN3,
    "KimiLinearForCausalLM": _KIMI_LINEAR,
    "Zamba2ForCausalLM": _ZAMBA2,
    "PaliGemmaForConditionalGeneration": _PALIGEMMA,
}

ARCHITECTURES: tuple[str, ...] = tuple(_MODELS)


def config_json(architecture: str) -> dict[str, Any]:
    """A fresh copy of the tiny ``config.json`` for ``architecture``."""
    try:
        return copy.deepcopy(_MODELS[architecture])
    except KeyError:
        raise KeyError(f"no dummy config for {architecture!r}; known: {', '.join(ARCHITECTURES)}") from None


def nemotron_h() -> dict[str, Any]:
    return config_json("NemotronHForCausalLM")


def llama() -> dict[str, Any]:
    return config_json("LlamaForCausalLM")


def qwen3() -> dict[str, Any]:
    return config_json("Qwen3ForCausalLM")


def kimi_linear() -> dict[str, Any]:
    return config_json("KimiLinearForCausalLM")
