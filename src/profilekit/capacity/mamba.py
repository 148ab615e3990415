"""The Mamba state of a hybrid model's Mamba layers on one GPU, as vLLM builds it per release.

A hybrid model (Nemotron-H, Granite-4.0-H, Jamba, Qwen3-Next, Kimi Linear) interleaves attention layers with Mamba
layers. A Mamba layer keeps no per-token KV cache but a fixed state per request: a convolution state and an SSM state
(`MambaStateShapeCalculator.mamba2_state_shape` / `mamba1_state_shape` / `gated_delta_net_state_shape` /
`kda_state_shape`,
vllm/model_executor/layers/mamba/mamba_utils.py), sharded over tensor parallelism, in the dtypes
`MambaStateDtypeCalculator` picks (`mamba_cache_dtype`, `mamba_ssm_cache_dtype`; Nemotron-H's SSM state defaults
to float32, `NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype`). Which layers are Mamba is what the model
code indexes: `hybrid_override_pattern` (Nemotron-H: `M` Mamba, `*` attention, `-` MLP, `E` MoE), `layer_types`
(Granite-4.0-H, Qwen3-Next), transformers' `JambaConfig.layers_block_type` (attention where
`i % attn_layer_period == attn_layer_offset`) or Kimi Linear's `linear_attn_config.kda_layers` (numbered from 1). A key missing from config.json takes the default of the config
class (said in the inputs).

Every release 0.27.0-0.33.0; tests/oracle/test_capacity_kv.py holds the figures equal to the spec the release's
own layer class returns. Not modelled (a str says so): the ReplaySSM rings of other families than Nemotron-H,
speculative decoding's extra state, Kimi-K3's full-rank-gate KDA layers (whose FlashKDA prefill checkpoints and
RecoverSSM records depend on the GPU), 0.33.0's gated delta net prefill checkpoints on Blackwell (capacity/kv.py
`_gdn_checkpoints`) and the other hybrid families.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profilekit.capacity.memory import MAX_LAYERS
from profilekit.records import record
from profilekit.vllm.modelshape import DTYPE_BYTES, as_int
from profilekit.vllm.versions import at_least

MAMBA2 = ("nemotron_h", "granitemoehybrid")
MAMBA1 = ("jamba",)
GDN = ("qwen3_next",)  # gated delta nets (`gated_delta_net_state_shape`)
KDA = ("kimi_linear",)  # Kimi Delta Attention (`kda_state_shape`), beside multi-head latent attention layers
FAMILIES = (*MAMBA2, *MAMBA1, *GDN, *KDA)

# transformers' config classes: what a config.json without the key gets (NemotronHConfig, GraniteMoeHybridConfig,
# JambaConfig)
_DEFAULTS: dict[str, dict[str, int]] = {
    "nemotron_h": {
        "mamba_num_heads": 128,
        "mamba_head_dim": 64,
        "n_groups": 8,
        "ssm_state_size": 128,
        "conv_kernel": 4,
    },
    "granitemoehybrid": {
        "mamba_n_heads": 128,
        "mamba_n_groups": 1,
        "mamba_d_state": 256,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
    },
    "qwen3_next": {  # vLLM's own Qwen3NextConfig (0.27.0-0.31.0) and transformers' agree on these
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
    },
    "jamba": {
        "mamba_d_state": 16,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "attn_layer_period": 8,
        "attn_layer_offset": 4,
    },
}
_NEMOTRON_KINDS = {"M": "mamba", "*": "attention", "-": "none", "E": "none"}
_GRANITE_KINDS = {
    "mamba": "mamba",
    "linear_attention": "mamba",
    "attention": "attention",
    "full_attention": "attention",
}


@record(frozen=True, slots=True)
class MambaState:
    """What the KV-cache planning needs of a hybrid model's Mamba layers."""

    page_bytes: int  # one Mamba layer's state on one GPU, before vLLM pads it to the attention page
    checkpoint_blocks: int  # a prefill checkpoint block (MambaMixer2 from 0.32.0; counted in `align` mode)
    inputs: tuple[str, ...]
    chunk_size: int = 2048  # ModelConfig.get_mamba_chunk_size (Mamba cache mode `all` aligns blocks to it)
    checkpoint_alignment: int = 0  # the layers' prefill checkpoint alignment in `align` mode (0: none declared)


class _Reader:
    """config.json keys with transformers' defaults, remembering which defaults were taken."""

    def __init__(self, text: Mapping[str, Any], model_type: str) -> None:
        self.text = text
        self.defaults = _DEFAULTS.get(model_type, {})
        self.taken: list[str] = []

    def get(self, key: str) -> int | None:
        value = as_int(self.text.get(key))
        if value is None and key in self.defaults:
            value = self.defaults[key]
            self.taken.append(f"{key} {value}")
        return value


def layer_kinds(text: Mapping[str, Any], model_type: str) -> tuple[str, ...] | str:
    """Each decoder layer's kind, as the model code builds the layer."""
    if model_type == "nemotron_h":
        pattern = text.get("hybrid_override_pattern")
        if not isinstance(pattern, str) or not pattern:
            return "config.json has no hybrid_override_pattern"
        unknown = sorted({c for c in pattern if c not in _NEMOTRON_KINDS})
        if unknown:
            return f"not modelled yet: hybrid_override_pattern layer kinds {''.join(unknown)!r}"
        return tuple(_NEMOTRON_KINDS[c] for c in pattern)
    if model_type == "granitemoehybrid" or (model_type in GDN and text.get("layer_types") is not None):
        types = text.get("layer_types")
        if not isinstance(types, list) or not types:
            return "config.json has no layer_types"
        unknown = sorted({str(t) for t in types if not isinstance(t, str) or t not in _GRANITE_KINDS})
        if unknown:
            return f"not modelled yet: layer_types {', '.join(unknown)}"
        return tuple(_GRANITE_KINDS[str(t)] for t in types)
    layers = as_int(text.get("num_hidden_layers"))
    if layers is None or layers <= 0 or layers > MAX_LAYERS:
        return f"config.json's num_hidden_layers is no layer count (1 to {MAX_LAYERS})"
    if model_type in GDN:
        return _gdn_kinds(text, layers)
    if model_type in KDA:
        return _kda_kinds(text, layers)
    read = _Reader(text, model_type)
    period, offset = read.get("attn_layer_period") or 8, read.get("attn_layer_offset") or 0
    return tuple("attention" if i % period == offset else "mamba" for i in range(layers))


def _gdn_kinds(text: Mapping[str, Any], layers: int) -> tuple[str, ...] | str:
    """Qwen3-Next without `layer_types`: the config class fills them in, full attention every 4th layer (vLLM's own
    Qwen3NextConfig, 0.27.0-0.31.0, always 4; transformers' from `full_attention_interval`, 4 by default)."""
    interval = text.get("full_attention_interval", 4)
    if interval != 4:
        return f"not modelled yet: full_attention_interval {interval!r} without layer_types (releases differ)"
    return tuple("mamba" if (i + 1) % 4 else "attention" for i in range(layers))


def _kda_kinds(text: Mapping[str, Any], layers: int) -> tuple[str, ...] | str:
    """Kimi Linear: `KimiLinearConfig.is_kda_layer(i)`, layer i + 1 listed in `linear_attn_config.kda_layers`
    (numbered from 1); every other layer is multi-head latent attention."""
    linear = text.get("linear_attn_config")
    if not isinstance(linear, Mapping):
        return "config.json has no linear_attn_config (Kimi Linear's KDA layers)"
    numbers = linear.get("kda_layers")
    if not isinstance(numbers, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        return "config.json's linear_attn_config.kda_layers is no list of layer numbers"
    kda = set(numbers)
    kinds = tuple("mamba" if i + 1 in kda else "attention" for i in range(layers))
    if "mamba" not in kinds:
        return "not modelled yet: a Kimi Linear config without KDA layers"
    return kinds


def _not_sizes(**sizes: int | None) -> str | None:
    """Why config.json's Mamba sizes are no sizes (missing, zero or negative: the model cannot be built), if so."""
    wrong = [f"{key} {value}" for key, value in sizes.items() if value is None or value <= 0]
    if not wrong:
        return None
    return f"config.json's Mamba sizes are not sizes ({', '.join(wrong)}): not estimated"


def extra_groups(groups: int, tp: int) -> int:
    """`MambaStateShapeCalculator.extra_groups_for_head_shards`: groups added so that tensor parallelism divides
    them."""
    return 0 if groups % tp == 0 else tp - groups


def _divide(a: int, b: int, what: str) -> int | str:
    """vLLM's `divide` (an assertion: the engine stops)."""
    if a % b:
        return f"{what} ({a}) is not divisible by tensor_parallel_size {b}: vLLM stops on its assertion"
    return a // b


def mamba_state(
    text: Mapping[str, Any],
    model_type: str,
    kinds: tuple[str, ...],
    *,
    version: str,
    tp: int,
    model_dtype: str,
    serve: Mapping[str, Any],
) -> MambaState | str:
    """The Mamba layers' state of one GPU, or why it is not modelled (`kinds`: `layer_kinds`, as the caller read
    them)."""
    replayssm = serve.get("use_replayssm") is True
    if replayssm and model_type != "nemotron_h":
        return f"not modelled yet: the ReplaySSM ring buffers of {model_type}"
    if serve.get("speculative_config") is not None:
        return "not modelled yet: the extra Mamba state of speculative decoding"
    read = _Reader(text, model_type)
    if model_type in MAMBA2:
        shape = _mamba2(read, model_type, tp)
    elif model_type in KDA:
        shape = _kda(text, tp, serve)
    else:
        shape = _gdn(read, tp) if model_type in GDN else _mamba1(read, tp)
    if isinstance(shape, str):
        return shape
    conv, ssm, said = shape
    dtypes = _state_dtypes(text, model_type, model_dtype, serve, version=version)
    if isinstance(dtypes, str):
        return dtypes
    (conv_bytes, ssm_bytes), dtype_said = dtypes
    page = conv * conv_bytes + ssm * ssm_bytes
    ring: tuple[int, str] = (0, "")
    if replayssm:
        found = _replayssm_ring(read, serve, version=version, tp=tp, activation=DTYPE_BYTES.get(model_dtype, 2))
        if isinstance(found, str):
            return found
        ring = found
    page += ring[0]
    inputs = [
        f"{kinds.count('mamba')} Mamba and {kinds.count('attention')} attention layers of {len(kinds)} ({model_type})",
        f"{said}, per GPU at tensor_parallel_size {tp}",
        dtype_said,
        *([ring[1]] if ring[1] else []),
        f"Mamba state {page} bytes per layer and request, before padding to the attention page",
    ]
    if read.taken:
        inputs.append(f"transformers' defaults for keys config.json lacks: {', '.join(read.taken)}")
    mixer2_checkpoint = model_type in MAMBA2 and at_least(version, "0.32.0")
    return MambaState(page, 1 if mixer2_checkpoint else 0, tuple(inputs), _chunk_size(text, model_type))


def _chunk_size(text: Mapping[str, Any], model_type: str) -> int:
    """`ModelConfig.get_mamba_chunk_size`: `mamba_chunk_size`, else `chunk_size` (transformers' defaults: Nemotron-H
    128, Granite-4.0-H 256), else 2048 (Mamba-1 has no chunks)."""
    written = as_int(text.get("mamba_chunk_size"))
    if written is None:
        written = as_int(text.get("chunk_size"))
    if written is None:
        written = {"nemotron_h": 128, "granitemoehybrid": 256}.get(model_type)
    return written if written is not None and written > 0 else 2048


def _mamba2(read: _Reader, model_type: str, tp: int) -> tuple[int, int, str] | str:
    """`mamba2_state_shape`: the elements of the conv and SSM states on one GPU."""
    if model_type == "nemotron_h":
        heads, head_dim = read.get("mamba_num_heads"), read.get("mamba_head_dim")
        groups, state, kernel = read.get("n_groups"), read.get("ssm_state_size"), read.get("conv_kernel")
        inter = heads * head_dim if heads is not None and head_dim is not None else None
    else:
        hidden, expand = as_int(read.text.get("hidden_size")), read.get("mamba_expand") or 2
        heads, groups = read.get("mamba_n_heads"), read.get("mamba_n_groups")
        state, kernel = read.get("mamba_d_state"), read.get("mamba_d_conv")
        inter = expand * hidden if hidden is not None else None
        head_dim = as_int(read.text.get("mamba_d_head"))
        if head_dim is None and inter is not None and heads is not None and heads > 0:
            head_dim = inter // heads  # GraniteMoeHybridConfig: mamba_d_head "auto"
    wrong = _not_sizes(heads=heads, head_dim=head_dim, groups=groups, state_size=state, conv_kernel=kernel, inner=inter)
    if wrong:
        return wrong
    assert heads is not None and head_dim is not None and groups is not None  # for mypy: checked just above
    assert state is not None and kernel is not None and inter is not None
    groups += extra_groups(groups, tp)
    conv_dim = _divide(inter + 2 * groups * state, tp, "the Mamba conv dimension")
    local_heads = _divide(heads, tp, "the Mamba heads")
    if isinstance(conv_dim, str):
        return conv_dim
    if isinstance(local_heads, str):
        return local_heads
    said = f"Mamba-2 state: conv {conv_dim} x {kernel - 1}, SSM {local_heads} heads x {head_dim} x {state}"
    return conv_dim * (kernel - 1), local_heads * head_dim * state, said


def _replayssm_ring(
    read: _Reader, serve: Mapping[str, Any], *, version: str, tp: int, activation: int
) -> tuple[int, str] | str:
    """`MambaStateShapeCalculator.append_replayssm_ring`: x, dt and B rings of `replayssm_buffer_len` steps (one more
    with the FlashInfer Mamba backend from 0.30.0), x and B in the model's dtype, dt in float32; B over the groups
    (from 0.33.0 extended for the head shards as the conv state's are)."""
    window = as_int(serve.get("replayssm_buffer_len")) or 16
    if window < 1:
        return f"replayssm_buffer_len {window} is not a length: not estimated"
    backend = serve.get("mamba_backend", "triton")
    ring = window + (1 if backend == "flashinfer" and at_least(version, "0.30.0") else 0)
    heads, head_dim = read.get("mamba_num_heads"), read.get("mamba_head_dim")
    groups, state = read.get("n_groups"), read.get("ssm_state_size")
    wrong = _not_sizes(heads=heads, head_dim=head_dim, groups=groups, state_size=state)
    if wrong:
        return wrong
    assert heads is not None and head_dim is not None and groups is not None and state is not None  # for mypy
    if at_least(version, "0.33.0"):
        groups += extra_groups(groups, tp)
    local_groups = _divide(groups, tp, "the Mamba groups")
    if isinstance(local_groups, str):
        return local_groups
    local_heads = heads // tp
    size = (
        local_heads * ring * head_dim * activation + local_heads * ring * 4 + local_groups * ring * state * activation
    )
    said = f"ReplaySSM rings of {ring} steps (replayssm_buffer_len {window}, mamba_backend {backend}): {size} bytes"
    return size, said


def _gdn(read: _Reader, tp: int) -> tuple[int, int, str] | str:
    """`gated_delta_net_state_shape`: a conv state over q, k (key heads) and v (value heads), and a temporal state
    of value heads x value dim x key dim, both sharded over tensor parallelism."""
    sizes = {key: read.get(key) for key in _DEFAULTS["qwen3_next"]}
    wrong = _not_sizes(**sizes)
    if wrong:
        return wrong
    key_heads, value_heads, key_dim, value_dim, kernel = (int(sizes[key] or 0) for key in _DEFAULTS["qwen3_next"])
    conv_dim = _divide(2 * key_heads * key_dim + value_heads * value_dim, tp, "the gated delta net conv dimension")
    if isinstance(conv_dim, str):
        return conv_dim
    local_heads = _divide(value_heads, tp, "the gated delta net value heads")
    if isinstance(local_heads, str):
        return local_heads
    said = (
        f"gated delta net state: conv {conv_dim} x {kernel - 1}, temporal {local_heads} value heads x {value_dim} x "
        f"{key_dim}"
    )
    return conv_dim * (kernel - 1), local_heads * value_dim * key_dim, said


def _kda(text: Mapping[str, Any], tp: int, serve: Mapping[str, Any]) -> tuple[int, int, str] | str:
    """`kda_state_shape` (Kimi Linear's `KimiGatedDeltaNetAttention`): a conv state over q, k and v (heads x head
    dim each) and a recurrent state of heads x head dim x head dim, both sharded over tensor parallelism. The model
    code reads `num_heads`, `head_dim` and `short_conv_kernel_size` of `linear_attn_config` with no default."""
    linear = text.get("linear_attn_config")
    assert isinstance(linear, Mapping)  # layer_kinds checked it
    if linear.get("use_full_rank_gate"):
        return "not modelled yet: Kimi-K3's full-rank-gate KDA layers (linear_attn_config.use_full_rank_gate)"
    if serve.get("use_kda_recoverssm") is True:
        return "not modelled yet: the KDA RecoverSSM records (use_kda_recoverssm)"
    heads, head_dim = as_int(linear.get("num_heads")), as_int(linear.get("head_dim"))
    kernel = as_int(linear.get("short_conv_kernel_size"))
    wrong = _not_sizes(num_heads=heads, head_dim=head_dim, short_conv_kernel_size=kernel)
    if wrong:
        return wrong.replace("config.json's Mamba sizes", "config.json's linear_attn_config sizes")
    assert heads is not None and head_dim is not None and kernel is not None  # for mypy: checked just above
    conv_dim = _divide(3 * heads * head_dim, tp, "the KDA conv dimension")
    if isinstance(conv_dim, str):
        return conv_dim
    local_heads = _divide(heads, tp, "the KDA heads")
    if isinstance(local_heads, str):
        return local_heads
    said = f"KDA state: conv {conv_dim} x {kernel - 1}, recurrent {local_heads} heads x {head_dim} x {head_dim}"
    return conv_dim * (kernel - 1), local_heads * head_dim * head_dim, said


def _mamba1(read: _Reader, tp: int) -> tuple[int, int, str] | str:
    """`mamba1_state_shape` (Jamba: intermediate = mamba_expand x hidden_size)."""
    hidden = as_int(read.text.get("hidden_size"))
    expand, state, kernel = read.get("mamba_expand"), read.get("mamba_d_state"), read.get("mamba_d_conv")
    wrong = _not_sizes(hidden_size=hidden, mamba_expand=expand, state_size=state, conv_kernel=kernel)
    if wrong:
        return wrong
    assert hidden is not None and expand is not None and state is not None and kernel is not None  # for mypy
    local = _divide(expand * hidden, tp, "the Mamba intermediate size")
    if isinstance(local, str):
        return local
    return local * (kernel - 1), local * state, f"Mamba state: conv {local} x {kernel - 1}, SSM {local} x {state}"


def _state_dtypes(
    text: Mapping[str, Any], model_type: str, model_dtype: str, serve: Mapping[str, Any], *, version: str
) -> tuple[tuple[int, int], str] | str:
    """`MambaStateDtypeCalculator._mamba_state_dtype`: the conv state in `mamba_cache_dtype` (auto: the model's),
    the SSM state in `mamba_ssm_cache_dtype` (auto: the conv state's; Nemotron-H: config.json's, else float32).
    `kda_state_dtype`: KDA's recurrent state is float32 (before 0.30.0 whatever mamba_ssm_cache_dtype says; from
    0.30.0 unless it says bfloat16, and vLLM refuses any other)."""
    conv = serve.get("mamba_cache_dtype", "auto")
    conv = model_dtype if conv in ("auto", None) else conv
    ssm = serve.get("mamba_ssm_cache_dtype", "auto")
    ssm_from = "serve.mamba_ssm_cache_dtype"
    if model_type in KDA:
        if not at_least(version, "0.30.0"):
            ssm, ssm_from = "float32", f"KDA's, whatever mamba_ssm_cache_dtype says in vLLM {version}"
        elif ssm in ("auto", None):
            ssm, ssm_from = "float32", "KDA's default"
        elif ssm not in ("float32", "bfloat16"):
            return (
                f"vLLM refuses mamba_ssm_cache_dtype {ssm!r} for KDA layers: 'KDA recurrent state supports only "
                "auto, float32, and bfloat16': not estimated"
            )
    elif ssm in ("auto", None) and model_type == "nemotron_h":
        written = text.get("mamba_ssm_cache_dtype")
        ssm, ssm_from = (written, "config.json") if isinstance(written, str) else ("float32", "Nemotron-H's default")
    elif ssm in ("auto", None):
        ssm, ssm_from = conv, "as the conv state"
    if not isinstance(conv, str) or not isinstance(ssm, str) or conv not in DTYPE_BYTES or ssm not in DTYPE_BYTES:
        return f"not modelled yet: Mamba state dtypes {conv!r} / {ssm!r}"
    said = f"Mamba conv state {conv}, SSM state {ssm} ({ssm_from})"
    return (DTYPE_BYTES[str(conv)], DTYPE_BYTES[str(ssm)]), said
