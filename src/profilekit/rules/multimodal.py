"""Multimodal options: what `MultiModalConfig` and `VllmConfig` refuse, for a multimodal model only.

vLLM builds `MultiModalConfig` only for a model its registry marks multimodal (`ModelConfig.__post_init__`);
profilekit reads that from the model's config.json (an encoder's config: `vision_config`, `audio_config`, ...).
A text-only model ignores these options, and so do these rules; without a config.json they stay silent.
Sources (every release unless said): `vllm/config/multimodal.py` `MultiModalConfig._validate_multimodal_config`
and `get_mm_processor_device_type` (0.28.0+), `vllm/config/model.py` `ModelConfig.verify_with_parallel_config`,
`vllm/config/vllm.py` `VllmConfig.__post_init__` (`--language-model-only`, 0.29.0+; torch_shm without spawn).
The processor-on-the-GPU check (`validate_mm_processor_device`, 0.28.0+) is judged as on a CUDA host: vLLM skips it
on a CPU-only platform, so the CPU oracle accepts what a GPU host refuses.
The FP8 scale file checks read the serving host's file system and are left to vLLM. The video pruning method is
checked against the registry's facts of the architecture (`profilekit.vllm.registry`): multimodal, and the methods
its class lists (`ModelConfig.__post_init__`, every release); so are the renderer workers of a multimodal pooling
model (the runner as `ModelConfig._get_runner_type` resolves it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.archsupport import registered
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import serve_int, shown
from profilekit.rules.modelkind import _encoder_decoder

if TYPE_CHECKING:
    from profilekit.vllm.registry import Registry

# config.json keys of a multimodal model's encoder (vLLM asks its registry; profilekit reads the config)
MULTIMODAL_KEYS = ("vision_config", "audio_config", "vision_tower_config", "speech_config")
SHM_OBJECT_SIZE_DEFAULT = 128  # MultiModalConfig.mm_shm_cache_max_object_size_mb
# MultiModalConfig._validate_multimodal_config, built in ModelConfig.__post_init__
MM_VALIDATOR = 20
# VllmConfig.__post_init__ (STAGE_POST_INIT): ModelConfig.verify_with_parallel_config ends with torch_shm
# (after the context-parallel heads check, -20); then --language-model-only (before sampling replay, -10)
TORCH_SHM_PARALLEL = -15
LANGUAGE_MODEL_ONLY = -12
VIDEO_PRUNING = MM_VALIDATOR + 2  # ModelConfig.__post_init__, right after MultiModalConfig is built
RENDERER_WORKERS = VIDEO_PRUNING + 1  # ... then the renderer workers against a pooling model's processor cache
TORCH_SHM_SPAWN: Order = (STAGE_POST_INIT, 6, 1)  # after the spec-decode metrics check (6), before the platform hook
PROCESSOR_DEVICE: Order = (STAGE_POST_INIT, 7, 1)  # _validate_mm_processor_device, right after the platform hook

# torch.device's device types (torch 2.13); an index is a plain decimal number
_TORCH_DEVICE = re.compile(
    r"(?:cpu|cuda|ipu|xpu|mkldnn|opengl|opencl|ideep|hip|ve|fpga|maia|xla|lazy|vulkan|mps|meta|hpu|mtia|"
    r"privateuseone)(?::(?:0|[1-9][0-9]*))?"
)


def is_multimodal(f: RoleFacts) -> bool:
    config = f.model.config
    return isinstance(config, dict) and any(key in config for key in MULTIMODAL_KEYS)


def _refused(f: RoleFacts, what: str, message: str) -> str:
    return f'{what} for the multimodal {f.model.architecture} model; vLLM {f.version} refuses to start: "{message}"'


@rule(
    "mm-shm-cache-object-size",
    Severity.ERROR,
    "mm_shm_cache_max_object_size_mb changed while the multimodal processor cache is not the shared-memory one",
    source="vllm/config/multimodal.py MultiModalConfig._validate_multimodal_config",
)
def shm_object_size(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    size = serve_int(f, "mm_shm_cache_max_object_size_mb")
    cache = f.serve.get("mm_processor_cache_type", "lru")
    if not is_multimodal(f) or size is None or size == SHM_OBJECT_SIZE_DEFAULT or cache == "shm":
        return []
    message = "'mm_shm_cache_max_object_size_mb' should only be set when 'mm_processor_cache_type' is 'shm'."
    return [
        Hit(
            "mm-shm-cache-object-size",
            _refused(
                f, f"mm_shm_cache_max_object_size_mb = {size} with mm_processor_cache_type = {shown(cache)}", message
            ),
            [*f.locs("serve", "mm_shm_cache_max_object_size_mb"), *f.locs("serve", "mm_processor_cache_type")],
            'set mm_processor_cache_type = "shm", or remove mm_shm_cache_max_object_size_mb',
            role=f.role.name,
            order=order.built("ModelConfig", f.version, MM_VALIDATOR),
        )
    ]


@rule(
    "mm-encoder-fp8-scale",
    Severity.ERROR,
    "an FP8 scale path for the multimodal encoder without mm_encoder_attn_dtype = fp8, or both scale paths",
    source="vllm/config/multimodal.py MultiModalConfig._validate_multimodal_config",
)
def encoder_fp8_scale(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    load, save = f.serve.get("mm_encoder_fp8_scale_path"), f.serve.get("mm_encoder_fp8_scale_save_path")
    if not is_multimodal(f) or (load is None and save is None):
        return []
    written = [k for k, v in (("mm_encoder_fp8_scale_path", load), ("mm_encoder_fp8_scale_save_path", save)) if v]
    dtype = f.serve.get("mm_encoder_attn_dtype")
    if dtype != "fp8":
        what = f'{" and ".join(written) or "an FP8 scale path"} without mm_encoder_attn_dtype = "fp8"'
        message = (
            "'mm_encoder_fp8_scale_path' and 'mm_encoder_fp8_scale_save_path' require "
            "'mm_encoder_attn_dtype' to be 'fp8'."
        )
        fix = 'set mm_encoder_attn_dtype = "fp8", or remove the scale path'
        locs = [loc for key in written for loc in f.locs("serve", key)]
    elif load is not None and save is not None:
        what = "both mm_encoder_fp8_scale_path and mm_encoder_fp8_scale_save_path"
        message = (
            "'mm_encoder_fp8_scale_save_path' cannot be used with "
            "'mm_encoder_fp8_scale_path' (saving requires dynamic scaling)."
        )
        fix = "keep one of them: a scale file to load, or a path to save dynamically computed scales to"
        locs = [*f.locs("serve", "mm_encoder_fp8_scale_path"), *f.locs("serve", "mm_encoder_fp8_scale_save_path")]
    else:
        return []
    return [
        Hit(
            "mm-encoder-fp8-scale",
            _refused(f, what, message),
            locs,
            fix,
            role=f.role.name,
            order=order.built("ModelConfig", f.version, MM_VALIDATOR + 1),
        )
    ]


def _bad_device(device: Any) -> bool:
    """`torch.device(device)` would raise (an integer index is left out: it needs an accelerator)."""
    if isinstance(device, bool) or not isinstance(device, str | int):
        return True
    return isinstance(device, str) and _TORCH_DEVICE.fullmatch(device) is None


@rule(
    "mm-processor-device-invalid",
    Severity.ERROR,
    'a "device" in mm_processor_kwargs that is not a torch device',
    releases=">=0.28.0",
    source="vllm/config/multimodal.py MultiModalConfig.get_mm_processor_device_type",
)
def processor_device(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    kwargs = f.serve.get("mm_processor_kwargs")
    if not is_multimodal(f) or not isinstance(kwargs, dict) or kwargs.get("device") is None:
        return []
    device = kwargs["device"]
    if not _bad_device(device):
        return []
    message = (
        f'Invalid "device" in mm_processor_kwargs: {_py_repr(device)}. Expected a torch device such as '
        '"cpu", "cuda" or "cuda:0".'
    )
    return [
        Hit(
            "mm-processor-device-invalid",
            _refused(f, f"mm_processor_kwargs.device = {shown(device)}", message),
            f.loc("serve", "mm_processor_kwargs", "device") or f.locs("serve", "mm_processor_kwargs"),
            'name a torch device ("cpu", "cuda" or "cuda:0"), or remove "device"',
            role=f.role.name,
            order=PROCESSOR_DEVICE,
        )
    ]


def _processor_device_type(f: RoleFacts) -> str | None:
    """The torch device type the multimodal processor runs on, on a CUDA host; None: the default (CPU, or "auto")."""
    kwargs = f.serve.get("mm_processor_kwargs")
    device = kwargs.get("device") if isinstance(kwargs, dict) else None
    if device is None:
        # --mm-processor-device folds into the kwargs (MultiModalConfig.fold_mm_processor_device), but the catalogue,
        # read on a CPU host, offers only auto and cpu (rules/options.py reports another value)
        return None
    if isinstance(device, int) and not isinstance(device, bool):
        return "cuda" if device >= 0 else None
    if isinstance(device, str) and _TORCH_DEVICE.fullmatch(device):
        return device.split(":", 1)[0]
    return None  # not a torch device: mm-processor-device-invalid


def _encode_only(f: RoleFacts) -> bool:
    """`ECTransferConfig.is_encode_only`: an EC producer that is not also a consumer."""
    ec = f.serve.get("ec_transfer_config")
    return isinstance(ec, dict) and ec.get("ec_connector") is not None and ec.get("ec_role") == "ec_producer"


@rule(
    "mm-processor-device-accelerator",
    Severity.ERROR,
    "the multimodal processor on the GPU on an instance that also runs the language model (not an EC producer)",
    releases=">=0.28.0",
    source="vllm/config/multimodal.py MultiModalConfig.validate_mm_processor_device",
)
def processor_on_accelerator(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if not is_multimodal(f) or _processor_device_type(f) != "cuda" or _encode_only(f):
        return []
    message = (
        "Cannot run the multi-modal processor on 'cuda': this instance also runs the language model. The processor "
        "would share the device with the model's forward pass, so its transform kernels contend with that compute, "
        "and because it runs in the API-server process its allocations are outside the memory the engine profiled "
        "for its KV cache -- risking OOM or a silently shrunken cache. Accelerator preprocessing is only supported "
        "on an encode-only instance of an encode/prefill/decode deployment (an EC producer that is not also a "
        "consumer), which runs no forward pass and allocates no KV cache. Use --mm-processor-device=cpu, or drop "
        '"device" from --mm-processor-kwargs.'
    )
    kwargs = f.serve.get("mm_processor_kwargs")
    written = f"mm_processor_kwargs.device = {shown(kwargs['device'])}" if isinstance(kwargs, dict) else ""
    return [
        Hit(
            "mm-processor-device-accelerator",
            _refused(f, written + " on a GPU host", message),
            f.loc("serve", "mm_processor_kwargs", "device") or f.locs("serve", "mm_processor_kwargs"),
            'drop "device" from mm_processor_kwargs (or set it to "cpu"), or serve this role as an encoder: '
            'ec_transfer_config.ec_role = "ec_producer"',
            role=f.role.name,
            order=PROCESSOR_DEVICE,
        )
    ]


def _py_repr(value: Any) -> str:
    """Python's repr of a JSON value, as vLLM's `{device!r}` shows it."""
    return repr(value)


def _world_size_across_dp(f: RoleFacts) -> int | None:
    sizes = [
        serve_int(f, key, 1)
        for key in (
            "tensor_parallel_size",
            "pipeline_parallel_size",
            "prefill_context_parallel_size",
            "data_parallel_size",
        )
    ]
    total = 1
    for size in sizes:
        if size is None:
            return None
        total *= size
    return total


@rule(
    "mm-tensor-ipc-torch-shm-parallel",
    Severity.ERROR,
    "mm_tensor_ipc = torch_shm with tensor, pipeline, prefill-context or data parallelism",
    source="vllm/config/model.py ModelConfig.verify_with_parallel_config",
)
def torch_shm_parallel(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    world = _world_size_across_dp(f)
    if not is_multimodal(f) or f.serve.get("mm_tensor_ipc") != "torch_shm" or world is None or world <= 1:
        return []
    message = (
        "mm_tensor_ipc='torch_shm' is not supported with data_parallel_size > 1 or tensor_parallel_size > 1 "
        "or pipeline_parallel_size > 1."
    )
    keys = ("tensor_parallel_size", "pipeline_parallel_size", "prefill_context_parallel_size", "data_parallel_size")
    return [
        Hit(
            "mm-tensor-ipc-torch-shm-parallel",
            _refused(f, f'mm_tensor_ipc = "torch_shm" with {world} processes across parallelism', message),
            [*f.locs("serve", "mm_tensor_ipc"), *(loc for key in keys for loc in f.locs("serve", key))],
            'remove mm_tensor_ipc ("direct_rpc" is the default), or serve on one process',
            role=f.role.name,
            order=(STAGE_POST_INIT, TORCH_SHM_PARALLEL),
        )
    ]


@rule(
    "mm-tensor-ipc-torch-shm-spawn",
    Severity.ERROR,
    "mm_tensor_ipc = torch_shm without VLLM_WORKER_MULTIPROC_METHOD=spawn",
    source="vllm/config/vllm.py VllmConfig.__post_init__",
)
def torch_shm_spawn(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    method = f.env_value("VLLM_WORKER_MULTIPROC_METHOD")
    if not is_multimodal(f) or f.serve.get("mm_tensor_ipc") != "torch_shm" or method == "spawn":
        return []
    message = "torch_shm is known to fail without VLLM_WORKER_MULTIPROC_METHOD set to spawn"
    what = 'mm_tensor_ipc = "torch_shm" with ' + (
        "VLLM_WORKER_MULTIPROC_METHOD unset" if method is None else f"VLLM_WORKER_MULTIPROC_METHOD={method}"
    )
    return [
        Hit(
            "mm-tensor-ipc-torch-shm-spawn",
            _refused(f, what, message),
            [*f.locs("serve", "mm_tensor_ipc"), *f.locs("env", "VLLM_WORKER_MULTIPROC_METHOD")],
            'set env VLLM_WORKER_MULTIPROC_METHOD = "spawn", or remove mm_tensor_ipc',
            role=f.role.name,
            order=TORCH_SHM_SPAWN,
        )
    ]


@rule(
    "language-model-only-mm-encoder-graphs",
    Severity.ERROR,
    "language_model_only with compilation_config.cudagraph_mm_encoder = true",
    releases=">=0.29.0",
    source="vllm/config/vllm.py VllmConfig.__post_init__",
)
def language_model_only_graphs(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    compilation = f.serve.get("compilation_config")
    graphs = isinstance(compilation, dict) and compilation.get("cudagraph_mm_encoder") is True
    if not is_multimodal(f) or f.serve.get("language_model_only") is not True or not graphs:
        return []
    message = (
        "--language-model-only is incompatible with cudagraph_mm_encoder=True, since it disables all multimodal "
        "inputs and the multimodal encoder is never run. Please disable one of them."
    )
    return [
        Hit(
            "language-model-only-mm-encoder-graphs",
            _refused(f, "language_model_only = true with compilation_config.cudagraph_mm_encoder = true", message),
            [
                *f.locs("serve", "language_model_only"),
                *(
                    f.loc("serve", "compilation_config", "cudagraph_mm_encoder")
                    or f.locs("serve", "compilation_config")
                ),
            ],
            "remove compilation_config.cudagraph_mm_encoder, or language_model_only",
            role=f.role.name,
            order=(STAGE_POST_INIT, LANGUAGE_MODEL_ONLY),
        )
    ]


@rule(
    "video-pruning-method-unsupported",
    Severity.ERROR,
    "video_pruning_method that the multimodal architecture's class does not list (with video_pruning_rate > 0)",
    source="vllm/config/model.py ModelConfig.__post_init__",
)
def video_pruning_method(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    rate = f.serve.get("video_pruning_rate")
    if isinstance(rate, bool) or not isinstance(rate, int | float) or rate <= 0:
        return []
    found = registered(f)
    if found is None or found[0].flag(found[1], "supports_multimodal") is not True:
        return []
    registry, arch = found
    supported = registry.video_pruning_methods(arch) or ()
    method = f.serve.get("video_pruning_method", "evs")
    if not supported or method in supported:
        return []
    message = (
        f"Video pruning method '{method}' is not supported by {registry.class_name(arch)} (supported methods: "
        f"{supported})."
    )
    return [
        Hit(
            "video-pruning-method-unsupported",
            _refused(f, f"video_pruning_method = {shown(method)} with video_pruning_rate = {rate}", message),
            [*f.loc("serve", "video_pruning_method"), *f.loc("serve", "video_pruning_rate"), *f.model.locations],
            f"set video_pruning_method to one of {', '.join(shown(m) for m in supported)}, or remove video_pruning_rate",
            role=f.role.name,
            order=order.built("ModelConfig", f.version, VIDEO_PRUNING),
        )
    ]


def pooling_runner(f: RoleFacts, registry: Registry, arch: str) -> bool | None:
    """Whether `ModelConfig.runner_type` is "pooling"; None when the model folder decides (`--runner auto` for a
    generative architecture: a sentence-transformers folder makes it a pooling model)."""
    runner = f.serve.get("runner", "auto")
    if runner != "auto":
        return bool(runner == "pooling")
    if f.serve.get("convert", "auto") not in ("auto", "none"):
        return True
    if registry.flag(arch, "is_pooling_model"):
        return True
    return None


@rule(
    "renderer-workers-mm-cache-pooling",
    Severity.ERROR,
    "renderer_num_workers > 1 with the multimodal processor cache on, for a multimodal pooling model",
    source="vllm/config/model.py ModelConfig.__post_init__",
)
def renderer_workers_mm_cache(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    workers = serve_int(f, "renderer_num_workers", 1)
    cache = f.serve.get("mm_processor_cache_gb", 4)
    if workers is None or workers <= 1 or isinstance(cache, bool) or not isinstance(cache, int | float) or cache <= 0:
        return []
    found = registered(f)
    if found is None or found[0].flag(found[1], "supports_multimodal") is not True:
        return []
    if f.model.config is not None and _encoder_decoder(f.model.config):
        return []  # vLLM turns the processor cache off for an encoder-decoder model
    if pooling_runner(f, *found) is not True:
        return []
    message = (
        "Cannot use --renderer-num-workers > 1 with the multimodal processor cache enabled for pooling models. "
        "Pooling preprocessing runs on the renderer workers, and the cache is not thread-safe. Please set "
        "--renderer-num-workers 1 (the default), or disable the cache with --mm-processor-cache-gb 0."
    )
    return [
        Hit(
            "renderer-workers-mm-cache-pooling",
            _refused(
                f, f"renderer_num_workers = {workers} with mm_processor_cache_gb = {shown(cache)} (pooling)", message
            ),
            [
                *f.loc("serve", "renderer_num_workers"),
                *f.loc("serve", "mm_processor_cache_gb"),
                *f.loc("serve", "runner"),
                *f.loc("serve", "convert"),
            ],
            "set renderer_num_workers = 1, or mm_processor_cache_gb = 0",
            role=f.role.name,
            order=order.built("ModelConfig", f.version, RENDERER_WORKERS),
        )
    ]
