"""The KV cache of one role on one GPU (a tensor-parallel rank of a pipeline stage) as vLLM builds it per release.

From the model's config.json and the role's options: the KV-cache spec of every attention layer
(`Attention.get_kv_cache_spec`, `MLAAttention.get_kv_cache_spec`), the hybrid allocator's grouping and page-size
unification (`get_kv_cache_groups`), and what vLLM's `get_kv_cache_configs` decides from the bytes left for the
cache: the fit check (`_check_enough_kv_cache_memory`, with the null block reserved from 0.29.0), its estimated
maximum length, the number of blocks and the "GPU KV cache size" / "Maximum concurrency" lines it logs.

Sources, every release 0.27.0-0.33.0: `vllm/v1/kv_cache_interface.py` (the spec classes), `vllm/v1/core/
kv_cache_utils.py` (0.33.0: `kv_cache_planning.py`), `vllm/model_executor/layers/attention/attention.py`,
`vllm/config/model.py` and `vllm/transformers_utils/model_arch_config_convertor.py` (heads, head size, MLA),
transformers' config classes (the `layer_types` a config.json without them gets). tests/oracle/test_capacity_kv.py
holds every figure equal to vLLM's own objects (tools/oracle/kv_probe.py).

Modelled: full attention (MHA, GQA, MQA: the KV heads a rank holds, replicated when tensor_parallel_size exceeds
them), DeepSeek-style MLA (one latent head of kv_lora_rank + qk_rope_head_dim, no V), sliding-window layers (a
global `sliding_window`, `layer_types`, Gemma-2/3 patterns, Qwen's `use_sliding_window`/`max_window_layers`), the
hybrid allocator and `disable_hybrid_kv_cache_manager`, pipeline stages and decode context parallelism; the Mamba
layers of Nemotron-H, Granite-4.0-H and Jamba, Qwen3-Next's gated delta nets and Kimi Linear's KDA layers beside
its MLA layers (their state in capacity/mamba.py; here the platform's block alignment,
`Platform._align_hybrid_block_size`, a multiple of 128 with MLA, and `MambaSpec.max_memory_usage_bytes` per Mamba cache
mode, with 0.33.0's gated delta net prefill checkpoints on Hopper). Not modelled (a str says so): the other hybrid
families, those checkpoints on Blackwell (they depend on the CUDA runtime), chunked local attention, sparse MLA
indexers, quantised KV caches other than the fp8 family, models whose config.json lacks the keys read.

Assumed where the attention backend decides (said in `KvLayout.inputs`): without a written `block_size`, 16
(`CacheConfig.DEFAULT_BLOCK_SIZE`, every release; `Platform.update_block_size_for_backend` then takes the chosen
backend's preferred size, which FlashAttention keeps for ordinary head sizes and other backends raise, e.g. ROCm
AITER's unified attention to 64), and sliding-window layers use FlashAttention's kernel block sizes (multiples of
16). A written `block_size` is taken as written. Sliding-window layers need `max_num_batched_tokens` (the caller
gives vLLM's resolved value) and take async scheduling on unless `async_scheduling` says otherwise; with pipeline
parallelism and async scheduling the batches in flight depend on the model runner (V1 or V2): not modelled.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from profilekit.capacity.mamba import FAMILIES as MAMBA_FAMILIES
from profilekit.capacity.mamba import GDN, KDA, MambaState, layer_kinds, mamba_state
from profilekit.capacity.memory import MAX_LAYERS
from profilekit.hardware import Gpu
from profilekit.records import record
from profilekit.vllm.modelshape import DTYPE_BYTES, HEAD_KEYS, KV_HEAD_KEYS, ModelShape, as_int
from profilekit.vllm.versions import at_least

# `is_deepseek_mla`: the model types whose kv_lora_rank makes them MLA (those without a sparse indexer)
MLA_TYPES = ("deepseek_v2", "deepseek_v3")
# the model types whose KV cache is followed here (vLLM's base config convertor, model code passing the windows
# as below; each proven by tests/oracle/test_capacity_kv.py): another type has a convertor or attention of its own
# (Falcon's multi_query, MPT, DBRX, gpt-oss sinks, ...) and is said to be not modelled rather than guessed
MODELLED_TYPES = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "phi3",
    *MLA_TYPES,
)
# layers that are not attention: their state is not modelled here
HYBRID_KEYS = ("layers_block_type", "hybrid_override_pattern", "layer_block_types", "attn_layer_indices")
HYBRID_TYPES = ("jamba", "nemotron_h", "qwen3_next", "granitemoehybrid", "kimi_linear", "falcon_h1", "bamba", "zamba2")
DEFAULT_BLOCK = 16  # CacheConfig.DEFAULT_BLOCK_SIZE, which FlashAttention keeps (the module docstring)
KERNEL_BLOCK = 16  # FlashAttention's kernel block sizes: MultipleOf(16)
FLASHINFER_GDN_CHECKPOINT = 64  # vllm/v1/attention/backends/gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT (0.33.0)
MLA_HYBRID_BLOCK = 128  # `_align_hybrid_block_size` with MLA: a multiple of 128 (every release 0.27.0-0.33.0)
# transformers' config classes: the sliding window a config.json without the key gets
DEFAULT_WINDOW = {"mistral": 4096}
# model types whose config class leaves layer_types unset and whose vLLM model code passes no per-layer window:
# a sliding_window makes every layer slide (CacheConfig.sliding_window)
ALL_SLIDE = ("mistral", "mixtral", "qwen3_moe", "phi3")


@record(frozen=True, slots=True)
class LayerSpec:
    """One kind of KV-cache layer, as vLLM's KVCacheSpec on one GPU."""

    kind: str  # "full", "mla", "sliding_window", "mamba"
    layers: int  # how many layers of this kind on one GPU (the first pipeline stage)
    block_size: int
    page_bytes: int  # vLLM's spec.page_size_bytes for one layer (after page-size unification)
    window: int | None = None


@record(frozen=True, slots=True)
class _Spec:
    """One layer's spec: what `max_memory_usage_bytes` and the grouping read."""

    kind: str
    block_size: int
    page_bytes: int
    window: int | None
    # a Mamba layer: the pages of state one request holds (MambaSpec.max_memory_usage_bytes); 0: one per block of
    # the request (Mamba cache mode `all`)
    state_pages: int = 0


@record(frozen=True, slots=True)
class KvLayout:
    """The KV cache of one role, per GPU, and what vLLM's planning makes of a number of bytes for it."""

    specs: tuple[LayerSpec, ...]
    block_size: int
    inputs: tuple[str, ...]
    # the model's groups (each a spec and, per pipeline stage, how many of its layers the stage holds)
    groups: tuple[tuple[_Spec, tuple[int, ...]], ...] = ()
    dcp: int = 1
    in_flight: int = 0  # VllmConfig.max_in_flight_tokens (sliding-window layers)
    null_block: bool = False  # the null block is reserved before the check (0.29.0)
    stages: int = 1

    def bytes_per_token(self) -> float:
        """KV bytes one token costs on one GPU in the full-attention-like layers (for display; with decode context
        parallelism a GPU holds every dcp-th token)."""
        full = sum(s.layers * s.page_bytes / s.block_size for s in self.specs if s.kind in ("full", "mla"))
        return full / self.dcp

    def _spec_bytes(self, spec: _Spec, max_model_len: int) -> int:
        """`spec.max_memory_usage_bytes(vllm_config)`."""
        if spec.kind == "mamba":
            return spec.page_bytes * (spec.state_pages or _cdiv(max_model_len, spec.block_size))
        if spec.kind == "sliding_window" and spec.window is not None:
            tokens = min(spec.window - 1 + self.in_flight, max_model_len)
            return (_cdiv(tokens, spec.block_size) + 1) * spec.page_bytes
        length = _cdiv(max_model_len, self.dcp) if self.dcp > 1 else max_model_len
        return _cdiv(length, spec.block_size) * spec.page_bytes

    def _group_size(self, stage: int) -> int:
        return max((counts[stage] for _, counts in self.groups), default=0)

    def _page(self) -> int:
        return self.groups[0][0].page_bytes if self.groups else 0

    def _stage_needed(self, stage: int, max_model_len: int) -> int:
        """`_max_memory_usage_bytes_from_groups` of one stage's projected groups (the general case)."""
        page = self._page()
        blocks = sum(_cdiv(self._spec_bytes(spec, max_model_len), page) for spec, _ in self.groups)
        return self._group_size(stage) * page * blocks

    def needed_bytes(self, max_model_len: int) -> int:
        """The KV cache one request of max_model_len tokens needs on the GPU that needs the most."""
        return max((self._stage_needed(s, max_model_len) for s in range(self.stages)), default=0)

    def _bytes_per_block(self, stage: int) -> int:
        return self._page() * self._group_size(stage)

    def block_bytes(self) -> int:
        """The bytes one block of the pool takes on a GPU of the first stage (every group's page, once per layer of
        the largest group): the null block vLLM holds back from 0.29.0 is one of them."""
        return self._bytes_per_block(0)

    def _checked(self, stage: int, available: int) -> int:
        """The bytes vLLM checks against: from 0.29.0 less one block, the null block the pool holds back."""
        return available - self._bytes_per_block(stage) if self.null_block else available

    def _failing_stage(self, available: int, max_model_len: int) -> int | None:
        for stage in range(self.stages):
            checked = self._checked(stage, available)
            if checked <= 0 or self._stage_needed(stage, max_model_len) > checked:
                return stage
        return None

    def fits(self, available: int, max_model_len: int) -> bool:
        """`_check_enough_kv_cache_memory` on every stage: True when vLLM starts."""
        return not self.groups or self._failing_stage(available, max_model_len) is None

    def estimate_max_model_len(self, available: int, max_model_len: int) -> int:
        """`_estimate_max_model_len_from_groups`: the length vLLM's refusal names (0: not one token), or
        max_model_len when it fits."""
        stage = self._failing_stage(available, max_model_len)
        if stage is None:
            return max_model_len
        checked = self._checked(stage, available)
        if checked <= 0 or self._stage_needed(stage, 1) > checked:
            return 0
        low, high, best = 1, max_model_len, 1
        while low <= high:
            mid = (low + high) // 2
            if self._stage_needed(stage, mid) <= checked:
                best, low = mid, mid + 1
            else:
                high = mid - 1
        return best

    def num_blocks(self, available: int) -> int:
        """`get_kv_cache_config_from_groups`: the blocks of the pool, the smallest over the stages."""
        if not self.groups:
            return 1
        return min(max(available // self._bytes_per_block(s), 0) for s in range(self.stages))

    def max_concurrency(self, available: int, max_model_len: int) -> float:
        """`get_max_concurrency_for_kv_cache_config`: "Maximum concurrency for L tokens per request: X"."""
        page = self._page()
        per_request = sum(_cdiv(self._spec_bytes(spec, max_model_len), page) for spec, _ in self.groups)
        return self.num_blocks(available) / per_request if per_request else 0.0

    def tokens(self, available: int, max_model_len: int | None = None) -> int:
        """`get_kv_cache_capacity`: "GPU KV cache size: N tokens", int(max concurrency x max_model_len), which
        vLLM computes with the length; without one, the token slots of the pool (blocks x block size)."""
        if max_model_len is None:
            return self.num_blocks(available) * self.block_size
        return int(self.max_concurrency(available, max_model_len) * max_model_len)


def _cdiv(a: int, b: int) -> int:
    return -(a // -b)


def _heads(n: int) -> str:
    return f"{n} KV head" + ("" if n == 1 else "s")


@record(frozen=True, slots=True)
class _Model:
    """What the KV cache reads from config.json, as vLLM's ModelConfig answers."""

    layers: int
    kv_heads: int  # get_total_num_kv_heads (MLA: 1 latent head)
    head_size: int
    mla: bool
    windows: tuple[int | None, ...]  # each layer's sliding window
    dtype: str  # the checkpoint's dtype (for kv_cache_dtype "auto")
    inputs: tuple[str, ...]
    kinds: tuple[str, ...] | None = None  # a hybrid model: each layer's kind (capacity/mamba.py)
    model_type: str = ""


def _layers(text: Mapping[str, Any], model_type: str) -> tuple[int, tuple[str, ...] | None, str] | str:
    """The decoder layers (a hybrid model: with each layer's kind) and how they were read."""
    layers = as_int(text.get("num_hidden_layers"))
    if layers is not None and layers > MAX_LAYERS:
        return f"config.json's num_hidden_layers {layers} is more than any model has (over {MAX_LAYERS}): not estimated"
    if model_type not in MAMBA_FAMILIES:
        if layers is None or layers <= 0:
            return "config.json has no num_hidden_layers"
        return layers, None, f"{layers} layers from config.json num_hidden_layers"
    kinds = layer_kinds(text, model_type)
    if isinstance(kinds, str):
        return kinds
    if model_type in ("granitemoehybrid", "qwen3_next") and layers is not None and 0 < layers < len(kinds):
        kinds = kinds[:layers]  # the model builds num_hidden_layers layers, indexing layer_types
    return len(kinds), kinds, f"{len(kinds)} layers ({model_type}'s layer kinds)"


def _model(shape: ModelShape, config: Mapping[str, Any], serve: Mapping[str, Any]) -> _Model | str:
    text = shape.text
    model_type = str(text.get("model_type") or config.get("model_type") or "")
    hybrid = model_type in MAMBA_FAMILIES
    if not hybrid and (model_type in HYBRID_TYPES or any(key in text for key in HYBRID_KEYS)):
        return (
            f"not modelled yet: the Mamba/linear-attention layers of a hybrid model ({model_type or 'no model_type'})"
        )
    if text.get("attention_chunk_size") is not None:
        return "not modelled yet: chunked local attention (attention_chunk_size, Llama-4)"
    if text.get("index_topk") is not None or text.get("compress_ratios") is not None:
        return f"not modelled yet: the sparse-attention indexer cache ({model_type})"
    if model_type not in MODELLED_TYPES and not hybrid:
        return f"not modelled yet: the KV cache of model_type {model_type!r}"
    found_layers = _layers(text, model_type)
    if isinstance(found_layers, str):
        return found_layers
    layers, kinds, layers_said = found_layers
    inputs: list[str] = [layers_said]
    mla = model_type in (*MLA_TYPES, *KDA) and text.get("kv_lora_rank") is not None
    if model_type in KDA and not mla:
        return "config.json has no kv_lora_rank: Kimi Linear's attention layers are multi-head latent attention"
    if text.get("kv_lora_rank") is not None and not mla:
        return f"not modelled yet: multi-head latent attention of model_type {model_type!r}"
    if mla:
        rank, rope = as_int(text.get("kv_lora_rank")), as_int(text.get("qk_rope_head_dim"))
        if rank is None or rope is None:
            return "config.json has kv_lora_rank without qk_rope_head_dim"
        kv_heads, head_size = 1, rank + rope
        inputs.append(f"MLA: one latent head of {head_size} (kv_lora_rank {rank} + qk_rope_head_dim {rope}), no V")
    else:
        found_heads = shape.first(HEAD_KEYS)
        if found_heads is None:
            return "config.json has no num_attention_heads"
        heads = found_heads[0]
        kv_heads, kv_key = shape.first(KV_HEAD_KEYS) or (heads, f"{found_heads[1]} (no KV-head key)")
        head_key = "head_dim"
        if text.get(head_key) is None and model_type == "nemotron_h":
            head_key = "attention_head_dim"  # the name older Nemotron-H configs use
        head_dim = as_int(text.get(head_key))
        hidden = as_int(text.get("hidden_size"))
        if head_dim is not None and head_dim > 0:
            head_size = head_dim
            inputs.append(f"head_size {head_size} from config.json {head_key}")
        elif hidden is not None and heads > 0:
            head_size = hidden // heads
            inputs.append(f"head_size {head_size} from config.json hidden_size {hidden} // {heads} heads")
        else:
            return "config.json has neither head_dim nor hidden_size"
        if head_size <= 0:
            return f"head_size {head_size} is not a size: not estimated"
        inputs.append(f"{_heads(kv_heads)} from config.json {kv_key}")
    no_window: tuple[int | None, ...] = (None,) * layers
    windows = (
        no_window
        if hybrid
        else _windows(text, model_type, layers, disabled=serve.get("disable_sliding_window") is True)
    )
    if isinstance(windows, str):
        return windows
    if mla and any(w is not None for w in windows):
        return "not modelled yet: MLA with sliding-window layers"
    dtype = _model_dtype(shape, serve)
    return _Model(layers, kv_heads, head_size, mla, windows, dtype, tuple(inputs), kinds, model_type)


def _model_dtype(shape: ModelShape, serve: Mapping[str, Any]) -> str:
    """`_get_and_verify_dtype`: `dtype` as written, else the checkpoint's (float32 checkpoints run in bfloat16)."""
    written = serve.get("dtype")
    if isinstance(written, str) and written != "auto":
        return written
    value = shape.dtype or "bfloat16"
    return "bfloat16" if value in ("float32", "float") else value


def _windows(text: Mapping[str, Any], model_type: str, layers: int, *, disabled: bool) -> tuple[int | None, ...] | str:
    """Each layer's sliding window, as the model code passes it to `Attention` (per_layer_sliding_window, else
    CacheConfig.sliding_window, which `create_engine_config` sets only when every layer slides)."""
    window = as_int(text.get("sliding_window"))
    if "sliding_window" not in text:
        window = DEFAULT_WINDOW.get(model_type)
    if model_type.startswith(("qwen2", "qwen3")) and not text.get("use_sliding_window"):
        window = None  # transformers' Qwen2/Qwen3 configs: sliding_window only with use_sliding_window
    if window == 0:
        window = None  # ModelConfig: a sliding_window of 0 disables it
    types = _layer_types(text, model_type, layers, window)
    if isinstance(types, str):
        return types
    if disabled or window is None:
        return (None,) * layers
    if types is None or all(t == "sliding_attention" for t in types):
        return (window,) * layers
    if model_type.startswith("qwen2"):
        return "not modelled yet: Qwen2 with sliding window on some layers only (vLLM refuses it)"
    return tuple(window if t == "sliding_attention" else None for t in types)


def _layer_types(text: Mapping[str, Any], model_type: str, layers: int, window: int | None) -> list[str] | str | None:
    """`hf_text_config.layer_types` as transformers' config class fills it."""
    written = text.get("layer_types")
    if isinstance(written, list):
        if len(written) < layers:
            return "config.json's layer_types is shorter than num_hidden_layers"
        return [str(t) for t in written]
    if model_type == "gemma2":
        return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(layers)]
    if model_type in ("gemma3", "gemma3_text"):
        pattern = as_int(text.get("sliding_window_pattern")) or 6
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
    if model_type in ("qwen2", "qwen3"):
        first = as_int(text.get("max_window_layers"))
        return [
            "sliding_attention" if window is not None and first is not None and i >= first else "full_attention"
            for i in range(layers)
        ]
    if "sliding_window" in text and window is not None and model_type not in ALL_SLIDE:
        return f"not modelled yet: which layers of a {model_type!r} model slide"
    return None


def _cache_dtype(serve: Mapping[str, Any], model_dtype: str) -> tuple[int, str] | str:
    """`kv_cache_dtype_str_to_dtype`: bytes per element, and the input as said."""
    written = serve.get("kv_cache_dtype", "auto")
    value = written if isinstance(written, str) else "auto"
    if value == "auto":
        size = DTYPE_BYTES.get(model_dtype)
        if size is None:
            return f"the model dtype {model_dtype!r} is not one profilekit knows"
        return size, f"kv_cache_dtype auto -> the model's {model_dtype}, {size} bytes"
    if value in ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"):
        return 1, f"kv_cache_dtype {value} -> 1 byte (serve.kv_cache_dtype)"
    if value in DTYPE_BYTES:
        return DTYPE_BYTES[value], f"kv_cache_dtype {value} -> {DTYPE_BYTES[value]} bytes (serve.kv_cache_dtype)"
    return f"not modelled yet: kv_cache_dtype {value!r}"


def pp_indices(layers: int, rank: int, stages: int) -> tuple[int, int]:
    """`vllm.distributed.utils.get_pp_indices` without VLLM_PP_LAYER_PARTITION: the remainder goes to the stages
    before the last, from the one before it backwards."""
    per = layers // stages
    partitions = [per] * stages
    remaining = layers % stages
    for i in range(2, remaining + 2):
        partitions[-i] += 1
    start = sum(partitions[:rank])
    return start, start + partitions[rank]


def kv_layout(
    config: Mapping[str, Any],
    *,
    version: str,
    serve: Mapping[str, Any],
    gpu: Gpu | None,
    mamba_mode: str | None = None,
    max_model_len: int | None = None,
) -> KvLayout | str:
    """The KV cache of the role on one GPU; a str says what is missing or not modelled (never a guess).

    A hybrid model needs the role's Mamba cache mode (`none` or `align`, RoleFacts.mamba_cache_mode: it follows
    prefix caching) and, in mode `none`, its max_model_len (the Mamba block size vLLM shows)."""
    shape = ModelShape.of(dict(config))
    model = _model(shape, config, serve)
    if isinstance(model, str):
        return model
    sizes = _parallel_sizes(serve, layers=len(model.windows))
    if isinstance(sizes, str):
        return sizes
    tp, pp, dcp = sizes
    cache = _cache_dtype(serve, model.dtype)
    if isinstance(cache, str):
        return cache
    elem, dtype_input = cache
    inputs = [*model.inputs, dtype_input]
    kv_heads = model.kv_heads if model.mla else max(1, model.kv_heads // tp)
    if not model.mla:
        replicated = " (replicated: more ranks than KV heads)" if tp > model.kv_heads else ""
        inputs.append(f"{_heads(kv_heads)} per GPU at tensor_parallel_size {tp}{replicated}")
    written_block = as_int(serve.get("block_size"))
    if written_block is not None and written_block < 1:
        return f"block_size {written_block} is not a size: not estimated"
    block = written_block or DEFAULT_BLOCK
    inputs.append(
        f"block_size {block} (serve.block_size)"
        if written_block
        else f"block_size {block}: vLLM's default on CUDA (an estimate where the attention backend decides)"
    )
    mamba: _Spec | None = None
    if model.kinds is not None:
        state = _hybrid(shape.text, model, model.kinds, serve, version=version, tp=tp)
        if isinstance(state, str):
            return state
        exported = _gdn_checkpoints(shape.text, model, serve, gpu, mamba_mode, version=version)
        if isinstance(exported, str):
            return exported
        if exported:
            state = dataclasses.replace(
                state,
                checkpoint_blocks=1,
                checkpoint_alignment=FLASHINFER_GDN_CHECKPOINT,
                inputs=(
                    *state.inputs,
                    f"FlashInfer's GDN prefill on {gpu.name if gpu else ''} exports prefill checkpoints (vLLM "
                    f"{version}, Mamba cache mode align): one more state page per request, blocks in multiples of "
                    f"{FLASHINFER_GDN_CHECKPOINT} tokens",
                ),
            )
        # one attention layer's page for one token (`_align_hybrid_block_size`: MLA's latent head has no V)
        attn_token = (1 if model.mla else 2) * kv_heads * model.head_size * elem
        found_mamba = _mamba_spec(
            state, attn_token, serve, mamba_mode, max_model_len, block=block, dcp=dcp, version=version, mla=model.mla
        )
        if isinstance(found_mamba, str):
            return found_mamba
        mamba, block, said_mamba = found_mamba
        inputs += [*state.inputs, *said_mamba]
    specs = _layer_specs(model, kv_heads, elem, block, version=version, mamba=mamba)
    sliding = any(s is not None and s.kind == "sliding_window" for s in specs)
    in_flight = 0
    if sliding:
        if dcp > 1:
            return "decode_context_parallel_size > 1 with sliding-window layers: vLLM does not support it"
        found = _in_flight(serve, pp)
        if isinstance(found, str):
            return found
        in_flight, said = found
        inputs.append(said)
    hybrid_off = serve.get("disable_hybrid_kv_cache_manager") is True
    groups = _groups(specs, pp, hybrid_off=hybrid_off)
    if isinstance(groups, str):
        return groups
    if dcp > 1:
        inputs.append(f"decode_context_parallel_size {dcp}: each GPU holds 1/{dcp} of a request's tokens")
    shown = _shown(groups)
    return KvLayout(
        specs=shown,
        block_size=block,
        inputs=tuple(inputs),
        groups=groups,
        dcp=dcp,
        in_flight=in_flight,
        null_block=at_least(version, "0.29.0"),
        stages=pp,
    )


def _parallel_sizes(serve: Mapping[str, Any], *, layers: int) -> tuple[int, int, int] | str:
    """tensor, pipeline and decode-context parallel sizes (1 when unset); a str for sizes vLLM never builds a KV
    cache with (refused by their own rules), so that no stage loop runs over them."""
    out: list[int] = []
    for key in ("tensor_parallel_size", "pipeline_parallel_size", "decode_context_parallel_size"):
        value = as_int(serve.get(key))
        if value is not None and value < 1:
            return f"{key} {value} is not a size: not estimated"
        out.append(value or 1)
    if out[1] > layers:
        return f"pipeline_parallel_size {out[1]} is more than the model's {layers} layers: not estimated"
    return out[0], out[1], out[2]


def _hybrid(
    text: Mapping[str, Any],
    model: _Model,
    kinds: tuple[str, ...],
    serve: Mapping[str, Any],
    *,
    version: str,
    tp: int,
) -> MambaState | str:
    """The Mamba state of a hybrid model's Mamba layers."""
    if model.mla and model.model_type not in KDA:
        return "not modelled yet: a hybrid model with multi-head latent attention"
    return mamba_state(text, model.model_type, kinds, version=version, tp=tp, model_dtype=model.dtype, serve=serve)


def _gdn_prefill_backend(serve: Mapping[str, Any]) -> str:
    """The GDN prefill backend asked for: `gdn_prefill_backend` (EngineArgs copies it into additional_config), else
    `additional_config.gdn_prefill_backend`, else auto."""
    written = serve.get("gdn_prefill_backend")
    extra = serve.get("additional_config")
    if written is None and isinstance(extra, Mapping):
        written = extra.get("gdn_prefill_backend")
    return str(written if written is not None else "auto").strip().lower()


def _gdn_checkpoints(
    text: Mapping[str, Any], model: _Model, serve: Mapping[str, Any], gpu: Gpu | None, mode: str | None, *, version: str
) -> bool | str:
    """From 0.33.0, in Mamba cache mode `align`, a Qwen gated delta net layer whose prefill backend is FlashInfer
    exports prefill checkpoints: one more state page per request (`num_prefill_checkpoint_blocks`), and the
    platform's block alignment a multiple of FLASHINFER_GDN_CHECKPOINT_ALIGNMENT (64). `_resolve_gdn_prefill_backend`
    picks FlashInfer, unless another backend is asked for, on CUDA at capability 9.x, and at 10.x or 12.x with a key
    head dim of 128 and CUDA runtime 13 or newer (which a profile does not say: said, not guessed)."""
    if model.model_type not in GDN or mode != "align" or not at_least(version, "0.33.0"):
        return False
    if _gdn_prefill_backend(serve) not in ("auto", "flashinfer"):
        return False
    not_modelled = "not modelled yet: vLLM 0.33.0's gated delta net prefill checkpoints in Mamba cache mode align"
    if gpu is None:
        return f"{not_modelled} (whether they are exported depends on the GPU: declare [hardware] gpu)"
    key_dim = as_int(text.get("linear_key_head_dim")) or 128
    if gpu.platform == "cuda" and gpu.capability[0] == 9:
        return True
    if gpu.platform == "cuda" and gpu.capability[0] in (10, 12) and key_dim == 128:
        return (
            f"{not_modelled} (FlashInfer's GDN prefill exports them on {gpu.name} with CUDA runtime 13 or newer, "
            "which a profile does not say)"
        )
    return False


def _mamba_spec(
    state: MambaState,
    attn_token: int,
    serve: Mapping[str, Any],
    mode: str | None,
    max_model_len: int | None,
    *,
    block: int,
    dcp: int,
    version: str,
    mla: bool = False,
) -> tuple[_Spec, int, list[str]] | str:
    """`Platform._align_hybrid_block_size` and `MambaBase.get_kv_cache_spec`: the attention block grows (in
    multiples of FlashAttention's kernel block, 16; with MLA of 128, which the TRTLLM/FlashInfer MLA decode kernels
    need and every MLA backend's kernel block divides) until one attention page holds a Mamba state, and the Mamba
    page is padded to the attention page; the spec and the attention block size."""
    if mode is None:
        return "the Mamba cache mode is unknown (it follows prefix caching, which the model decides)"
    if mode not in ("none", "align", "all"):
        return f"not modelled yet: Mamba cache mode {mode!r}"
    if serve.get("disable_hybrid_kv_cache_manager") is True or dcp > 1:
        return "not modelled yet: a hybrid model without the hybrid KV cache manager or with decode context parallelism"
    if max_model_len is None:
        return "max_model_len is needed: a Mamba layer's blocks per request depend on it"
    alignment = max(KERNEL_BLOCK, block, MLA_HYBRID_BLOCK if mla else 0)
    if mode == "align" and state.checkpoint_alignment:  # internal prefill checkpoints land on block boundaries
        alignment = math.lcm(alignment, state.checkpoint_alignment)
    if mode == "all":  # 0.27.0-0.31.0: blocks aligned to the Mamba chunk (or a written mamba_block_size)
        written = as_int(serve.get("mamba_block_size"))
        chunk = math.lcm(written if written is not None and written > 0 else state.chunk_size, alignment)
        attn_block = chunk * _cdiv(_cdiv(state.page_bytes, attn_token), chunk)
    else:
        attn_block = alignment * _cdiv(state.page_bytes, alignment * attn_token)
    if at_least(version, "0.32.0"):
        attn_block = KERNEL_BLOCK * _cdiv(attn_block, KERNEL_BLOCK)  # every backend's smallest kernel block
    aligned = max(block, attn_block)
    page = aligned * attn_token
    mamba_block = {"align": aligned, "all": attn_block}.get(mode, max_model_len)
    # MambaSpec.max_memory_usage_bytes: `all` keeps a state per block of the request, `align` the last two (and
    # MambaMixer2's prefill checkpoint from 0.32.0), `none` one
    pages = {"align": 2 + state.checkpoint_blocks, "all": 0}.get(mode, 1)
    held = f"{pages} state page{'s' if pages > 1 else ''}" if pages else f"a state page per {mamba_block} tokens"
    said = [
        f"attention block size {aligned}: one attention page of {page} bytes holds a Mamba state "
        f"(vLLM's page alignment; padding {100 * (page - state.page_bytes) / state.page_bytes:.2f} %)",
        f"Mamba cache mode {mode}: {held} per request and Mamba layer",
    ]
    return _Spec("mamba", mamba_block, page, None, pages), aligned, said


def _layer_specs(
    model: _Model, kv_heads: int, elem: int, block: int, *, version: str, mamba: _Spec | None = None
) -> list[_Spec | None]:
    """`Attention.get_kv_cache_spec` / `MLAAttention.get_kv_cache_spec` (a hybrid model's Mamba layers: `mamba`;
    its MLP-only layers: None) of every layer of the model."""
    specs: list[_Spec | None] = []
    for i, window in enumerate(model.windows):
        kind = model.kinds[i] if model.kinds is not None else "attention"
        if kind != "attention":
            specs.append(mamba if kind == "mamba" else None)
            continue
        if model.mla:
            specs.append(_Spec("mla", block, block * model.head_size * elem, None))
        elif window is not None:
            # the release's `_largest_kernel_block_within` for FlashAttention (MultipleOf(16)): before 0.30.0 the
            # smallest kernel block; from 0.30.0 the largest multiple of 16 within the page of `block_size`
            sw_block = (
                max(KERNEL_BLOCK, block // KERNEL_BLOCK * KERNEL_BLOCK) if at_least(version, "0.30.0") else KERNEL_BLOCK
            )
            specs.append(_Spec("sliding_window", sw_block, sw_block * kv_heads * 2 * model.head_size * elem, window))
        else:
            specs.append(_Spec("full", block, block * kv_heads * 2 * model.head_size * elem, None))
    return specs


def _in_flight(serve: Mapping[str, Any], pp: int) -> tuple[int, str] | str:
    """`VllmConfig.max_in_flight_tokens`: max_concurrent_batches x max_num_batched_tokens."""
    batched = as_int(serve.get("max_num_batched_tokens"))
    if batched is None:
        return (
            "max_num_batched_tokens is needed: the sliding-window layers hold their window plus the tokens in flight "
            "(give vLLM's resolved value)"
        )
    asynchronous = serve.get("async_scheduling")
    if pp > 1 and asynchronous is not False:
        return "not modelled yet: sliding-window layers with pipeline parallelism and async scheduling"
    batches = pp if asynchronous is False else 2
    said = "async scheduling: vLLM's default, assumed on"
    if isinstance(asynchronous, bool):
        said = "async_scheduling" if asynchronous else "async_scheduling off"
    return batches * batched, f"{batches} batches in flight x max_num_batched_tokens {batched} ({said})"


def _groups(
    layer_specs: list[_Spec | None], pp: int, *, hybrid_off: bool
) -> tuple[tuple[_Spec, tuple[int, ...]], ...] | str:
    """`get_kv_cache_groups` and `_project_kv_cache_groups_to_worker`: each group's spec and layers per stage
    (the pipeline stages split every decoder layer, those without a KV cache too)."""
    index = [i for i, s in enumerate(layer_specs) if s is not None]
    specs = [s for s in layer_specs if s is not None]
    kinds = {s.kind for s in specs}
    if hybrid_off and "full" in kinds and "sliding_window" in kinds:
        # `unify_hybrid_kv_cache_specs`: the sliding-window layers are allocated as full attention
        full_block = next(s.block_size for s in specs if s.kind == "full")
        full_page = next(s.page_bytes for s in specs if s.kind == "full")
        specs = [_Spec("full", full_block, full_page, None) for _ in specs]
    if len(set(specs)) > 1:
        unified = _unify(specs)
        if isinstance(unified, str):
            return unified
        specs = unified
    buckets: dict[_Spec, list[int]] = {}
    for i, spec in zip(index, specs, strict=True):
        buckets.setdefault(spec, []).append(i)
    # `_get_kv_cache_groups_uniform_page_size`: equal groups, the layers of a kind split round-robin
    sizes = [len(v) for v in buckets.values()]
    group_size = min(sizes)
    if max(sizes) < min(sizes) * 1.5:
        group_size = max(sizes)
    bounds = [pp_indices(len(layer_specs), r, pp) for r in range(pp)]
    out: list[tuple[_Spec, tuple[int, ...]]] = []
    for spec, layers in buckets.items():
        parts = _cdiv(len(layers), group_size)
        for i in range(parts):
            members = layers[i::parts]
            out.append((spec, tuple(sum(1 for m in members if lo <= m < hi) for lo, hi in bounds)))
    return tuple(out)


def _unify(specs: list[_Spec]) -> list[_Spec] | str:
    """`unify_kv_cache_spec_page_size`: smaller pages grow their block size up to the largest page."""
    largest = max(s.page_bytes for s in specs)
    out: list[_Spec] = []
    for s in specs:
        if largest % s.page_bytes:
            return "the layers' KV-cache pages cannot be unified (vLLM refuses: not divisible)"
        ratio = largest // s.page_bytes
        out.append(_Spec(s.kind, s.block_size * ratio, largest, s.window, s.state_pages))
    return out


def _shown(groups: tuple[tuple[_Spec, tuple[int, ...]], ...]) -> tuple[LayerSpec, ...]:
    """The layers of the first stage, one LayerSpec per kind of spec."""
    counts: dict[_Spec, int] = {}
    for spec, per_stage in groups:
        counts[spec] = counts.get(spec, 0) + per_stage[0]
    return tuple(LayerSpec(s.kind, n, s.block_size, s.page_bytes, s.window) for s, n in counts.items())
