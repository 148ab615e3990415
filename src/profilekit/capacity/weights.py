"""The model's weights, in bytes, in total and on the most loaded GPU of a role (docs/CAPACITY.md, "Weights").

Three sources, the first that is given wins:
1. `[model] weights_gib`: the checkpoint's size as the team measured it (GiB);
2. `[model] weights_index`: the checkpoint's `model.safetensors.index.json`, whose `metadata.total_size` is the sum
   of the tensors' bytes;
3. config.json, for the decoder-only families whose layers profilekit can count (Llama-like dense models with
   multi-head, grouped or multi-query attention, gated MLP, and mixtures of experts of the Mixtral, Qwen-MoE and
   DeepSeek-MoE kinds without MLA) and Nemotron-H's Mamba-2, attention and MLP layers, at the checkpoint's dtype.
   Quantized checkpoints, MLA, other hybrid (Mamba, linear attention) and multimodal models are not counted: give 1
   or 2 for them.
Counted as vLLM allocates them: the embedding and the LM head with the vocabulary padded to a multiple of 64.
Per GPU: vLLM shards every linear layer, the embedding and the LM head over tensor parallelism (norms are
replicated), and gives each pipeline stage a run of layers (the first also the embedding, the last the final norm
and the LM head). From a total (1, 2) the per-GPU figure is total / (TP x PP), an even split; from config.json it
is counted stage by stage and the heaviest stage is taken.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profilekit.capacity.mamba import extra_groups
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
    if model_type == "nemotron_h":
        return _counted_nemotron_h(config, tp=tp, pp=pp)
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
    return _from_shape(_shape(config), tp=tp, pp=pp)


def _from_shape(shape: tuple[_Layers, str, int] | str, *, tp: int, pp: int, said: str = "") -> Weights | str:
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
        *([said] if said else []),
    )
    return Weights(total, per_gpu, "config.json (counted)", inputs)


VOCAB_PADDING = 64  # vllm/model_executor/layers/vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE


def padded_vocab(vocab: int) -> int:
    """`pad_vocab_size`: the rows vLLM allocates for the embedding and the LM head (every release 0.27.0-0.33.0)."""
    return -(-vocab // VOCAB_PADDING) * VOCAB_PADDING


_NEMOTRON_KEYS = ("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel")


def _counted_nemotron_h(config: Mapping[str, Any], *, tp: int, pp: int) -> Weights | str:
    """Nemotron-H (vllm/model_executor/models/nemotron_h.py): per `hybrid_override_pattern`, Mamba-2 layers (`M`:
    in_proj to x, z, B, C and dt, a depthwise conv over x, B and C with its bias, A, D and dt_bias per head, a gated
    norm and out_proj), attention (`*`), and squared-ReLU MLPs (`-`: up and down, no gate); each layer a norm, then
    the final norm, the embedding and an untied LM head. Groups are extended to the tensor-parallel size as vLLM
    shards them. The mixture-of-experts layers (`E`, Nemotron-3) are not counted yet."""
    pattern = config.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or not pattern:
        return "not counted from config.json: Nemotron-H without hybrid_override_pattern"
    if set(pattern) - set("M*-"):
        kinds = "".join(sorted(set(pattern) - set("M*-")))
        return f"not counted from config.json: Nemotron-H layers {kinds!r} (mixture of experts) are not counted yet"
    sizes = {
        key: as_int(config.get(key)) for key in ("hidden_size", "vocab_size", "num_attention_heads", *_NEMOTRON_KEYS)
    }
    if any(value is None or value <= 0 for value in sizes.values()):
        missing = ", ".join(key for key, value in sizes.items() if value is None or value <= 0)
        return f"not counted from config.json: Nemotron-H needs {missing} as sizes"
    hidden, vocab, heads, m_heads, m_dim, groups, state, kernel = (int(v or 0) for v in sizes.values())
    kv = as_int(config.get("num_key_value_heads")) or heads
    head_dim = as_int(config.get("head_dim")) or as_int(config.get("attention_head_dim")) or hidden // heads
    inter = config.get("intermediate_size")
    read = [as_int(i) for i in inter] if isinstance(inter, list) else [as_int(inter)]
    mlp_sizes = [i for i in read if i is not None and i > 0]
    if not mlp_sizes or len(mlp_sizes) != len(read):
        return "not counted from config.json: Nemotron-H needs intermediate_size (a size, or one per MLP layer)"
    found = _dtype(config)
    if isinstance(found, str):
        return found
    dtype, size = found
    extended = groups + extra_groups(groups, tp)
    inner = m_heads * m_dim
    conv_dim = inner + 2 * extended * state
    bias, conv_bias = config.get("use_bias") is True, config.get("use_conv_bias", True) is True
    mamba = hidden * (inner + conv_dim + m_heads) + inner * hidden + conv_dim * kernel + 3 * m_heads + inner
    mamba += (conv_dim if conv_bias else 0) + ((inner + conv_dim + m_heads + hidden) if bias else 0)
    attention = hidden * (heads + 2 * kv) * head_dim + heads * head_dim * hidden
    attention += ((heads + 2 * kv) * head_dim + hidden) if config.get("attention_bias") is True else 0
    layers: list[int] = []
    mlp_index = 0
    for kind in pattern:
        if kind == "M":
            layers.append(mamba)
        elif kind == "*":
            layers.append(attention)
        else:
            width = mlp_sizes[min(mlp_index, len(mlp_sizes) - 1)]  # one size for all, or one per MLP layer
            layers.append(2 * hidden * width + ((width + hidden) if config.get("mlp_bias") is True else 0))
            mlp_index += 1
    tied = config.get("tie_word_embeddings", False) is True
    embed = padded_vocab(vocab) * hidden
    parts = _Layers(embed, 0 if tied else embed, layers, [hidden] * len(layers), hidden)
    said = f"Nemotron-H: {pattern.count('M')} Mamba-2, {pattern.count('*')} attention, {pattern.count('-')} MLP layers"
    if extended != groups:
        said += f"; {groups} groups extended to {extended} for tensor_parallel_size {tp}"
    return _from_shape((parts, dtype, size), tp=tp, pp=pp, said=said)


def _dtype(config: Mapping[str, Any]) -> tuple[str, int] | str:
    """The checkpoint's dtype and its bytes per parameter, or why it cannot be counted."""
    dtype = ModelShape.of(dict(config)).dtype or "bfloat16"
    size = DTYPE_BYTES.get(dtype)
    if size is None:
        return f"not counted from config.json: checkpoint dtype {dtype!r}"
    return dtype, size


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
    found = _dtype(config)
    if isinstance(found, str):
        return found
    dtype, size = found
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    if config.get("attention_bias") is True or config.get("model_type") == "qwen2":
        attention += heads * head_dim + 2 * kv_heads * head_dim + (hidden if config.get("attention_bias") else 0)
    model_type = config.get("model_type")
    # per layer: the input and post-attention norms (Gemma-2/3: pre- and post-feedforward ones too), and Qwen3's and
    # Gemma-3's per-head q and k norms
    norms = (4 if model_type in ("gemma2", "gemma3_text") else 2) * hidden
    norms += 2 * head_dim if model_type in ("qwen3", "qwen3_moe", "gemma3_text") else 0
    experts = next((as_int(config.get(k)) for k in _EXPERTS if as_int(config.get(k))), None)
    sharded = []
    for index in range(layers):
        sharded.append(attention + _mlp(config, index, hidden=hidden, inter=inter, experts=experts))
    tied = config.get("tie_word_embeddings", FAMILIES[str(config.get("model_type"))]) is True
    embed = padded_vocab(vocab) * hidden
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
