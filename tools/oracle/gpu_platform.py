"""The oracle worker's GPU platform mode: vLLM's own CUDA or ROCm platform, answering as one declared GPU.

Chosen at worker start with ``PROFILEKIT_ORACLE_GPU`` (JSON: ``name``, ``platform`` "cuda"/"rocm",
``capability`` [major, minor], ``memory_bytes``, ``device_name``, ``arch`` (gfx target, ROCm), ``count``).
``install(spec)`` runs after vLLM has been imported under its CPU platform (tools/oracle/worker.py) and:

1. makes ``torch.cuda``'s device queries answer as ``count`` such devices (``is_available``,
   ``device_count``, ``get_device_properties``, ``get_device_capability``, ``get_device_name``,
   ``is_initialized``, ``current_device``, ``mem_get_info``, ``is_bf16_supported``) - the places vLLM asks
   torch directly, e.g. ``vllm/platforms/rocm.py`` reading the gfx architecture at import;
2. puts an empty stand-in for each compiled extension that ``vllm/platforms/cuda.py`` / ``rocm.py`` import
   unguarded at module level (``vllm._C_stable_libtorch``), so those modules load; every other compiled
   module stays missing, and a case that reaches one is ``undecidable`` (``undecidable_reason``);
3. imports the release's ``vllm.platforms.cuda`` (``NvmlCudaPlatform``) or ``vllm.platforms.rocm``
   (``RocmPlatform``) and subclasses it, overriding ONLY the device queries (capability, name, uuid, total
   memory, device count, NVLink/XGMI topology, NUMA and PCI queries, the NVML warnings); every check and
   config hook is the release's own;
4. makes the instance vLLM's current platform: ``vllm.platforms._current_platform``, and every module-level
   name that held the CPU platform instance (``from vllm.platforms import current_platform`` captured at
   import; ``sys.modules`` is walked), then drops the ``functools`` caches of vLLM's functions so nothing
   computed under the CPU platform is reused.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import re
import sys
import types
from typing import Any

GPU_ENV = "PROFILEKIT_ORACLE_GPU"
CACHE_ENV = "PROFILEKIT_ORACLE_VLLM_CACHE"  # optional: the VLLM_CACHE_ROOT to use (a fresh folder by default)

# compiled extensions that vllm/platforms/{cuda,rocm}.py import without a guard (0.27.0-0.33.0)
STUBBED = ("vllm._C_stable_libtorch",)
STUB_MARK = "__profilekit_oracle_stub__"


def spec_from_environ() -> dict[str, Any] | None:
    raw = os.environ.get(GPU_ENV, "").strip()
    if not raw:
        return None
    spec = json.loads(raw)
    for key in ("name", "platform", "capability", "memory_bytes", "device_name"):
        if key not in spec:
            raise ValueError(f"{GPU_ENV}: {key!r} is missing")
    if spec["platform"] not in ("cuda", "rocm"):
        raise ValueError(f"{GPU_ENV}: platform must be cuda or rocm, not {spec['platform']!r}")
    spec.setdefault("arch", "")
    spec["count"] = int(spec.get("count") or 8)
    spec["capability"] = [int(x) for x in spec["capability"]]
    spec["memory_bytes"] = int(spec["memory_bytes"])
    return spec


class _Properties:
    """What ``torch.cuda.get_device_properties`` gives for the declared device."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.name = str(spec["device_name"])
        self.major, self.minor = spec["capability"]
        self.total_memory = int(spec["memory_bytes"])
        self.gcnArchName = str(spec.get("arch") or "")
        self.multi_processor_count = int(spec.get("multi_processor_count") or 100)
        self.is_integrated = False
        self.uuid = "00000000-0000-0000-0000-000000000000"
        self.L2_cache_size = 50 * 1024 * 1024
        self.warp_size = 64 if spec["platform"] == "rocm" else 32

    def __repr__(self) -> str:
        return f"_CudaDeviceProperties(name={self.name!r}, major={self.major}, minor={self.minor})"


class HostLibraryMissing(RuntimeError):
    """vLLM asked whether a compiled library of its GPU wheel is there; on this CPU-only machine it is not."""


def visible_count(spec: dict[str, Any]) -> int:
    """The devices a process sees: ``count``, or as many as ``CUDA_VISIBLE_DEVICES`` (ROCm: ``HIP_VISIBLE_DEVICES``,
    ``ROCR_VISIBLE_DEVICES`` too) lists, as the driver would."""
    names = (
        ("CUDA_VISIBLE_DEVICES",)
        if spec["platform"] == "cuda"
        else ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
    )
    count = int(spec["count"])
    for name in names:
        raw = os.environ.get(name)
        if raw is not None:
            count = min(count, len([item for item in raw.split(",") if item.strip()]))
    return count


def patch_torch_cuda(spec: dict[str, Any]) -> list[str]:
    import torch

    props = _Properties(spec)
    count = spec["count"]
    major, minor = spec["capability"]
    cuda: Any = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: visible_count(spec)
    cuda.get_device_properties = lambda device=None: props
    cuda.get_device_capability = lambda device=None: (major, minor)
    cuda.get_device_name = lambda device=None: props.name
    cuda.is_initialized = lambda: True
    cuda.current_device = lambda: 0
    cuda.mem_get_info = lambda device=None: (props.total_memory, props.total_memory)
    cuda.is_bf16_supported = lambda including_emulation=True: (major, minor) >= (8, 0)
    return [
        f"torch.cuda.is_available/device_count/get_device_properties/get_device_capability/get_device_name/"
        f"is_initialized/current_device/mem_get_info/is_bf16_supported -> {count} x {props.name!r} "
        f"(capability {major}.{minor}, {props.total_memory} bytes{', ' + props.gcnArchName if props.gcnArchName else ''})"
    ]


def _stub_extensions() -> list[str]:
    done = []
    for name in STUBBED:
        try:
            importlib.import_module(name)
        except ImportError:
            module = types.ModuleType(name)
            setattr(module, STUB_MARK, True)
            sys.modules[name] = module
            done.append(f"{name} -> an empty module (compiled; imported unguarded by the platform module)")
    return done


def _device_queries(spec: dict[str, Any], base: type, rocm_names: dict[str, str] | None) -> dict[str, Any]:
    from vllm.platforms.interface import DeviceCapability, Platform

    capability = DeviceCapability(*spec["capability"])
    memory = int(spec["memory_bytes"])
    name = str(spec["device_name"])
    if rocm_names is not None:
        # vLLM's ROCm platform names a device by its asic id (_ROCM_DEVICE_ID_NAME_MAP, "AMD_Instinct_MI300X"),
        # else by amdsmi's market name (what torch reports)
        underscored = name.replace(" ", "_")
        if underscored in set(rocm_names.values()):
            name = underscored

    def cumem_available(self: Any) -> bool:
        available = bool(base.is_cumem_allocator_available(self))  # type: ignore[attr-defined]
        if not available and importlib.util.find_spec("vllm.cumem_allocator") is None:
            raise HostLibraryMissing(
                "vllm.cumem_allocator (compiled, in every CUDA/ROCm wheel) is not on this CPU-only machine"
            )
        return available

    def uuid(cls: Any, device_id: int = 0) -> str:
        return f"GPU-00000000-0000-0000-0000-{int(device_id):012d}"

    queries: dict[str, Any] = {
        "get_device_capability": classmethod(lambda cls, device_id=0: capability),
        "has_device_capability": Platform.__dict__["has_device_capability"],
        "get_device_name": classmethod(lambda cls, device_id=0: name),
        "_get_physical_device_name": classmethod(lambda cls, device_id=0: name),
        "get_device_uuid": classmethod(uuid),
        "get_device_total_memory": classmethod(lambda cls, device_id=0: memory),
        "is_fully_connected": classmethod(lambda cls, physical_device_ids: True),
        "device_count": classmethod(lambda cls: visible_count(spec)),
        "is_cumem_allocator_available": cumem_available,
        "get_device_numa_node": classmethod(lambda cls, device_id=0: None),
        "get_all_device_numa_nodes": classmethod(lambda cls: None),
        "get_all_gpu_pci_bus_ids": classmethod(lambda cls: {}),
        "log_warnings": classmethod(lambda cls: None),
    }
    if spec["platform"] != "rocm":
        # CudaPlatform looks a non-integer entry up as a GPU UUID through NVML (absent here): the declared
        # devices' UUIDs are found, anything else is NVML's "Not Found"; ROCm keeps vLLM's own (indexes only)
        def control_id(cls: Any, device_id: str) -> int:
            if device_id.isdigit():
                return int(device_id)
            for index in range(visible_count(spec)):
                if device_id == uuid(cls, index):
                    return index
            raise ValueError(f"no GPU has UUID {device_id!r} (the driver's lookup by UUID: Not Found)")

        queries["device_control_id_to_physical_device_id"] = classmethod(control_id)
    if rocm_names is None and "get_cuda_runtime_major" in dir(base):
        # the wheels of 0.27-0.33 are built with CUDA 12.9 (torch's CUDA build); the oracle's torch is CPU-only
        queries["get_cuda_runtime_major"] = classmethod(lambda cls: 12)
    return {key: value for key, value in queries.items() if key in dir(base) or key == "has_device_capability"}


def _platform(spec: dict[str, Any]) -> tuple[Any, list[str]]:
    if spec["platform"] == "cuda":
        module = importlib.import_module("vllm.platforms.cuda")
        base = module.NvmlCudaPlatform
        rocm_names = None
    else:
        module = importlib.import_module("vllm.platforms.rocm")
        base = module.RocmPlatform
        rocm_names = dict(getattr(module, "_ROCM_DEVICE_ID_NAME_MAP", {}))
    queries = _device_queries(spec, base, rocm_names)
    cls = type(f"Oracle{base.__name__}", (base,), {"__module__": module.__name__, **queries})
    return cls(), [f"{base.__module__}.{base.__name__} with device queries {', '.join(sorted(queries))} declared"]


def _rebind(old: Any, new: Any) -> int:
    import vllm.platforms

    vllm.platforms._current_platform = new  # type: ignore[attr-defined]
    rebound = 0
    for module in list(sys.modules.values()):
        try:
            names = [key for key, value in vars(module).items() if value is old]
        except TypeError:
            continue
        for key in names:
            setattr(module, key, new)
            rebound += 1
    return rebound


def _clear_caches() -> int:
    cleared = 0
    for name, module in list(sys.modules.items()):
        if not (name == "vllm" or name.startswith("vllm.")) or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, functools._lru_cache_wrapper):
                value.cache_clear()
                cleared += 1
    return cleared


def install(spec: dict[str, Any]) -> list[str]:
    """Make vLLM's own CUDA or ROCm platform vLLM's current platform, answering as the declared GPU."""
    import vllm.platforms

    old = vllm.platforms.current_platform
    done = patch_torch_cuda(spec)
    done += _stub_extensions()
    platform, described = _platform(spec)
    done += described
    rebound = _rebind(old, platform)
    done.append(f"vllm.platforms._current_platform and {rebound} module-level names that held the CPU platform")
    done.append(f"{_clear_caches()} functools caches of vLLM's functions dropped (nothing computed on the CPU kept)")
    return done


def stub_modules() -> set[str]:
    return {name for name, module in sys.modules.items() if getattr(module, STUB_MARK, False)}


# modules that load compiled CUDA code at import when the platform is CUDA (vllm.vllm_flash_attn through
# fa_utils) and that the config path imports lazily: imported once under the CPU platform, before the swap
PRELOAD = (
    "vllm.model_executor.model_loader",
    "vllm.model_executor.model_loader.weight_utils",
    "vllm.model_executor.layers.attention",
    "vllm.model_executor.layers.quantization",
    "vllm.model_executor.models.registry",
    "vllm.v1.attention.backends.fa_utils",
    "vllm.v1.attention.selector",
    "vllm.distributed.kv_transfer.kv_connector.factory",
    "vllm.v1.spec_decode.eagle",
    "vllm.lora.request",
)


def warm_up(oracle: Any) -> list[str]:
    """Import, under vLLM's CPU platform, what the config path imports lazily (PRELOAD, and whatever validating
    the dummy models reaches); a GPU platform would make some of these modules load compiled CUDA code."""
    import contextlib
    import shutil
    import tempfile

    models = _dummy_models()
    before = set(sys.modules)
    for name in PRELOAD:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    for arch in ("LlamaForCausalLM", "NemotronHForCausalLM", "KimiLinearForCausalLM", "Qwen3ForCausalLM"):
        folder = tempfile.mkdtemp(prefix="profilekit-oracle-warm-")
        try:
            with contextlib.redirect_stdout(sys.stderr):
                oracle._validate(["dummy/warm-up"], models.config_json(arch), folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    loaded = len(set(sys.modules) - before)
    return [f"{loaded} modules imported under the CPU platform before the swap (PRELOAD and the dummy models' path)"]


def _dummy_models() -> Any:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "tests" / "oracle" / "models.py"
    spec = importlib.util.spec_from_file_location("profilekit_oracle_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# what a GPU host has and this CPU-only machine lacks, by the error it gives when vLLM reaches it
_HOST_LIBRARY = re.compile(
    r"No such operator|Torch not compiled with CUDA|NVIDIA driver|CUDA driver|cudaGetDevice|NVML|nvml|amdsmi|"
    r"\.so\b|_C\b|flash attention extensions|libcuda|libnvrtc|hip runtime|No CUDA GPUs"
)


def host_library_reason(exc: BaseException) -> str | None:
    """An answer caused by a library or driver this machine lacks (host-dependent, never a verdict), or None."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, HostLibraryMissing):
        return f"a compiled library the CPU-only oracle lacks ({exc}); a GPU host has it"
    if isinstance(exc, ImportError):
        return f"a compiled library the CPU-only oracle lacks ({text[:200]}); a GPU host has it"
    if isinstance(exc, NameError) and "amdsmi" in str(exc):
        return f"amdsmi is not installed in the CPU-only oracle ({text[:200]})"
    if getattr(exc, "__profilekit_stub__", False) or _HOST_LIBRARY.search(str(exc)):
        return f"needs the GPU's driver or a compiled kernel at config time ({text[:200]})"
    if isinstance(exc, AttributeError) and any(name in str(exc) for name in stub_modules()):
        return f"a compiled extension the oracle replaced by an empty module ({text[:200]})"
    return None


def answers(platform: Any) -> dict[str, Any]:
    """What vLLM's current platform answers inside the worker (the proof that GPU mode is the GPU)."""
    import torch

    capability = platform.get_device_capability()
    return {
        "class": type(platform).__name__,
        "bases": [f"{k.__module__}.{k.__name__}" for k in type(platform).__mro__[1:3]],
        "device_name": platform.get_device_name(),
        "capability": [capability.major, capability.minor] if capability is not None else None,
        "total_memory": platform.get_device_total_memory(),
        "device_count": platform.device_count(),
        "is_cuda": platform.is_cuda(),
        "is_rocm": platform.is_rocm(),
        "is_cpu": platform.is_cpu(),
        "supports_bfloat16": torch.bfloat16 in platform.supported_dtypes,
        "torch_cuda_device_count": torch.cuda.device_count(),
    }
