"""The model's weights, in bytes, in total and on the most loaded GPU of a role (docs/CAPACITY.md, "Weights").

Three sources, the first that is given wins:
1. `[model] weights_gib`: the checkpoint's size as the team measured it (GiB);
2. `[model] weights_index`: the checkpoint's `model.safetensors.index.json`, whose `metadata.total_size` is the sum
   of the tensors' bytes;
3. config.json, for the decoder-only families whose layers profilekit can count (Llama-like dense models with
   multi-head, grouped or multi-query attention, gated MLP, and mixtures of experts of the Mixtral, Qwen-MoE and
   DeepSeek-MoE kinds without MLA) at the checkpoint's dtype. Quantized checkpoints, MLA, hybrid (Mamba, linear
   attention) and multimodal models are not counted: give 1 or 2 for them.
Per GPU: vLLM shards every linear layer, the embedding and the LM head over tensor parallelism (norms are
replicated), and gives each pipeline stage a run of layers (the first also the embedding, the last the final norm
and the LM head). From a total (1, 2) the per-GPU figure is total / (TP x PP), an even split; from config.json it
is counted stage by stage and the heaviest stage is taken.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profilekit.capacity.memory import GIB, MAX_LAYERS
from profilekit.records import record
from profilekit.vllm.modelshape import DTYPE_BYTES, ModelShape, as_int

# config.json keys of the families counted here
_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts")
# the model types whose parameters are counted, each with its config class's tie_word_embeddings default (what
# transformers, hence vLLM, takes when config.json leaves the key out)
FAMILIES = {
    "llama": False,
    "mistral": False,
    "mixtral": False,
    "qwen2": False,
    "qwen2_moe": False,
    "qwen3": False,
    "qwen3_moe": False,
    "phi3": False,
    "granite": False,
    "olmo2": False,
    "gemma": True,
    "gemma2": True,
    "gemma3_text": True,
    "smollm3": True,
}


@record(frozen=True, slots=True)
class Weights:
    """The weights of one role's model."""

    total: int  # bytes of the whole checkpoint
    per_gpu: int  # bytes on the most loaded GPU (tensor-parallel rank of the heaviest pipeline stage)
    source: str  # where the figure comes from
    inputs: tuple[str, ...] = ()  # what it was computed from


def from_total(total: int, source: str, *, tp: int, pp: int) -> Weights:
    """A checkpoint of `total` bytes, split evenly over TP x PP GPUs."""
    inputs: tuple[str, ...] = (f"{total} bytes ({total / GIB:.2f} GiB) from {source}",)
    if tp * pp > 1:
        inputs += (f"split evenly over tensor_parallel_size {tp} x pipeline_parallel_size {pp} (an estimate)",)
    return Weights(total, -(-total // (tp * pp)), source, inputs)


def index_total(raw: object) -> int | None:
    """`metadata.total_size` of a parsed model.safetensors.index.json, or None when it holds none."""
    if not isinstance(raw, dict):
        return None
    meta = raw.get("metadata")
    total = meta.get("total_size") if isinstance(meta, dict) else None
    size = as_int(total)
    return size if size is not None and size > 0 else None


@record(frozen=True, slots=True)
class _Layers:
    """Parameters of the model, in parts that shard differently."""

    embed: int  # the input embedding (vocab x hidden)
    head: int  # the LM head (0 when tied to the embedding)
    layers: list[int]  # each decoder layer's sharded parameters (linear layers, experts)
    replicated: list[int]  # each decoder layer's replicated parameters (norms)
    final_norm: int


def counted(config: Mapping[str, Any], *, tp: int, pp: int) -> Weights | str:
    """The weights from config.json's shape, or why they cannot be counted."""
    text = config.get("text_config")
    if isinstance(text, dict):
        return "not counted from config.json: a multimodal model (its vision or audio tower is not counted)"
    if isinstance(config.get("quantization_config"), dict):
        method = config["quantization_config"].get("quant_method", "?")
        return f"not counted from config.json: a quantized checkpoint ({method}) stores scales as well"
    if config.get("kv_lora_rank") is not None:
        return "not counted from config.json: multi-head latent attention (MLA)"
    model_type = config.get("model_type")
    if model_type not in FAMILIES:
        return (
            f"not counted from config.json: model type {model_type!r} is not one profilekit counts "
            f"({', '.join(sorted(FAMILIES))})"
        )
    for key in ("layers_block_type", "layer_types", "hybrid_override_pattern", "mamba_d_state", "ssm_cfg"):
        if key in config and key != "layer_types":
            return f"not counted from config.json: a hybrid model ({key})"
    if isinstance(config.get("layer_types"), list) and any(
        isinstance(t, str) and ("mamba" in t or "linear" in t) for t in config["layer_types"]
    ):
        return "not counted from config.json: a hybrid model (layer_types)"
    shape = _shape(config)
    if isinstance(shape, str):
        return shape
    parts, dtype, size = shape
    if pp > len(parts.layers):
        return f"pipeline_parallel_size {pp} is more than the model's {len(parts.layers)} layers: not estimated"
    per_gpu = _per_gpu(parts, tp=tp, pp=pp) * size
    total = (parts.embed + parts.head + sum(parts.layers) + sum(parts.replicated) + parts.final_norm) * size
    inputs = (
        f"{total // size} parameters counted from config.json at {size} bytes each ({dtype})",
        f"on the most loaded GPU: tensor_parallel_size {tp}, pipeline_parallel_size {pp} (norms replicated)",
    )
    return Weights(total, per_gpu, "config.json (counted)", inputs)


def _shape(config: Mapping[str, Any]) -> tuple[_Layers, str, int] | str:
    hidden, layers = as_int(config.get("hidden_size")), as_int(config.get("num_hidden_layers"))
    heads, vocab = as_int(config.get("num_attention_heads")), as_int(config.get("vocab_size"))
    inter = as_int(config.get("intermediate_size"))
    if None in (hidden, layers, heads, vocab, inter):
        return (
            "not counted from config.json: it lacks hidden_size, num_hidden_layers, num_attention_heads, "
            "vocab_size or intermediate_size"
        )
    assert hidden is not None and layers is not None and heads is not None and vocab is not None and inter is not None
    if min(hidden, layers, heads, vocab, inter) <= 0 or layers > MAX_LAYERS:
        return (
            "not counted from config.json: hidden_size, num_hidden_layers, num_attention_heads, vocab_size and "
            f"intermediate_size must be sizes (num_hidden_layers at most {MAX_LAYERS})"
        )
    kv_heads = as_int(config.get("num_key_value_heads")) or heads
    head_dim = as_int(config.get("head_dim")) or hidden // heads
    dtype = ModelShape.of(dict(config)).dtype or "bfloat16"
    size = DTYPE_BYTES.get(dtype)
    if size is None:
        return f"not counted from config.json: checkpoint dtype {dtype!r}"
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    if config.get("attention_bias") is True or config.get("model_type") == "qwen2":
        attention += heads * head_dim + 2 * kv_heads * head_dim + (hidden if config.get("attention_bias") else 0)
    norms = 2 * hidden + (2 * head_dim if config.get("model_type") in ("qwen3", "qwen3_moe") else 0)
    experts = next((as_int(config.get(k)) for k in _EXPERTS if as_int(config.get(k))), None)
    sharded = []
    for index in range(layers):
        sharded.append(attention + _mlp(config, index, hidden=hidden, inter=inter, experts=experts))
    tied = config.get("tie_word_embeddings", FAMILIES[str(config.get("model_type"))]) is True
    embed = vocab * hidden
    return _Layers(embed, 0 if tied else embed, sharded, [norms] * layers, hidden), str(dtype), size


def _mlp(config: Mapping[str, Any], index: int, *, hidden: int, inter: int, experts: int | None) -> int:
    """One layer's MLP parameters: a gated MLP (3 matrices), or routed experts with their router and shared ones."""
    first_dense = as_int(config.get("first_k_dense_replace")) or 0
    step = as_int(config.get("decoder_sparse_step")) or 1
    sparse = experts is not None and index >= first_dense and (index + 1) % step == 0
    if not sparse:
        return 3 * hidden * inter
    assert experts is not None
    expert_inter = as_int(config.get("moe_intermediate_size")) or inter
    shared = as_int(config.get("n_shared_experts")) or 0
    shared_inter = as_int(config.get("shared_expert_intermediate_size"))
    total = experts * 3 * hidden * expert_inter + hidden * experts + shared * 3 * hidden * expert_inter
    if shared_inter:  # Qwen2-MoE: one shared expert of its own size, and its gate
        total += 3 * hidden * shared_inter + hidden
    return total


def _per_gpu(parts: _Layers, *, tp: int, pp: int) -> int:
    """Parameters on one tensor-parallel rank of the heaviest pipeline stage (vLLM's get_pp_indices split)."""
    sizes = stage_sizes(len(parts.layers), pp)
    heaviest = 0
    start = 0
    for stage, size in enumerate(sizes):
        sharded = sum(parts.layers[start : start + size]) / tp
        replicated = sum(parts.replicated[start : start + size])
        if stage == 0:
            sharded += parts.embed / tp
        if stage == pp - 1:
            sharded += parts.head / tp if parts.head else (parts.embed / tp if pp > 1 else 0)
            replicated += parts.final_norm
        heaviest = max(heaviest, int(sharded) + replicated)
        start += size
    return heaviest


def stage_sizes(layers: int, pp: int) -> list[int]:
    """The layers of each pipeline stage, as vLLM's get_pp_indices splits them (VLLM_PP_LAYER_PARTITION unset): an
    even share each, and one more for each of the stages before the last, from the second-to-last backwards."""
    sizes = [layers // pp] * pp
    for back in range(2, layers % pp + 2):
        sizes[-back] += 1
    return sizes


def weights(
    config: Mapping[str, Any] | None,
    *,
    declared_gib: float | None,
    index: int | None,
    index_source: str,
    tp: int,
    pp: int,
) -> Weights | str:
    """The role's weights from the first source that is given, or what is missing."""
    if declared_gib is not None:
        return from_total(int(declared_gib * GIB), "[model] weights_gib", tp=tp, pp=pp)
    if index is not None:
        return from_total(index, f"{index_source} (metadata.total_size)", tp=tp, pp=pp)
    if config is None:
        return "no config.json, [model] weights_gib or [model] weights_index for the model"
    return counted(config, tp=tp, pp=pp)
