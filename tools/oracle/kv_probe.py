"""The KV cache as one vLLM release builds it, for profilekit's capacity oracle (tests/oracle/test_capacity_kv.py).

Run with an oracle environment's python and PYTHONPATH (`build_env.OracleEnv.worker_environ()`); JSON lines in
on stdin, one answer a line on stdout (vLLM's logs go to stderr). A request:

    {"config": {config.json}, "serve": {dest: value}, "available": [bytes, ...], "gdn_prefill": "flashinfer"?}

(`gdn_prefill`: vLLM's GDN prefill backend resolution answers as on a Hopper GPU; see `_mamba_layer`.)

For each case the probe builds vLLM's `VllmConfig` from `EngineArgs(**serve)` on the CPU (the CPU platform's
`check_and_update_config` is replaced by a no-op, so the block size, the batch sizes and the KV-cache dtype are
what the request gives, as on a GPU host that takes them as written; `supported_dtypes` answers bfloat16, float16
and float32, as an Ampere or newer GPU does). Then, as the GPU model runner does, one KV-cache spec per attention
layer of every pipeline stage, with vLLM's own spec classes filled from vLLM's own answers:

- `ModelConfig.get_num_kv_heads(parallel_config)`, `get_head_size()`, `use_mla`, `get_num_layers(...)` and
  `vllm.distributed.utils.get_pp_indices` (the layers of each stage);
- the dtype by `kv_cache_dtype_str_to_dtype(cache_config.cache_dtype, model_config)` and the quantisation mode
  by `get_kv_quant_mode`, as `Attention.__init__`/`get_kv_cache_spec` do;
- the layer's sliding window as the model code of Llama, Mistral, Gemma-2/3 and Qwen2/3 passes it to
  `Attention(per_layer_sliding_window=...)`: `config.sliding_window` where `hf_text_config.layer_types[i]` is
  "sliding_attention", else `cache_config.sliding_window` (which `EngineArgs.create_engine_config` sets only
  for a model whose layers all slide); the sliding-window block size by the release's own
  `_largest_kernel_block_within` for a FlashAttention-like backend (kernel block sizes `MultipleOf(16)`).

A hybrid model (Nemotron-H, GraniteMoeHybrid, Jamba) first gets the platform's own hybrid alignment,
`Platform._align_hybrid_block_size(vllm_config, <FlashAttention's kernel blocks>)` (the attention block size and the
padded Mamba page), then a `MambaSpec` for each Mamba layer from the layer class's own `get_kv_cache_spec` (the
release's MambaMixer2/MambaMixer, with the state shapes and dtypes of the model class's own
`get_mamba_state_shape_from_config` / `get_mamba_state_dtype_from_config`); which layers are Mamba, attention or
neither is the model module's `ALL_DECODER_LAYER_TYPES` indexed as its code indexes it.

Then vLLM's own planning on those specs and the requested available bytes per GPU: the release's
`get_kv_cache_configs` (grouping, page-size unification, the null-block reserve where the release has it, the
fit check and the estimated maximum length its refusal names, the number of blocks),
`_max_memory_usage_bytes_from_groups` (the bytes needed, per stage) and `get_kv_cache_capacity` (the "GPU KV cache
size" tokens and the "Maximum concurrency" it logs). The answer:

    {"ok": true, "max_model_len": L, "layers": [[kind, count, block_size, page_bytes, window], ...],
     "results": [{"available": A, "fits": bool, "error": str|null, "error_estimate": E, "needed": N,
                  "num_blocks": B, "tokens": T, "concurrency": C}, ...]}

or {"ok": false, "error": "..."} when vLLM refuses the configuration itself (or stops on an assertion of its own).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
import shutil
import sys
import tempfile
from typing import Any

from probe_io import cpu_as_gpu_host, serve

_platform: Any = cpu_as_gpu_host()

from vllm.distributed.utils import get_pp_indices  # noqa: E402
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.v1 import kv_cache_interface as kvi  # noqa: E402

try:
    from vllm.v1.core import kv_cache_planning as planning  # 0.33.0
except ImportError:
    from vllm.v1.core import kv_cache_utils as planning  # type: ignore[no-redef]
from vllm.v1.core import kv_cache_utils  # noqa: E402

try:
    from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
except ImportError:  # pragma: no cover - older layout
    from vllm.utils import kv_cache_dtype_str_to_dtype  # type: ignore[no-redef]
from vllm.model_executor.layers.attention import attention as attention_module  # noqa: E402
from vllm.v1.attention.backend import MultipleOf  # noqa: E402


class _FlashAttentionLike:
    """The kernel block sizes of vLLM's FlashAttention backend on CUDA (`MultipleOf(16)`, every release); its
    `customize_spec` keeps the spec as it is (the base AttentionBackend's)."""

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec: Any = None) -> list[Any]:
        return [MultipleOf(16)]

    @staticmethod
    def customize_spec(spec: Any) -> Any:
        return spec

    @staticmethod
    def get_name() -> str:
        return "FLASH_ATTN"

    @staticmethod
    def supports_block_size(block_size: int | None) -> bool:
        return block_size is None or block_size % 16 == 0


# the hybrid block alignment asks the platform for every attention backend of the model (0.32.0 on): FlashAttention
_platform._find_non_ssm_backends = classmethod(lambda cls, vllm_config: [_FlashAttentionLike])


def _make(cls: type, **kwargs: Any) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in kwargs.items() if k in names})


def _sliding_block_size(per_token: int, block_size: int, spec: Any) -> int:
    """`Attention.get_kv_cache_spec`'s sliding-window block size (its release's `_largest_kernel_block_within`)."""
    fn = attention_module._largest_kernel_block_within
    params = list(inspect.signature(fn).parameters)
    source = inspect.getsource(attention_module.Attention.get_kv_cache_spec)
    budget = per_token * block_size if "page_budget = shared_page or" in source else None
    if len(params) >= 5:
        return int(fn(_FlashAttentionLike, per_token, budget, block_size, spec))
    return int(fn(_FlashAttentionLike, per_token, budget, block_size))


def layer_windows(vllm_config: Any) -> list[int | None]:
    """Each decoder layer's sliding window as the model code passes it to `Attention`."""
    mc = vllm_config.model_config
    text = mc.hf_text_config
    total = mc.get_total_num_hidden_layers() if hasattr(mc, "get_total_num_hidden_layers") else text.num_hidden_layers
    global_window = vllm_config.cache_config.sliding_window
    types = getattr(text, "layer_types", None)
    windows: list[int | None] = []
    for i in range(total):
        if types is not None and types[i] == "sliding_attention" and getattr(text, "sliding_window", None):
            windows.append(int(text.sliding_window))
        else:
            windows.append(global_window)
    return windows


def _model_class(vllm_config: Any) -> Any:
    from vllm.model_executor.models import ModelRegistry

    mc = vllm_config.model_config
    model_cls, _ = ModelRegistry.resolve_model_cls(mc.architecture, model_config=mc)
    return model_cls


def layer_kinds(vllm_config: Any) -> list[str]:
    """Each decoder layer's kind ("attention", "mamba" or "none": an MLP/MoE-only layer) as a hybrid model's
    vLLM code builds it: the module's `ALL_DECODER_LAYER_TYPES` indexed by `hybrid_override_pattern[i]`
    (Nemotron-H), `layer_types[i]` (GraniteMoeHybrid) or `layers_block_type[i]` (Jamba)."""
    text = vllm_config.model_config.hf_text_config
    module = sys.modules[_model_class(vllm_config).__module__]
    if hasattr(text, "is_kda_layer"):
        # Kimi Linear: the decoder layer builds KDA where `config.is_kda_layer(i)`, else multi-head latent attention
        return ["mamba" if text.is_kda_layer(i) else "attention" for i in range(text.num_hidden_layers)]
    if not hasattr(module, "ALL_DECODER_LAYER_TYPES"):
        # Qwen3-Next: the decoder layer builds a gated delta net where `config.layer_types[i] == "linear_attention"`
        # and attention where it is "full_attention" (the config class fills layer_types in)
        kinds_by_type = {"linear_attention": "mamba", "full_attention": "attention"}
        return [kinds_by_type[t] for t in list(text.layer_types)[: text.num_hidden_layers]]
    table = module.ALL_DECODER_LAYER_TYPES
    source = inspect.getsource(module)
    # the attribute the model code indexes (transformers' Jamba config has layer_types too, of other names)
    attribute = next(
        a for a in ("hybrid_override_pattern", "layer_types", "layers_block_type") if f"config.{a}[" in source
    )
    keys = getattr(text, attribute)
    kinds = []
    for key in list(keys)[: text.num_hidden_layers]:
        name = table[key].__name__
        kinds.append("mamba" if "Mamba" in name else "attention" if "Attention" in name else "none")
    return kinds


def _mamba_layer(vllm_config: Any, model_cls: Any, gdn_prefill: str | None) -> Any:
    """A Mamba layer of the model: its layer class with the state shapes and dtypes of the model class's own
    `get_mamba_state_shape_from_config` / `get_mamba_state_dtype_from_config` (what the layer computes); its own
    `get_kv_cache_spec` (MambaBase's, and the release's overrides) gives the spec.

    0.33.0's Qwen gated delta net sets, in `__init__`, a prefill checkpoint alignment when its prefill backend is
    FlashInfer in Mamba cache mode align. vLLM's own `_resolve_gdn_prefill_backend` decides, as `__init__` does; on
    this CPU it answers Triton, so a request with `"gdn_prefill": "flashinfer"` (a Hopper GPU, where vLLM picks
    FlashInfer unless another backend is asked for) has the resolution answer FlashInfer where it was asked for or
    left on auto, and nothing else changes."""
    module = sys.modules[model_cls.__module__]
    mixer = _mixer_class(module, vllm_config.model_config.hf_text_config)
    shapes = tuple(model_cls.get_mamba_state_shape_from_config(vllm_config))
    dtypes = tuple(model_cls.get_mamba_state_dtype_from_config(vllm_config))
    probe_cls = type(
        "ProbeMixer",
        (mixer,),
        {"get_state_shape": lambda self: shapes, "get_state_dtype": lambda self: dtypes},
    )
    layer = object.__new__(probe_cls)
    mixer_module = sys.modules[mixer.__module__]
    resolve = getattr(mixer_module, "_resolve_gdn_prefill_backend", None)
    if resolve is not None and "_checkpoint_alignment" in inspect.getsource(mixer):
        requested, active = resolve(vllm_config)
        if gdn_prefill == "flashinfer" and requested in ("auto", "flashinfer"):
            active = "flashinfer"
        layer.vllm_config = vllm_config
        layer._checkpoint_alignment = None
        if vllm_config.cache_config.mamba_cache_mode == "align" and active == "flashinfer":
            from vllm.v1.attention.backends.gdn_attn import FLASHINFER_GDN_CHECKPOINT_ALIGNMENT

            layer._checkpoint_alignment = FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
    return layer


def _mixer_class(module: Any, text: Any) -> Any:
    """The Mamba layer class the model module builds: MambaMixer2, MambaMixer, Kimi's KDA layer (the decoder layer
    picks Kimi-K3's full-rank-gate class or Kimi Linear's by `linear_attn_config.use_full_rank_gate`), or
    (Qwen3-Next) the one MambaBase subclass it imports (the gated delta net)."""
    if hasattr(text, "is_kda_layer"):
        full_rank = bool(text.linear_attn_config.get("use_full_rank_gate", False))
        return getattr(module, "KimiK3DeltaAttention" if full_rank else "KimiLinearGatedDeltaNetAttention")
    for name in ("MambaMixer2", "MambaMixer"):
        if hasattr(module, name):
            return getattr(module, name)
    from vllm.model_executor.layers.mamba.abstract import MambaBase

    found = [
        v for v in vars(module).values() if isinstance(v, type) and issubclass(v, MambaBase) and v is not MambaBase
    ]
    if len(found) != 1:
        raise RuntimeError(f"no single Mamba layer class in {module.__name__}: {found}")
    return found[0]


def build_specs(vllm_config: Any, gdn_prefill: str | None = None) -> list[dict[str, Any]]:
    """One `{layer name: KVCacheSpec}` per pipeline stage (tensor-parallel ranks of a stage are equal)."""
    mc = vllm_config.model_config
    pc = vllm_config.parallel_config
    cc = vllm_config.cache_config
    kinds: list[str] | None = None
    mamba: Any = None
    if mc.is_hybrid:
        kinds = layer_kinds(vllm_config)
        layer = _mamba_layer(vllm_config, _model_class(vllm_config), gdn_prefill)
        # the built model's Mamba layers, where vLLM's own functions look them up (`get_layers_from_vllm_config`:
        # their prefill checkpoint alignment), then the attention block size and the padded Mamba page, as the
        # platform aligns them once the model is loaded (`Platform._align_hybrid_block_size`, FlashAttention's
        # kernel blocks)
        forward_context = vllm_config.compilation_config.static_forward_context
        for i, kind in enumerate(kinds):
            if kind == "mamba":
                forward_context[f"model.layers.{i}.mixer"] = layer
        _platform._align_hybrid_block_size(vllm_config, _FlashAttentionLike)
        mamba = layer.get_kv_cache_spec(vllm_config)
    kv_heads = mc.get_num_kv_heads(pc)
    head_size = mc.get_head_size()
    cache_dtype = cc.cache_dtype
    dtype = kv_cache_dtype_str_to_dtype(cache_dtype, mc)
    quant = kvi.get_kv_quant_mode(cache_dtype)
    block_size = cc.block_size
    windows = layer_windows(vllm_config)
    total = len(windows)
    if kinds is not None:
        total = len(kinds)
        windows = [None] * total
    stages: list[dict[str, Any]] = []
    for rank in range(pc.pipeline_parallel_size):
        start, end = get_pp_indices(total, rank, pc.pipeline_parallel_size)
        specs: dict[str, Any] = {}
        for i in range(start, end):
            name = f"model.layers.{i}.self_attn.attn"
            window = windows[i]
            if kinds is not None and kinds[i] != "attention":
                if kinds[i] == "mamba":
                    specs[f"model.layers.{i}.mixer"] = mamba
                continue
            if mc.use_mla:
                specs[name] = _make(
                    kvi.MLAAttentionSpec,
                    block_size=block_size,
                    num_kv_heads=1,
                    max_tp_shards=1,
                    head_size=head_size,
                    dtype=dtype,
                    cache_dtype_str=cache_dtype,
                    kv_quant_mode=quant,
                )
            elif window is not None:
                one = _make(
                    kvi.SlidingWindowSpec,
                    block_size=1,
                    num_kv_heads=kv_heads,
                    head_size=head_size,
                    head_size_v=head_size,
                    dtype=dtype,
                    kv_quant_mode=quant,
                    sliding_window=window,
                )
                sw_block = _sliding_block_size(one.real_page_size_bytes, block_size, one)
                specs[name] = dataclasses.replace(one, block_size=sw_block)
            else:
                specs[name] = _make(
                    kvi.FullAttentionSpec,
                    block_size=block_size,
                    num_kv_heads=kv_heads,
                    head_size=head_size,
                    head_size_v=head_size,
                    dtype=dtype,
                    kv_quant_mode=quant,
                )
        stages.append(specs)
    return stages


def _kind(spec: Any) -> str:
    if isinstance(spec, kvi.MambaSpec):
        return "mamba"
    if isinstance(spec, kvi.MLAAttentionSpec):
        return "mla"
    if isinstance(spec, kvi.SlidingWindowSpec):
        return "sliding_window"
    return "full"


def _groups(vllm_config: Any, stages: list[dict[str, Any]]) -> tuple[Any, list[Any]]:
    """The global groups (0.33.0: `get_global_kv_cache_groups`) and each stage's projection."""
    if hasattr(planning, "get_global_kv_cache_groups"):
        global_groups = planning.get_global_kv_cache_groups(vllm_config, stages)
    else:
        merged: dict[str, Any] = {}
        for stage in stages:
            merged.update(stage)
        global_groups = planning.get_kv_cache_groups(vllm_config, merged)
    return global_groups, [planning._project_kv_cache_groups_to_worker(global_groups, s) for s in stages]


def _needed(vllm_config: Any, groups: list[Any]) -> int:
    fn = planning._max_memory_usage_bytes_from_groups
    if len(inspect.signature(fn).parameters) == 3:
        from vllm.v1.core.kv_cache_config_builder import get_kv_cache_config_builder

        return int(fn(get_kv_cache_config_builder(vllm_config), vllm_config, groups))
    return int(fn(vllm_config, groups))


def plan(vllm_config: Any, stages: list[dict[str, Any]], available: int) -> dict[str, Any]:
    """vLLM's `get_kv_cache_configs` for `available` bytes on every GPU, and what it logs."""
    copies = [dict(s) for s in stages]
    global_groups, projected = _groups(vllm_config, copies)
    needed = max(_needed(vllm_config, g) for g in projected)
    out: dict[str, Any] = {"available": available, "needed": needed}
    try:
        if hasattr(planning, "get_global_kv_cache_groups"):
            configs = planning.get_kv_cache_configs(vllm_config, copies, [available] * len(copies), global_groups)
        else:
            configs = planning.get_kv_cache_configs(vllm_config, [dict(s) for s in stages], [available] * len(copies))
    except ValueError as exc:
        out.update(fits=False, error=str(exc), num_blocks=None, tokens=None, concurrency=None)
        found = re.search(r"estimated maximum model length is (\d+)", str(exc))
        out["error_estimate"] = int(found.group(1)) if found else 0
        return out
    tokens, concurrency = kv_cache_utils.get_kv_cache_capacity(vllm_config, configs[0])
    out.update(fits=True, error=None, num_blocks=configs[0].num_blocks, tokens=tokens, concurrency=concurrency)
    return out


def answer(request: dict[str, Any]) -> dict[str, Any]:
    model_dir = tempfile.mkdtemp(prefix="profilekit-kv-probe-")
    try:
        with open(os.path.join(model_dir, "config.json"), "w") as handle:
            json.dump(request["config"], handle)
        serve = dict(request.get("serve") or {})
        try:
            args = EngineArgs(model=model_dir, skip_tokenizer_init=True, **serve)
            vllm_config = args.create_engine_config()
        except Exception as exc:  # vLLM refuses the case itself
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        if vllm_config.cache_config.block_size is None:
            vllm_config.cache_config.block_size = 16  # CUDA's default for the FlashAttention backend
        if hasattr(vllm_config.cache_config, "get_resolved_kv_cache_layout"):
            # 0.33.0: the engine core resolves the layout from the backends; FlashAttention states no
            # preference, so the default layer-outermost NHD (LBNHC) layout
            vllm_config.cache_config.kv_cache_layout = "NHD"
        try:
            stages = build_specs(vllm_config, request.get("gdn_prefill"))
            probe_plan = _layers_and_results(vllm_config, stages, [int(a) for a in request["available"]])
        except (AssertionError, ValueError) as exc:
            # vLLM would stop on its own assertion (e.g. DCP with sliding window) or refuse the platform's hybrid
            # alignment (e.g. a KDA recurrent state dtype it does not support)
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        return {
            "ok": True,
            "max_model_len": vllm_config.model_config.max_model_len,
            "max_num_batched_tokens": vllm_config.scheduler_config.max_num_batched_tokens,
            "async_scheduling": bool(vllm_config.scheduler_config.async_scheduling),
            "stage_layers": [len(s) for s in stages],
            "mamba_cache_mode": getattr(vllm_config.cache_config, "mamba_cache_mode", "none"),
            **probe_plan,
        }
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)


def _layers_and_results(vllm_config: Any, stages: list[dict[str, Any]], amounts: list[int]) -> dict[str, Any]:
    """The layers of the first stage by group spec, and the planning of each amount of memory."""
    _, projected = _groups(vllm_config, [dict(s) for s in stages])
    kinds: dict[tuple[Any, ...], int] = {}
    for group in projected[0]:
        spec = group.kv_cache_spec
        window = spec.sliding_window if isinstance(spec, kvi.SlidingWindowSpec) else None
        key = (_kind(spec), spec.block_size, spec.page_size_bytes, window)
        kinds[key] = kinds.get(key, 0) + len(group.layer_names)
    layers = [[k[0], n, k[1], k[2], k[3]] for k, n in kinds.items()]
    return {"layers": layers, "results": [plan(vllm_config, stages, a) for a in amounts]}


if __name__ == "__main__":
    sys.exit(serve(answer))
