"""What the GPU a role declares (`[hardware] gpu`, docs/HARDWARE.md) lets vLLM start: quantization methods by
compute capability and by platform, bfloat16 below capability 8.0, and features only one platform has.

Sources, every release 0.27.0-0.33.0 unless said:

- `vllm/config/vllm.py` `VllmConfig._get_quantization_config`: a quantization method whose `get_min_capability()`
  is above the GPU's capability (`DeviceCapability.to_int()`, 75 for 7.5) is refused. Each method's minimum, per
  release, is in `quant-capabilities.json` (tools/gen_quant_capabilities.py reads it from the release's
  `vllm/model_executor/layers/quantization`). The method is `ModelConfig.quantization`: `quantization`, else the
  checkpoint's `quant_method` (rules/checkpoint.py `effective_method`; left to vLLM where an override may rename it).
- `vllm/config/model.py` `ModelConfig._verify_quantization` -> `Platform.verify_quantization`: on ROCm, a method not
  in `RocmPlatform.supported_quantization` (the same JSON) is refused. CUDA lists none, so accepts every method.
- `vllm/v1/worker/gpu_worker.py` -> `CudaPlatform.check_if_supports_dtype` (RocmPlatform's is the same text):
  `dtype = "bfloat16"` below capability 8.0 is refused when the worker starts, after the engine config is built;
  `dtype = "auto"` with a bfloat16 checkpoint falls back to float16 there (`_resolve_auto_dtype` with
  `CudaPlatform.supported_dtypes`, rules/cache.py `model_dtype`), and starts.
- `gpu-platform-unsupported`, a feature the GPU's platform or capability lacks: HiSparse off CUDA
  (`VllmConfig.__post_init__`, 0.30.0+), the Proton profiler off CUDA (`VllmConfig.__post_init__` 0.28.0-0.29.0,
  `_validate_profiler_config` 0.30.0+), `--enable-hc-sp` with tensor parallelism off CUDA (0.32.0; 0.33.0 accepts
  ROCm too), async scheduling with ROCm DeepEP high-throughput DBO (`VllmConfig.__post_init__`, only on ROCm).
- `compile-sizes-name`: `CompilationConfig.post_init_cudagraph_sizes`, at the end of `VllmConfig._set_cudagraph_sizes`
  (which a GPU platform always runs, eager or not; the CPU platform never does), asserts that each name in
  `compilation_config.compile_sizes` is 'cudagraph_capture_sizes'.
- `max-cudagraph-capture-size-zero`: `VllmConfig._set_cudagraph_sizes` asserts a capture size of at least 1 when
  CUDA graphs are on, which they are on a GPU (vLLM's CPU platform, the oracle's, turns them off): with a GPU
  declared, `max_cudagraph_capture_size = 0` is refused.
- `kda-prefill-backend-platform` (rules/outputs.py), `microbatching-all2all-backend` (rules/microbatch.py: 0.33.0
  accepts allgather_reducescatter on ROCm), `compilation-config` (rules/compilation.py: the ROCm-only rotary
  fusions add '+rotary_embedding'), `kv-cache-dtype-model-dtype` (rules/cache.py, through the dtype
  `auto` resolves to) and `host-gpu-count` (rules/host.py, `gpus_per_node`) read the GPU too.

vLLM's platform checks that no declarable GPU reaches (every GPU profilekit knows is CUDA or ROCm): EPLB off
CUDA/ROCm/XPU, dual CUDA streams for LoRA and sleep mode off CUDA/ROCm, `--enable-hc-sp` off CUDA/ROCm (0.33.0).
`MambaConfig.__post_init__`'s stochastic-rounding checks (CUDA only; capability 10.x with the triton backend) are
not reached by `vllm serve`: `create_engine_config` sets `--enable-mamba-cache-stochastic-rounding` on a copy of the
default MambaConfig without running `__post_init__` again, and no flag writes a whole `mamba_config`.

Where no GPU is declared, profilekit judges as today (a CUDA GPU host, capability unknown: none of these refuse)
and `hardware-unknown` names the GPUs of the catalogue whose verdict differs.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

from profilekit.errors import Location, Severity
from profilekit.hardware import CATALOGUE, Gpu, capability_int
from profilekit.rules import order
from profilekit.rules.archsupport import HC_SP
from profilekit.rules.checkpoint import (
    QUANTIZATION_CONFIG,
    VERIFY_QUANTIZATION,
    checkpoint_quantization,
    effective_method,
)
from profilekit.rules.compilation import ROCM_ROTARY_FUSIONS
from profilekit.rules.engine import RULES, STAGE_POST_INIT, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import serve_int, shown
from profilekit.rules.postinit import ASYNC_SCHEDULING, PROTON_GRAPH_ATTRIBUTION
from profilekit.rules.runnerfacts import hisparse
from profilekit.rules.scheduler import failures as scheduler_failures
from profilekit.rules.scheduling import CUDAGRAPH_SIZES, capture_setting, full_cudagraphs
from profilekit.vllm.modelshape import DTYPES
from profilekit.vllm.versions import at_least

DATA = Path(__file__).with_name("quant-capabilities.json")

MSG_BF16 = (
    "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {name} GPU has compute "
    "capability {version}. You can use float16 instead by explicitly setting the `dtype` flag in CLI, for example: "
    "--dtype=half."
)
MSG_CAPABILITY = (
    "The quantization method {method} is not supported for the current GPU. Minimum capability: {minimum}. "
    "Current capability: {current}."
)
MSG_ROCM_QUANT = "{method} quantization is currently not supported in rocm."
MSG_HISPARSE = "HiSparse currently requires NVIDIA CUDA."
MSG_PROTON = "The Proton profiler currently supports NVIDIA CUDA only"
MSG_HC_SP = "--enable-hc-sp currently requires CUDA"
MSG_DEEPEP_DBO = (
    "Async scheduling is not compatible with ROCm DeepEP high-throughput DBO. Please use --no-async-scheduling or "
    "select a different all2all backend."
)

# the worker checks the dtype once the engine config is built: after every check of create_engine_config
WORKER_START: Order = (9,)
QUANTIZATION_CAPABILITY: Order = (QUANTIZATION_CONFIG[0], QUANTIZATION_CONFIG[1] - 1)  # before the act dtypes
HISPARSE_PLATFORM: Order = (STAGE_POST_INIT, 6, 19)  # the HiSparse block's first check (rules/hisparse.py: 6, 20)
PROTON_EARLY: Order = (STAGE_POST_INIT, 6, 9)  # 0.28.0-0.29.0: right before the CUDA-graphs check (6, 10)
PROTON_LATE: Order = (*PROTON_GRAPH_ATTRIBUTION, 0)  # _validate_profiler_config's first check
HC_SP_PLATFORM: Order = (STAGE_POST_INIT, HC_SP - 1, 1)  # verify_with_parallel_config: the hc-sp block's first
DEEPEP_DBO: Order = (*ASYNC_SCHEDULING[:2], ASYNC_SCHEDULING[2] - 1)  # the async block's first refusal

# rules whose verdict depends on the GPU, compared across the catalogue for `hardware-unknown`
GPU_RULES = (
    "quantization-gpu-capability",
    "quantization-rocm-unsupported",
    "bfloat16-gpu-capability",
    "gpu-platform-unsupported",
    "kda-prefill-backend-platform",
    "kv-cache-dtype-model-dtype",
    "moonep-all2all",
    "microbatching-all2all-backend",
    "compilation-config",
    "max-cudagraph-capture-size-zero",
    "compile-sizes-name",
)


@cache
def _data() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))["releases"]
    return loaded


def min_capability(version: str, method: str) -> int | None:
    """`get_min_capability()` of `method`'s config class in `version` (None: unknown method or release)."""
    release = _data().get(version)
    value = release["min_capability"].get(method) if release is not None else None
    return value if isinstance(value, int) else None


def rocm_supported(version: str) -> list[str] | None:
    """`RocmPlatform.supported_quantization` of `version`."""
    release = _data().get(version)
    return list(release["rocm_supported"]) if release is not None else None


def _gpu_locs(f: RoleFacts) -> list[Location]:
    return f.loc("hardware", "gpu")


def _quant_locs(f: RoleFacts) -> list[Location]:
    raw = f.model.config
    from_checkpoint = raw is not None and checkpoint_quantization(raw) is not None
    return [*f.loc("serve", "quantization"), *(f.model.locations if from_checkpoint else ())]


def _method_shown(f: RoleFacts, method: str) -> str:
    if f.serve.get("quantization") is not None:
        return f"quantization = {shown(f.serve['quantization'])}"
    return f"a checkpoint quantized with {shown(method)} (quantization_config in its config.json)"


def _refuses(f: RoleFacts, what: str, message: str) -> str:
    return f'{what}; vLLM {f.version} refuses to start: "{message}"'


@rule(
    "quantization-gpu-capability",
    Severity.ERROR,
    "a quantization method whose minimum compute capability is above the declared GPU's",
    source="vllm/config/vllm.py VllmConfig._get_quantization_config (get_min_capability of "
    "vllm/model_executor/layers/quantization, rules/quant-capabilities.json)",
)
def quantization_gpu_capability(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    gpu = f.gpu
    method = effective_method(f)
    if gpu is None or method is None:
        return []
    minimum = min_capability(f.version, method)
    current = capability_int(gpu)
    if minimum is None or current >= minimum:
        return []
    message = MSG_CAPABILITY.format(method=method, minimum=minimum, current=current)
    major, minor = gpu.capability
    return [
        Hit(
            "quantization-gpu-capability",
            _refuses(f, f"{_method_shown(f, method)} on {gpu.name} (capability {major}.{minor})", message),
            [*_quant_locs(f), *_gpu_locs(f)],
            f"run {method} on a GPU of capability {minimum // 10}.{minimum % 10} or more, or choose a method "
            f"{gpu.name} supports",
            role=f.role.name,
            order=QUANTIZATION_CAPABILITY,
        )
    ]


@rule(
    "quantization-rocm-unsupported",
    Severity.ERROR,
    "a quantization method ROCm's platform does not list (RocmPlatform.supported_quantization), on a ROCm GPU",
    source="vllm/config/model.py ModelConfig._verify_quantization; vllm/platforms/rocm.py supported_quantization",
)
def quantization_rocm_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    gpu = f.gpu
    method = effective_method(f)
    supported = rocm_supported(f.version)
    if gpu is None or gpu.platform != "rocm" or method is None or supported is None or method in supported:
        return []
    if min_capability(f.version, method) is None:
        return []  # not a method of this release: invalid-value refuses it first
    return [
        Hit(
            "quantization-rocm-unsupported",
            _refuses(f, f"{_method_shown(f, method)} on {gpu.name} (ROCm)", MSG_ROCM_QUANT.format(method=method)),
            [*_quant_locs(f), *_gpu_locs(f)],
            f"choose a method ROCm supports ({', '.join(supported[:6])}, ...), or a CUDA GPU",
            role=f.role.name,
            order=order.built("ModelConfig", f.version, VERIFY_QUANTIZATION + 1),
        )
    ]


@rule(
    "bfloat16-gpu-capability",
    Severity.ERROR,
    'dtype = "bfloat16" on a GPU below compute capability 8.0 (refused when the worker starts)',
    source="vllm/platforms/cuda.py CudaPlatform.check_if_supports_dtype (vllm/v1/worker/gpu_worker.py)",
)
def bfloat16_gpu_capability(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    gpu = f.gpu
    written = f.serve.get("dtype")
    if gpu is None or not isinstance(written, str) or DTYPES.get(written.lower()) != "bfloat16":
        return []
    if gpu.capability >= (8, 0):
        return []
    major, minor = gpu.capability
    message = MSG_BF16.format(name=gpu.device_name, version=f"{major}.{minor}")
    return [
        Hit(
            "bfloat16-gpu-capability",
            f"dtype = {shown(written)} on {gpu.name} (capability {major}.{minor}); vLLM {f.version} builds its "
            f'config, then the worker refuses to start: "{message}"',
            [*f.loc("serve", "dtype"), *_gpu_locs(f)],
            'set dtype = "half" (float16), or "auto" (vLLM then runs a bfloat16 checkpoint in float16 on this GPU)',
            role=f.role.name,
            order=WORKER_START,
        )
    ]


def _platform_failures(f: RoleFacts, gpu: Gpu) -> list[Hit]:
    """`gpu-platform-unsupported`: every feature the role asks for that `gpu`'s platform lacks."""
    v = f.version
    name = f"{gpu.name} ({'CUDA' if gpu.platform == 'cuda' else 'ROCm'})"
    cuda = gpu.platform == "cuda"
    out: list[Hit] = []

    def add(what: str, message: str, locs: list[Location], fix: str, at: Order) -> None:
        out.append(
            Hit(
                "gpu-platform-unsupported",
                _refuses(f, f"{what} on {name}", message),
                [*locs, *_gpu_locs(f)],
                fix,
                role=f.role.name,
                order=at,
            )
        )

    asked = hisparse(v, f.serve)
    if asked is not None and not cuda:
        locs = [*f.loc("serve", "attention_config", "hisparse_config"), *f.locs("serve", "kv_transfer_config")]
        add(
            f"HiSparse ({asked})",
            MSG_HISPARSE,
            locs,
            "run HiSparse on an NVIDIA CUDA GPU, or turn it off",
            HISPARSE_PLATFORM,
        )
    profiler = f.serve.get("profiler_config")
    if at_least(v, "0.28.0") and isinstance(profiler, dict) and profiler.get("profiler") == "proton" and not cuda:
        add(
            'profiler_config.profiler = "proton"',
            MSG_PROTON,
            f.loc("serve", "profiler_config", "profiler"),
            "profile with another profiler (torch), or on an NVIDIA CUDA GPU",
            PROTON_LATE if at_least(v, "0.30.0") else PROTON_EARLY,
        )
    tp = serve_int(f, "tensor_parallel_size", 1)
    hc_sp = f.serve.get("enable_hc_sp") is True and tp is not None and tp > 1
    if hc_sp and v == "0.32.0" and not cuda:  # 0.33.0 accepts CUDA or ROCm
        add(
            f"enable_hc_sp = true with tensor_parallel_size = {tp}",
            MSG_HC_SP,
            [*f.loc("serve", "enable_hc_sp"), *f.loc("serve", "tensor_parallel_size")],
            "set enable_hc_sp = false on ROCm with vLLM 0.32.0 (0.33.0 supports it there)",
            HC_SP_PLATFORM,
        )
    dbo = f.serve.get("enable_dbo") is True and f.serve.get("all2all_backend") == "deepep_high_throughput"
    if dbo and not cuda and f.serve.get("async_scheduling") is True:
        add(
            'async_scheduling = true with enable_dbo and all2all_backend = "deepep_high_throughput"',
            MSG_DEEPEP_DBO,
            [*f.loc("serve", "async_scheduling"), *f.loc("serve", "enable_dbo"), *f.loc("serve", "all2all_backend")],
            "remove async_scheduling (vLLM turns it off for ROCm DeepEP high-throughput DBO), or choose another "
            "all2all_backend",
            DEEPEP_DBO,
        )
    return out


@rule(
    "gpu-platform-unsupported",
    Severity.ERROR,
    "a feature the declared GPU's platform lacks: HiSparse, Proton, hc-sp (0.32.0) off CUDA; ROCm DeepEP DBO with "
    "async scheduling",
    source="vllm/config/vllm.py VllmConfig.__post_init__ / _validate_profiler_config; vllm/config/model.py "
    "ModelConfig.verify_with_parallel_config",
)
def gpu_platform_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    return _platform_failures(f, f.gpu) if f.gpu is not None else []


MSG_CUDAGRAPH_SIZE = "Maximum cudagraph size should be greater than or equal to 1 when using cuda graph."
CUDAGRAPH_SIZE_ASSERT: Order = (*CUDAGRAPH_SIZES, -1)  # _set_cudagraph_sizes: before the sizes are compared


@rule(
    "max-cudagraph-capture-size-zero",
    Severity.ERROR,
    "max_cudagraph_capture_size below 1 with CUDA graphs on, on a declared GPU",
    source="vllm/config/vllm.py VllmConfig._set_cudagraph_sizes (an assertion)",
)
def max_cudagraph_capture_size_zero(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    top, locs = capture_setting(f, "max_cudagraph_capture_size")
    if f.gpu is None or not isinstance(top, int) or isinstance(top, bool) or top >= 1:
        return []
    if not full_cudagraphs(f):
        return []
    return [
        Hit(
            "max-cudagraph-capture-size-zero",
            _refuses(f, f"max_cudagraph_capture_size = {top} with CUDA graphs on {f.gpu.name}", MSG_CUDAGRAPH_SIZE),
            [*locs, *_gpu_locs(f)],
            "remove max_cudagraph_capture_size (vLLM derives it), set it to 1 or more, or set enforce_eager = true",
            role=f.role.name,
            order=CUDAGRAPH_SIZE_ASSERT,
        )
    ]


COMPILE_SIZES_NAME = "cudagraph_capture_sizes"  # the one name compile_sizes takes besides batch sizes
COMPILE_SIZES: Order = (*CUDAGRAPH_SIZES, 1)  # post_init_cudagraph_sizes: after the capture sizes are settled


@rule(
    "compile-sizes-name",
    Severity.ERROR,
    "compilation_config.compile_sizes naming anything but 'cudagraph_capture_sizes', on a declared GPU",
    source="vllm/config/compilation.py CompilationConfig.post_init_cudagraph_sizes (an assertion), from "
    "VllmConfig._set_cudagraph_sizes",
)
def compile_sizes_name(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("compilation_config")
    sizes = cfg.get("compile_sizes") if isinstance(cfg, dict) else None
    if f.gpu is None or not isinstance(sizes, list):
        return []
    # vLLM de-duplicates through a set first, so which unknown name it names is not fixed: the first written here
    names = [x for x in sizes if isinstance(x, str) and x != COMPILE_SIZES_NAME]
    if not names:
        return []
    close = difflib.get_close_matches(names[0], [COMPILE_SIZES_NAME], n=1, cutoff=0.6)
    said = f"did you mean {close[0]!r}? " if close else ""
    message = f"Unrecognized size type in compile_sizes, expect '{COMPILE_SIZES_NAME}', got {names[0]}"
    return [
        Hit(
            "compile-sizes-name",
            _refuses(f, f"compile_sizes names {names[0]!r} on {f.gpu.name}", message),
            [*f.loc("serve", "compilation_config", "compile_sizes"), *_gpu_locs(f)],
            f"{said}write batch sizes as numbers, or '{COMPILE_SIZES_NAME}' (compile for every CUDA graph "
            "capture size)",
            role=f.role.name,
            order=COMPILE_SIZES,
        )
    ]


# ---- hardware-unknown ---------------------------------------------------------------------------------------


def _declares_gpu(f: RoleFacts) -> bool:
    return f.gpu is not None or f.role.hardware.get("gpu") is not None  # an unknown name: unknown-gpu says so


def _might_depend(f: RoleFacts) -> bool:
    """A cheap test: does the role ask for anything whose verdict the GPU may change?"""
    s = f.serve
    return bool(
        s.get("quantization") is not None
        or (f.model.config is not None and checkpoint_quantization(f.model.config) is not None)
        or s.get("dtype") is not None
        or s.get("kv_cache_dtype") in ("float16", "bfloat16")
        or s.get("all2all_backend") in ("moonep", "deepep_high_throughput")
        or s.get("kda_prefill_backend") in ("fused", "flashkda")
        or hisparse(f.version, s) is not None
        or isinstance(s.get("profiler_config"), dict)
        or s.get("enable_hc_sp") is True
        or "max_cudagraph_capture_size" in s
        or isinstance(s.get("compilation_config"), dict)
        or s.get("enable_dbo") is True
        or s.get("ubatch_size") is not None
        or _rocm_fusion(s)
    )


def _rocm_fusion(serve: dict[str, Any]) -> bool:
    cc = serve.get("compilation_config")
    passes = cc.get("pass_config") if isinstance(cc, dict) else None
    return isinstance(passes, dict) and any(passes.get(k) for k in ROCM_ROTARY_FUSIONS)


@cache
def _kinds() -> dict[tuple[str, tuple[int, int]], list[str]]:
    """The catalogue's GPUs by what these checks read of them (platform and capability), in catalogue order."""
    kinds: dict[tuple[str, tuple[int, int]], list[str]] = {}
    for gpu in CATALOGUE.values():
        kinds.setdefault((gpu.platform, gpu.capability), []).append(gpu.name)
    return kinds


def _verdict(ctx: Context, f: RoleFacts, gpu: Gpu | None) -> list[Hit]:
    """The errors of the GPU rules for the role on `gpu` (None: as judged with no GPU declared)."""
    on = dataclasses.replace(f, gpu=gpu, memo={})
    found: list[Hit] = []
    for rule_id in GPU_RULES:
        known = RULES.get(rule_id)
        if known is None or not known.applies(f.version):
            continue
        check: Callable[[Context, RoleFacts], Iterable[Hit]] = known.check  # type: ignore[assignment]
        found += [hit for hit in check(ctx, on) if (hit.severity or known.severity) is Severity.ERROR]
    return found


def _refused_anyway(ctx: Context, f: RoleFacts) -> bool:
    """Whether another rule refuses the role whatever its GPU (then the GPU changes only vLLM's first message)."""
    skip = {*GPU_RULES, "hardware-unknown"}
    for known in RULES.values():
        if known.scope != "role" or known.id in skip or not known.applies(f.version):
            continue
        check: Callable[[Context, RoleFacts], Iterable[Hit]] = known.check  # type: ignore[assignment]
        if any((hit.severity or known.severity) is Severity.ERROR for hit in check(ctx, f)):
            return True
    return False


def _platform_unknown(ctx: Context, f: RoleFacts) -> list[Hit]:
    """`hardware-unknown` for the platform checks: no GPU is declared, and a GPU of the catalogue gets another
    verdict than the one profilekit gives (a CUDA GPU host of unknown capability)."""
    if _declares_gpu(f) or not _might_depend(f):
        return []
    today = sorted({hit.rule for hit in _verdict(ctx, f, None)})
    refused: dict[str, list[str]] = {}  # GPU -> the rules that refuse it
    started: list[str] = []
    locs: list[Location] = []
    differs = False
    verdicts: dict[str, list[str]] = {}
    for names in _kinds().values():
        hits = _verdict(ctx, f, CATALOGUE[names[0]])
        verdict = sorted({hit.rule for hit in hits})
        locs += [loc for hit in hits for loc in hit.locations]
        differs = differs or bool(verdict) != bool(today)  # refused or started: not vLLM's first message
        verdicts.update(dict.fromkeys(names, verdict))
    for name in CATALOGUE:  # catalogue order
        if verdicts[name]:
            refused[name] = verdicts[name]
        else:
            started.append(name)
    if not differs or _refused_anyway(ctx, f):
        return []
    by_rules: dict[tuple[str, ...], list[str]] = {}
    for name, rules in refused.items():
        by_rules.setdefault(tuple(rules), []).append(name)
    parts = [f"{', '.join(rules)} on {', '.join(names)}" for rules, names in by_rules.items()]
    judged = f"it refuses ({', '.join(today)})" if today else "it starts"
    return [
        Hit(
            "hardware-unknown",
            f"no layer declares the GPU, and vLLM {f.version}'s verdict depends on it: it refuses to start ("
            + "; ".join(parts)
            + ")"
            + (f" and starts on {', '.join(started)}" if started else "")
            + f"; profilekit judges a CUDA GPU host of unknown capability, where {judged}",
            locs or list(f.model.locations),
            'declare what the role runs on: [hardware] gpu = "NAME" (docs/HARDWARE.md)',
            role=f.role.name,
        )
    ]


@rule(
    "hardware-unknown",
    Severity.WARNING,
    "no GPU is declared, and the verdict depends on it: vLLM's GPU-dependent defaults (batch sizes), quantization "
    "capabilities, bfloat16, platform-only features",
    source="vllm/engine/arg_utils.py EngineArgs.get_batch_defaults; the checks of rules/platforms.py",
)
def hardware_unknown(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    return [hit for hit in scheduler_failures(f) if hit.rule == "hardware-unknown"] + _platform_unknown(ctx, f)
