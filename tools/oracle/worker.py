"""Long-lived vLLM oracle worker: JSON lines in on stdin, JSON lines out on stdout.

Run it with the oracle base venv's python and ``PYTHONPATH=<vllm-X copy>``
(``build_env.OracleEnv.worker_command()`` / ``worker_environ()``). It imports
one vLLM release and answers, one line per request:

``{"op": "parse", "argv": [...]}``
    ``argv`` is what follows ``vllm serve`` (model first). Parsed with the real
    ``vllm`` CLI parser (top-level parser with the ``serve`` subcommand).
    Answer ``{"ok": true, "namespace": {dest: value}}`` or
    ``{"ok": false, "exit_code": 2, "error": "<argparse message>", "stderr": "..."}``.
    Config objects given on the command line (``json:<Config>`` options) come
    back as the JSON dict that was passed; config objects left at their
    default come back as ``"<ClassName>()"``; enums as their value.
``{"op": "validate", "argv": [...], "env": {...}, "config_json": {...}, "gpu": {...}}``
    The ``vllm serve`` path up to the engine config: parse,
    ``validate_parsed_serve_args``, ``model = model_tag`` (a temporary folder
    holding ``config_json`` as ``config.json`` when given),
    ``AsyncEngineArgs.from_cli_args(ns).create_engine_config(...)`` with
    ``skip_tokenizer_init``. ``env`` is applied only for this case (a value of
    ``null`` unsets a variable). Answer ``{"ok": true}`` or ``{"ok": false,
    "error_type": "ValueError", "error": "<message>"}``, plus ``"undecidable":
    "<reason>"`` where a CPU-only oracle cannot decide (vllm-facts.md 5.1a, 8). ``gpu`` (optional:
    ``device_name``, ``memory_bytes``, ``capability`` [major, minor]) is the device
    ``EngineArgs.get_batch_defaults`` queries; without it, a device that cannot be queried.
``{"op": "catalogue"}``
    The flag catalogue of this release (the format of
    ``vllm-0.33.0-flags.json``).
``{"op": "info"}``
    Version and the modules in use.
``{"op": "envs", "names": [...]}``
    The values ``vllm.envs`` gives for those names right now, and the raw
    ``os.environ`` entries (to prove that nothing leaks between cases).

A request may carry an ``"id"``; the answer repeats it.

GPU platform mode (``PROFILEKIT_ORACLE_GPU`` = JSON ``{name, platform, capability, memory_bytes, device_name,
arch, count}``, chosen at start; tools/oracle/gpu_platform.py): vLLM is imported under its CPU platform as
always; then the config path's lazily imported modules are imported once more under it (``warm_up``: a fixed
list and the four dummy models' validation - on a CUDA platform ``vllm.v1.attention.backends.fa_utils`` would
load ``vllm.vllm_flash_attn``'s compiled extensions); then ``torch.cuda``'s device queries answer as ``count``
such devices, ``vllm._C_stable_libtorch`` (imported unguarded by the platform modules) becomes an empty module,
and a subclass of the release's own ``NvmlCudaPlatform`` or ``RocmPlatform`` that overrides only the device
queries becomes ``vllm.platforms._current_platform`` and every module-level name that held the CPU platform;
vLLM's ``functools`` caches are dropped. None of the CPU-mode hooks below (``judge_as_gpu_host``) is installed:
the platform's own ``check_and_update_config``, ``supported_dtypes``, ``is_cuda``/``is_rocm`` and
``get_batch_defaults`` on the GPU's own answers are what is judged, and after the engine config the one start-up
check the GPU worker makes of it before loading weights, ``check_if_supports_dtype`` (bf16 below capability 8.0) (a request's ``gpu`` is ignored; the worker is
that GPU). ``HAS_TRITON`` stays True (a GPU host has Triton). ``VLLM_CACHE_ROOT`` is a folder of the worker's own
(or ``PROFILEKIT_ORACLE_VLLM_CACHE``), so no model-inspection entry of another process is read. A failure from
something this machine lacks (an ``ImportError`` of a compiled module, a ``torch.ops._C`` kernel, amdsmi, the
driver, ``vllm.cumem_allocator``) is answered ``undecidable`` with the reason, never as a verdict. ``info`` and
the hello add ``gpu`` (the declared spec) and ``platform_answers`` (what vLLM's current platform answers).

The first line the worker prints is a hello: ``{"ok": true, "hello": true,
"version": "X", ...}`` or, if vLLM cannot be imported, ``{"ok": false, "hello":
true, "error": "..."}`` before it exits with status 1.

Everything vLLM prints (logs, warnings, stray ``print``) goes to stderr: file
descriptor 1 is pointed at stderr before vLLM is imported and the answers go to
a private duplicate of the original stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import enum
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

# --------------------------------------------------------------------------
# Process set-up that must happen before vLLM is imported.
# the answers keep the real stdout; a CPU-only machine: vLLM must pick its CPU platform (vllm-facts.md 5.1)
from probe_io import ANSWERS as _ANSWERS

CPU_PLATFORM = "vllm.platforms.cpu.CpuPlatform"

# GPU platform mode (tools/oracle/gpu_platform.py): chosen at start by PROFILEKIT_ORACLE_GPU
import gpu_platform  # noqa: E402

GPU_SPEC: dict[str, Any] | None = gpu_platform.spec_from_environ()
if GPU_SPEC is not None:
    # vLLM's model-inspection cache (modelinfos/) is not the user's: this worker's own folder, or one the client
    # shares between the GPU workers of one release in one session (PROFILEKIT_ORACLE_VLLM_CACHE)
    _CACHE_ROOT = os.environ.get(gpu_platform.CACHE_ENV) or tempfile.mkdtemp(prefix="profilekit-oracle-cache-")
    if not os.environ.get(gpu_platform.CACHE_ENV):
        import atexit

        atexit.register(shutil.rmtree, _CACHE_ROOT, True)
    os.environ["VLLM_CACHE_ROOT"] = _CACHE_ROOT


class _CpuPlatformHook(importlib.abc.MetaPathFinder):
    """Make vLLM's builtin "cpu" platform plugin honour VLLM_TARGET_DEVICE=cpu.

    0.27.x only detects CPU when vLLM's version string contains "cpu"
    (``vllm/platforms/__init__.py: cpu_platform_plugin``); 0.28.0 added the
    ``VLLM_TARGET_DEVICE == "cpu"`` test. The platform is resolved while
    ``import vllm`` runs, so the plugin table is wrapped right after
    ``vllm.platforms`` executes, before anything asks for the platform. Nothing
    installed is modified. For releases that already honour the variable the
    wrapper never changes the answer.
    """

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "vllm.platforms":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader: Any = spec.loader
        original_exec = loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            original_exec(module)
            _wrap_cpu_plugin(module)

        loader.exec_module = exec_module
        return spec


def _wrap_cpu_plugin(module: types.ModuleType) -> None:
    plugins = getattr(module, "builtin_platform_plugins", None)
    if not isinstance(plugins, dict) or "cpu" not in plugins:
        return
    original = plugins["cpu"]

    def cpu_platform_plugin() -> str | None:
        found: str | None = original()
        if found is None and os.environ.get("VLLM_TARGET_DEVICE", "").lower() == "cpu":
            return CPU_PLATFORM
        return found

    plugins["cpu"] = cpu_platform_plugin


sys.meta_path.insert(0, _CpuPlatformHook())

# Help strings are only filled in when "--help" is in sys.argv at import time
# of vllm.engine.arg_utils (NEEDS_HELP, vllm-facts.md 5.2). "serve" must not be
# in sys.argv[1:], or EngineArgs.add_cli_args leaves out --model.
_saved_argv = sys.argv
sys.argv = [_saved_argv[0] if _saved_argv else "vllm", "--help"]
_STARTED = time.monotonic()
_IMPORT_ERROR: str | None = None
try:
    import vllm
    import vllm.config.vllm as _vllm_config_module
    import vllm.envs as vllm_envs
    from vllm.engine import arg_utils
    from vllm.engine.arg_utils import AsyncEngineArgs, EngineArgs
    from vllm.usage.usage_lib import UsageContext
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    _CLI_MODULE: Any = None
    for _name in (
        "vllm.entrypoints.common.cli_args",  # 0.33
        "vllm.entrypoints.launchers.cli_args",  # 0.29 - 0.32
        "vllm.entrypoints.openai.cli_args",  # 0.27 - 0.28
    ):
        try:
            _CLI_MODULE = importlib.import_module(_name)
        except ModuleNotFoundError as _exc:
            if _exc.name is None or not _name.startswith(_exc.name):
                raise
            continue
        if hasattr(_CLI_MODULE, "make_arg_parser"):
            break
        _CLI_MODULE = None
    if _CLI_MODULE is None:
        raise ImportError("no module of this vLLM provides make_arg_parser")
except BaseException:  # reported in the hello line
    _IMPORT_ERROR = traceback.format_exc()
finally:
    sys.argv = _saved_argv

VERSION: str = getattr(vllm, "__version__", "unknown") if _IMPORT_ERROR is None else "unknown"

# Judge as a GPU host with Triton would (vllm-facts.md 8): the V2 model runner
# choice and its checks read this module-level flag.
if _IMPORT_ERROR is None and hasattr(_vllm_config_module, "HAS_TRITON"):
    _vllm_config_module.HAS_TRITON = True


# --------------------------------------------------------------------------
# Judging as a GPU host, whatever the CPU this worker runs on
#
# vLLM's CPU platform changes the configuration it is given, and some of those
# changes depend on the CPU: with MLA models and no AMX it turns prefix caching
# and chunked prefill off, which makes "--mamba-block-size can only be set with
# --enable-prefix-caching" fire on an AMD EPYC and not on a Xeon with AMX. A GPU
# host runs none of it. Each hook below is replaced by what a CUDA host runs, so
# the verdict is the same on any x86 or ARM CPU (tools/oracle/README.md lists
# them per release; tests/oracle/test_cpu_independence.py proves it with the
# probes forced each way).

FORCE_CPU_ENV = "PROFILEKIT_ORACLE_FORCE_CPU"
"""Tests only: pretend to be another CPU, e.g. ``amx=1,avx512_bf16=0,arch=riscv64,cores=96``."""
RAW_CPU_HOOKS_ENV = "PROFILEKIT_ORACLE_RAW_CPU_HOOKS"
"""Tests only: ``1`` keeps the CPU platform's own hooks, to show that the forced probes bite."""

NEUTRALISED: list[str] = []
FORCED_CPU: dict[str, str] = {}


def force_cpu_probes(spec: str) -> dict[str, str]:
    """Make the CPU-feature probes vLLM reads answer as another CPU would."""
    import platform as platform_module

    import torch

    forced: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, value = item.partition("=")
        if name in ("amx", "avx512_bf16", "avx512"):
            answer_ = value == "1"
            probe = {"amx": "_is_amx_tile_supported", "avx512_bf16": "_is_avx512_bf16_supported"}.get(
                name, "_is_avx512_supported"
            )
            setattr(torch.cpu, probe, lambda answer_=answer_: answer_)
        elif name == "arch":
            platform_module.machine = lambda value=value: value
        elif name == "cores":
            os.cpu_count = lambda value=value: int(value)
            torch.set_num_threads(int(value))
        else:
            raise ValueError(f"{FORCE_CPU_ENV}: unknown probe {name!r} (amx, avx512_bf16, avx512, arch, cores)")
        forced[name] = value
    return forced


def _cuda_platform_hook() -> Callable[..., None]:
    """``CudaPlatformBase.check_and_update_config`` of this release, run without CUDA.

    ``vllm/platforms/cuda.py`` imports compiled CUDA extensions at module level,
    so it cannot be imported here; the hook itself only reads and sets config
    fields. Its source is taken from the installed module and executed with the
    module's imports that do load (the rest are never reached by the hook).
    """
    import ast

    spec = importlib.util.find_spec("vllm.platforms.cuda")
    if spec is None or spec.origin is None:
        raise ImportError("vllm.platforms.cuda not found")
    with open(spec.origin, encoding="utf-8") as handle:
        source = handle.read()
    tree = ast.parse(source, spec.origin)
    namespace: dict[str, Any] = {"__name__": "vllm.platforms.cuda", "__package__": "vllm.platforms"}
    hook: ast.FunctionDef | None = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "CudaPlatformBase":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "check_and_update_config":
                    hook = item
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef)) or (
            isinstance(node, ast.Assign) and ast.unparse(node.value).startswith("init_logger(")
        ):
            with contextlib.suppress(Exception):
                exec(compile(ast.Module(body=[node], type_ignores=[]), spec.origin, "exec"), namespace)
    if hook is None:
        raise ImportError("CudaPlatformBase.check_and_update_config not found in vllm/platforms/cuda.py")
    hook.decorator_list = []
    future = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    exec(compile(ast.Module(body=[*future, hook], type_ignores=[]), spec.origin, "exec"), namespace)
    function: Callable[..., None] = namespace["check_and_update_config"]
    return function


@contextlib.contextmanager
def _as_unknown_gpu(platform_cls: Any) -> Iterator[None]:
    """For one call: not a CPU, and a device whose name and memory cannot be queried."""

    def no_device(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the oracle judges for a GPU it cannot query")

    saved = {
        name: platform_cls.__dict__[name]
        for name in ("is_cpu", "get_device_total_memory", "get_device_name")
        if name in platform_cls.__dict__
    }
    platform_cls.is_cpu = lambda self: False
    platform_cls.get_device_total_memory = classmethod(no_device)
    platform_cls.get_device_name = classmethod(no_device)
    try:
        yield
    finally:
        for name in ("is_cpu", "get_device_total_memory", "get_device_name"):
            if name in saved:
                setattr(platform_cls, name, saved[name])
            else:
                delattr(platform_cls, name)


# the GPU the current `validate` request declares (its "gpu"): the device get_batch_defaults queries; None: a device
# that cannot be queried, as before GPUs could be declared
_DECLARED: dict[str, Any] = {"gpu": None}


@contextlib.contextmanager
def _as_declared_gpu(platform_cls: Any) -> Iterator[None]:
    """For one call: not a CPU, and the declared GPU's total memory, name and capability (the three queries of
    `EngineArgs.get_batch_defaults`); with no GPU declared, a device that cannot be queried."""
    gpu = _DECLARED["gpu"]
    if gpu is None:
        with _as_unknown_gpu(platform_cls):
            yield
        return
    from vllm.platforms.interface import DeviceCapability

    names = ("is_cpu", "get_device_total_memory", "get_device_name", "get_device_capability")
    saved = {name: platform_cls.__dict__[name] for name in names if name in platform_cls.__dict__}
    major, minor = gpu["capability"]
    platform_cls.is_cpu = lambda self: False
    platform_cls.get_device_total_memory = classmethod(lambda cls, device_id=0: int(gpu["memory_bytes"]))
    platform_cls.get_device_name = classmethod(lambda cls, device_id=0: str(gpu["device_name"]))
    platform_cls.get_device_capability = classmethod(lambda cls, device_id=0: DeviceCapability(major, minor))
    try:
        yield
    finally:
        for name in names:
            if name in saved:
                setattr(platform_cls, name, saved[name])
            else:
                delattr(platform_cls, name)


class _CudaAlike:
    """The platform as `vllm/config/parallel.py` sees it: CUDA-alike, everything else the real platform's answer.

    There `is_cuda_alike` gates only EPLB ("Expert parallelism load balancing is only supported on CUDA
    devices ..."), every release 0.27.0-0.33.0.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def is_cuda_alike(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Cuda:
    """The platform as `vllm/engine/arg_utils.py` sees it: CUDA, everything else the real platform's answer.

    There `is_cuda()` gates only `--kda-prefill-backend=flashkda` ("... is only available on CUDA.", 0.30.0-0.33.0;
    no other `is_cuda()` call in that module, 0.27.0-0.33.0); `is_rocm()` keeps the CPU's answer (False), as on CUDA.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def is_cuda(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def judge_as_gpu_host() -> list[str]:
    """Replace every CPU-platform hook that changes a configuration by a GPU host's behaviour."""
    import torch
    from vllm.platforms import cpu as cpu_platform_module
    from vllm.platforms.interface import CpuArchEnum

    platform_cls: Any = cpu_platform_module.CpuPlatform
    done: list[str] = []

    cuda_hook = _cuda_platform_hook()
    platform_cls.check_and_update_config = classmethod(cuda_hook)
    done.append(
        "CpuPlatform.check_and_update_config -> CudaPlatformBase.check_and_update_config of this release"
        " (no CPU block sizes, MLA/AMX prefix-caching and chunked-prefill switches, float32 Mamba SSM cache,"
        " async-scheduling/DBO/executor/compilation changes, or env vars it exports)"
    )

    platform_cls.get_cpu_architecture = classmethod(lambda cls: CpuArchEnum.X86)
    done.append("CpuPlatform.get_cpu_architecture -> X86 (RISC-V prefix-caching/chunked-prefill switch, POWERPC dtype)")

    platform_cls.supported_dtypes = property(lambda self: [torch.bfloat16, torch.float16, torch.float32])
    done.append("CpuPlatform.supported_dtypes -> bfloat16, float16, float32 (an Ampere or newer GPU)")

    from vllm.config import parallel as parallel_config_module

    parallel_config_module.current_platform = _CudaAlike(parallel_config_module.current_platform)  # type: ignore[attr-defined]
    done.append(
        "vllm/config/parallel.py current_platform.is_cuda_alike -> True (ParallelConfig's EPLB platform check;"
        " the EPLB checks a CUDA host makes after it are judged)"
    )

    from vllm.engine import arg_utils as arg_utils_module

    arg_utils_module.current_platform = _Cuda(arg_utils_module.current_platform)  # type: ignore[attr-defined]
    done.append(
        "vllm/engine/arg_utils.py current_platform.is_cuda -> True (the --kda-prefill-backend=flashkda platform check)"
    )

    static = inspect_static(EngineArgs, "get_batch_defaults")
    if static is not None:
        kind, original = static

        def get_batch_defaults(*args: Any, **kwargs: Any) -> Any:
            with _as_declared_gpu(platform_cls):
                return original(*args, **kwargs)

        patched: Any = kind(get_batch_defaults) if kind else get_batch_defaults
        EngineArgs.get_batch_defaults = patched  # type: ignore[method-assign]
        done.append(
            "EngineArgs.get_batch_defaults -> a GPU host's defaults: for the GPU a request declares (its total"
            " memory, name and capability), else for a device whose name and memory are unknown (not the CPU's"
            " 2048 x world size batched tokens and 128 x world size sequences)"
        )
    return done


def inspect_static(owner: type, name: str) -> tuple[Any, Callable[..., Any]] | None:
    """How ``owner.name`` is bound (staticmethod, classmethod or a plain function) and its function."""
    for klass in owner.__mro__:
        if name in klass.__dict__:
            raw = klass.__dict__[name]
            if isinstance(raw, staticmethod):
                return staticmethod, raw.__func__
            if isinstance(raw, classmethod):
                return classmethod, raw.__func__
            return None, raw
    return None


if _IMPORT_ERROR is None:
    try:
        FORCED_CPU = force_cpu_probes(os.environ.get(FORCE_CPU_ENV, ""))
        if GPU_SPEC is not None:
            pass  # main(): after the warm-up under the CPU platform (gpu_platform.warm_up)
        elif os.environ.get(RAW_CPU_HOOKS_ENV) != "1":
            NEUTRALISED = judge_as_gpu_host()
    except BaseException:  # reported in the hello line
        _IMPORT_ERROR = traceback.format_exc()


# --------------------------------------------------------------------------
# JSON conversion


def type_label(action: argparse.Action) -> str | None:
    """The catalogue's name for an action's type (see vllm-facts.md section 6)."""
    if isinstance(
        action,
        (argparse.BooleanOptionalAction, argparse._StoreTrueAction, argparse._StoreFalseAction),
    ):
        return "bool"
    return _callable_label(action.type)


def _callable_label(fn: Any) -> str | None:
    if fn is None:
        return None
    if isinstance(fn, type):
        return fn.__name__
    qualname = getattr(fn, "__qualname__", "") or ""
    if qualname.endswith("optional_type.<locals>._optional_type"):
        return "optional:" + str(_callable_label(_closure_var(fn, "return_type")))
    if qualname.endswith("parse_type.<locals>._parse_type"):
        inner = _closure_var(fn, "return_type")
        if inner is json.loads:
            return "json"
        return str(_callable_label(inner))
    if qualname.endswith("<locals>.parse_dataclass"):
        cls = _dataclass_of(fn)
        return f"json:{cls.__name__}" if cls is not None else "json"
    if fn is json.loads:
        return "json"
    return str(getattr(fn, "__name__", type(fn).__name__))


def _closure_var(fn: Any, name: str) -> Any:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return None
    for var, cell in zip(code.co_freevars, cells, strict=False):
        if var == name:
            return cell.cell_contents
    return None


def _dataclass_of(fn: Any) -> type | None:
    """The config class a ``parse_dataclass`` closure validates into."""
    defaults = getattr(fn, "__defaults__", None) or ()
    for value in defaults:
        if isinstance(value, type) and dataclasses.is_dataclass(value):
            return value
    found = _closure_var(fn, "cls") or _closure_var(fn, "dataclass_cls")
    return found if isinstance(found, type) else None


def _is_config_object(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def to_json(value: Any, *, raw: dict[int, Any] | None = None) -> Any:
    """A deterministic JSON form of a parsed value or default.

    Config objects become ``"<ClassName>()"`` (their reprs hold uuids and
    platform-dependent values) unless ``raw`` knows the JSON they were parsed
    from; enums become their value; sets become sorted lists.
    """
    if raw is not None and id(value) in raw:
        return raw[id(value)]
    if isinstance(value, enum.Enum):
        return to_json(value.value, raw=raw) if _is_plain(value.value) else value.name
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if _is_config_object(value):
        return f"{type(value).__name__}()"
    if isinstance(value, dict):
        return {str(k): to_json(v, raw=raw) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v, raw=raw) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [to_json(v, raw=raw) for v in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    name = getattr(value, "__qualname__", None) or type(value).__name__
    return f"<{name}>"


def _is_plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def default_kind(value: Any) -> str:
    """``value``, ``enum``, ``config_object``, or ``sentinel``/``object``.

    ``sentinel`` (default recorded as null): a private marker object meaning
    "not given", e.g. ``PREFIX_CACHE_RETENTION_INTERVAL_UNSET`` in 0.29.0,
    resolved later from an environment variable. ``object``: any other
    default with no JSON form (none in 0.27.0 - 0.33.0).
    """
    if isinstance(value, enum.Enum) and not isinstance(value, (int, str)):
        return "enum"
    if _is_config_object(value):
        return "config_object"
    if _has_json_form(value):
        return "value"
    name = type(value).__name__.lower()
    return "sentinel" if "unset" in name or "sentinel" in name else "object"


def _has_json_form(value: Any) -> bool:
    if _is_plain(value) or isinstance(value, enum.Enum):
        return True
    if isinstance(value, dict):
        return all(_has_json_form(v) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_has_json_form(v) for v in value)
    return _is_config_object(value)


def catalogue_default(value: Any) -> Any:
    kind = default_kind(value)
    return None if kind in ("sentinel", "object") else to_json(value)


# --------------------------------------------------------------------------
# Parsers


def make_serve_parser() -> Any:
    """``make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))``."""
    return _CLI_MODULE.make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))


def make_cli_parser() -> Any:
    """The ``vllm`` CLI parser with only the ``serve`` subcommand, as
    ``vllm/entrypoints/cli/main.py`` and ``cli/serve.py`` build it (without
    importing the server modules)."""
    parser = FlexibleArgumentParser(prog="vllm", description="vLLM CLI")
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    serve = subparsers.add_parser(
        "serve",
        help="Launch a local OpenAI-compatible API server.",
        usage="vllm serve [model_tag] [options]",
    )
    _CLI_MODULE.make_arg_parser(serve)
    return parser, serve


class Recorder:
    """Remembers the JSON each config-typed option was parsed from."""

    def __init__(self) -> None:
        self.raw: dict[int, Any] = {}
        self._keep: list[Any] = []

    def clear(self) -> None:
        self.raw.clear()
        self._keep.clear()

    def wrap(self, fn: Callable[[str], Any]) -> Callable[[str], Any]:
        def recorded(val: str) -> Any:
            result = fn(val)
            if _is_config_object(result):
                self._keep.append(result)
                self.raw[id(result)] = _raw_json(val)
            return result

        recorded.__name__ = getattr(fn, "__name__", "recorded")
        recorded.__qualname__ = getattr(fn, "__qualname__", "recorded")
        return recorded


_IMMUTABLE = (str, bytes, int, float, bool, type(None), tuple, frozenset, enum.Enum)


def fresh_defaults(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Give this case its own copy of every mutable default the parser hands out.

    argparse puts the very default object of an action into every namespace, and the worker parses many
    cases with one parser. vLLM mutates some of those objects while it builds the config (0.33.0:
    ``EngineArgs.__post_init__`` sets ``aux_output_config.enable_return_routed_experts``, and the config
    classes fill in compilation and cache settings), which in a one-shot ``vllm serve`` does no harm but
    here would carry one case's settings into every later case.
    """
    for action in parser._actions:
        value = getattr(ns, action.dest, None)
        if value is action.default and not isinstance(value, _IMMUTABLE):
            setattr(ns, action.dest, copy.deepcopy(value))
    for dest, value in parser._defaults.items():
        if getattr(ns, dest, None) is value and not isinstance(value, _IMMUTABLE):
            setattr(ns, dest, copy.deepcopy(value))


def _raw_json(val: str) -> Any:
    try:
        return json.loads(val)
    except ValueError:
        expand = getattr(arg_utils, "_expand_json_human_readable_numbers", None)
        if expand is not None:
            with contextlib.suppress(ValueError):
                return json.loads(expand(val))
    return val


class Oracle:
    def __init__(self) -> None:
        self.cli, self.serve = make_cli_parser()
        self.recorder = Recorder()
        for action in self.serve._actions:
            label = type_label(action)
            if label is not None and "json:" in label and callable(action.type):
                action.type = self.recorder.wrap(action.type)

    # -- parse ------------------------------------------------------------

    def parse_ns(self, argv: list[str]) -> argparse.Namespace:
        """Parse like ``vllm serve ARGV``; argparse errors raise SystemExit."""
        self.recorder.clear()
        ns: argparse.Namespace = self.cli.parse_args(["serve", *argv])
        fresh_defaults(ns, self.serve)
        return ns

    def op_parse(self, request: dict[str, Any]) -> dict[str, Any]:
        argv = _argv_of(request)
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr):
                ns = self.parse_ns(argv)
        except SystemExit as exc:
            return _exit_answer(exc, stderr.getvalue())
        namespace = {k: to_json(v, raw=self.recorder.raw) for k, v in vars(ns).items()}
        return {"ok": True, "namespace": namespace}

    # -- validate -----------------------------------------------------------

    def op_validate(self, request: dict[str, Any]) -> dict[str, Any]:
        argv = _argv_of(request)
        env = request.get("env") or {}
        if not isinstance(env, dict):
            raise TypeError("env must be an object of strings")
        config_json = request.get("config_json")
        _DECLARED["gpu"] = request.get("gpu")
        with scoped_environ({str(k): None if v is None else str(v) for k, v in env.items()}):
            model_dir = tempfile.mkdtemp(prefix="profilekit-oracle-model-")
            try:
                return self._validate(argv, config_json, model_dir)
            finally:
                shutil.rmtree(model_dir, ignore_errors=True)
                _DECLARED["gpu"] = None

    def _validate(self, argv: list[str], config_json: Any, model_dir: str) -> dict[str, Any]:
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(_Tee(stderr, sys.stderr)):
                ns = self.parse_ns(argv)
        except SystemExit as exc:
            rejected = _exit_answer(exc, stderr.getvalue())
            rejected["error_type"] = "SystemExit"
            return rejected
        try:
            _CLI_MODULE.validate_parsed_serve_args(ns)
            if config_json is not None:
                with open(os.path.join(model_dir, "config.json"), "w") as handle:
                    json.dump(config_json, handle)
                ns.model_tag = model_dir
            # vllm/entrypoints/cli/serve.py: the positional wins over --model.
            if getattr(ns, "model_tag", None) is not None:
                ns.model = ns.model_tag
            ns.skip_tokenizer_init = True
            engine_args = AsyncEngineArgs.from_cli_args(ns)
            # vllm/entrypoints/cli/serve.py run_headless (every release 0.27.0-0.33.0): a `--headless` node builds
            # its config with headless=True, and refuses a node with no local engine
            headless = getattr(ns, "headless", False) is True
            config = engine_args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER, headless=headless)
            if headless and config.parallel_config.data_parallel_size_local <= 0:
                raise ValueError("data_parallel_size_local must be > 0 in headless mode")
            if GPU_SPEC is not None:
                # the worker's own start-up check of the dtype (vllm/v1/worker/gpu_worker.py init_device, every
                # release 0.27.0-0.33.0): it stops the launch just the same, before any weight is loaded
                _current_platform().check_if_supports_dtype(config.model_config.dtype)
        except Exception as exc:  # every failure is a verdict
            failed: dict[str, Any] = {"ok": False, **describe_error(exc)}
            reason = undecidable_reason(exc)
            if reason is not None:
                failed["undecidable"] = reason
            return failed
        return {"ok": True}

    # -- catalogue ------------------------------------------------------------

    def op_catalogue(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "version": VERSION, "catalogue": build_catalogue(), "values": build_values()}

    def op_info(self, request: dict[str, Any]) -> dict[str, Any]:
        return info()

    def op_envs(self, request: dict[str, Any]) -> dict[str, Any]:
        """What ``vllm.envs`` reports now for the given names (leak checks)."""
        names = request.get("names")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise TypeError("names must be a list of strings")
        return {
            "ok": True,
            "envs": {name: to_json(getattr(vllm_envs, name, None)) for name in names},
            "environ": {name: os.environ.get(name) for name in names},
        }


def _argv_of(request: dict[str, Any]) -> list[str]:
    argv = request.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise TypeError("argv must be a list of strings")
    return list(argv)


def _exit_answer(exc: SystemExit, stderr: str) -> dict[str, Any]:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    lines = [line for line in stderr.splitlines() if line.strip()]
    message = ""
    for line in reversed(lines):
        marker = line.find(": error: ")
        if marker >= 0:
            message = line[marker + len(": error: ") :]
            break
    if not message:
        message = lines[-1] if lines else f"exited with status {code}"
    return {"ok": False, "exit_code": code, "error": message, "stderr": stderr}


class _Tee(io.TextIOBase):
    def __init__(self, *streams: TextIO) -> None:
        self._streams = streams

    def write(self, text: str) -> int:
        for stream in self._streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self._streams:
            stream.flush()


def describe_error(exc: BaseException) -> dict[str, Any]:
    """``error_type`` and ``error`` of a failed case.

    VllmConfig is a pydantic dataclass: a ``ValueError`` raised in one of its
    validators reaches the caller wrapped in a ``pydantic.ValidationError``
    whose text adds a location, the input and a URL. The answer names the
    wrapped exception and its own message (the text vLLM's author wrote), and
    keeps the wrapper's full text in ``raw_error``.
    """
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ == "ValidationError" and callable(errors):
        try:
            details = errors()
        except Exception:
            details = []
        inner: list[tuple[str, str]] = []
        for detail in details:
            ctx = detail.get("ctx") or {}
            wrapped = ctx.get("error")
            if isinstance(wrapped, BaseException):
                inner.append((type(wrapped).__name__, str(wrapped)))
            else:
                inner.append((type(exc).__name__, str(detail.get("msg", ""))))
        if inner:
            types_ = {t for t, _ in inner}
            return {
                "error_type": types_.pop() if len(types_) == 1 else type(exc).__name__,
                "error": "; ".join(m for _, m in inner),
                "raw_error": str(exc),
                "wrapper": type(exc).__name__,
            }
    return {"error_type": type(exc).__name__, "error": str(exc)}


UNDECIDABLE_MODULES = {
    "lmcache": "needs the lmcache package (compiled CUDA code); no CPU verdict",
}


def undecidable_reason(exc: BaseException) -> str | None:
    """Known failures that say nothing about a GPU host (vllm-facts.md 5.1a, 8)."""
    if isinstance(exc, ModuleNotFoundError):
        name = (exc.name or "").split(".")[0]
        if name in UNDECIDABLE_MODULES:
            return UNDECIDABLE_MODULES[name]
        return f"module {exc.name!r} is not installed in the CPU oracle"
    message = str(exc)
    if "requires Triton" in message:
        return "this release rejects the V2 model runner without Triton; a GPU host has Triton"
    if GPU_SPEC is not None:
        return gpu_platform.host_library_reason(exc)
    return None


@contextlib.contextmanager
def scoped_environ(changes: dict[str, str | None]) -> Iterator[None]:
    """Apply ``changes`` to os.environ for one case, then restore it exactly.

    ``vllm.envs`` reads os.environ lazily through a module ``__getattr__``
    that ``enable_envs_cache()`` may wrap in ``functools.cache``; the cache is
    dropped before and after the case so no value leaks between cases.
    """
    saved = dict(os.environ)
    _reset_envs_cache()
    try:
        for key, value in changes.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        _reset_envs_cache()


def _reset_envs_cache() -> None:
    disable = getattr(vllm_envs, "disable_envs_cache", None)
    if callable(disable):
        disable()
        return
    getter = getattr(vllm_envs, "__getattr__", None)
    clear = getattr(getter, "cache_clear", None)
    if callable(clear):
        clear()


# --------------------------------------------------------------------------
# Catalogue


def build_catalogue() -> list[dict[str, Any]]:
    parser = make_serve_parser()
    groups: dict[int, str] = {}
    for group in parser._action_groups:
        for action in group._group_actions:
            groups.setdefault(id(action), str(group.title))
    accepted: dict[int, list[str]] = {}
    for option, action in parser._option_string_actions.items():
        accepted.setdefault(id(action), []).append(option)
    deprecated_actions: set[argparse.Action] = getattr(parser, "_deprecated", None) or set()
    enums = _enum_fields()

    entries: list[dict[str, Any]] = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        long_options = [o for o in action.option_strings if o.startswith("--")]
        entry: dict[str, Any] = {
            "flag": min(long_options, key=len) if long_options else None,
            "dest": action.dest,
            "type": type_label(action),
            "choices": to_json(list(action.choices)) if action.choices is not None else None,
            "default": catalogue_default(action.default),
            "help_first_line": _first_line(action.help),
            "help": action.help or "",
            "option_strings": list(action.option_strings),
            "accepted_option_strings": sorted(accepted.get(id(action), [])),
            "action": type(action).__name__,
            "nargs": action.nargs,
            "default_kind": default_kind(action.default),
            "group": groups.get(id(action)),
            "deprecated": is_deprecated(action, deprecated_actions),
        }
        if not action.option_strings:
            entry["positional"] = True
        if action.dest in enums:
            entry["enum_after_parse"] = enums[action.dest]
        entries.append(entry)
    return entries


def build_values() -> dict[str, Any]:
    """The value constraints of this release's config classes (tools/oracle/constraints.py)."""
    import constraints

    parser = make_serve_parser()
    dests = [action.dest for action in parser._actions]
    json_options = constraints.json_option_classes(parser, _config_class_of)
    return constraints.value_constraints(EngineArgs, arg_utils, dests, json_options)


def _config_class_of(fn: Any) -> type | None:
    """The config class a `json:<Config>` argparse type validates into (through `optional_type` too)."""
    qualname = getattr(fn, "__qualname__", "") or ""
    if qualname.endswith("optional_type.<locals>._optional_type"):
        fn = _closure_var(fn, "return_type")
        qualname = getattr(fn, "__qualname__", "") or ""
    return _dataclass_of(fn) if qualname.endswith("<locals>.parse_dataclass") else None


def _first_line(text: str | None) -> str:
    """The first line of the help text exactly as vLLM wrote it."""
    if not text:
        return ""
    return text.split("\n", 1)[0]


_SAYS_DEPRECATED = re.compile(r"\bis deprecated\b", re.IGNORECASE)


def is_deprecated(action: argparse.Action, deprecated_actions: Any) -> bool:
    """vLLM marks a deprecated option in one of three ways.

    - the ``deprecated=True`` argument of ``add_argument`` (native in Python
      3.13; ``FlexibleArgumentParser._deprecated`` before that);
    - a dedicated action class (``DeprecatedLogConfigFileAction`` in 0.33.0);
    - a help text whose first line says the option "is deprecated" (0.33.0:
      ``--mamba-cache-mode``, ``--disable-cascade-attn``), the option still
      being accepted and only warned about at run time.

    A help text that mentions deprecated *values* ("Whether to allow
    deprecated quantization methods") or a future deprecation further down
    does not count.
    """
    if action in deprecated_actions or getattr(action, "deprecated", False):
        return True
    if type(action).__name__.startswith("Deprecated"):
        return True
    return bool(_SAYS_DEPRECATED.search(_first_line(action.help)))


def _enum_fields() -> dict[str, dict[str, Any]]:
    """EngineArgs fields typed with an Enum, which argparse receives as text."""
    try:
        import typing

        hints = typing.get_type_hints(EngineArgs)
    except Exception:  # fall back to the raw annotations
        hints = {f.name: f.type for f in dataclasses.fields(EngineArgs)}
    found: dict[str, dict[str, Any]] = {}
    for name, hint in hints.items():
        enum_cls = _enum_in(hint)
        if enum_cls is not None:
            found[name] = {"enum": enum_cls.__name__, "member_names": list(enum_cls.__members__)}
    return found


def _enum_in(hint: Any) -> type[enum.Enum] | None:
    import typing

    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    for arg in typing.get_args(hint):
        found = _enum_in(arg)
        if found is not None:
            return found
    return None


# --------------------------------------------------------------------------
# Main loop


def info() -> dict[str, Any]:
    import platform

    return {
        "ok": True,
        "version": VERSION,
        "cli_module": getattr(_CLI_MODULE, "__name__", None),
        "vllm_file": getattr(vllm, "__file__", None),
        "python": platform.python_version(),
        "has_triton_patched": hasattr(_vllm_config_module, "HAS_TRITON"),
        "neutralised": NEUTRALISED,
        "forced_cpu": FORCED_CPU,
        "current_platform": type(_current_platform()).__name__,
        "gpu": GPU_SPEC,
        "platform_answers": gpu_platform.answers(_current_platform()) if GPU_SPEC is not None else None,
    }


def _current_platform() -> Any:
    from vllm.platforms import current_platform

    return current_platform


def answer(payload: dict[str, Any]) -> None:
    try:
        line = json.dumps(payload, allow_nan=False)
    except (TypeError, ValueError):
        line = json.dumps(payload, default=repr)
    _ANSWERS.write(line + "\n")
    _ANSWERS.flush()


def serve_forever(oracle: Oracle) -> None:
    ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
        "parse": oracle.op_parse,
        "validate": oracle.op_validate,
        "catalogue": oracle.op_catalogue,
        "info": oracle.op_info,
        "envs": oracle.op_envs,
    }
    for line in sys.stdin:
        if not line.strip():
            continue
        request_id: Any = None
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise TypeError("a request must be a JSON object")
            request_id = request.get("id")
            op = ops.get(str(request.get("op")))
            if op is None:
                raise ValueError(f"unknown op {request.get('op')!r}; known: {sorted(ops)}")
            result = op(request)
        except BaseException as exc:  # never die on one request
            if isinstance(exc, KeyboardInterrupt):
                raise
            result = {
                "ok": False,
                "error_type": type(exc).__name__,
                "error": str(exc),
                "internal": True,
                "traceback": traceback.format_exc(),
            }
        if request_id is not None:
            result["id"] = request_id
        answer(result)


def main() -> int:
    if _IMPORT_ERROR is not None:
        answer({"ok": False, "hello": True, "error": _IMPORT_ERROR})
        return 1
    try:
        oracle = Oracle()
        if GPU_SPEC is not None:
            NEUTRALISED[:] = gpu_platform.warm_up(oracle) + gpu_platform.install(GPU_SPEC)
    except BaseException:
        answer({"ok": False, "hello": True, "error": traceback.format_exc()})
        return 1
    hello = info()
    hello["hello"] = True
    hello["startup_seconds"] = round(time.monotonic() - _STARTED, 2)
    answer(hello)
    serve_forever(oracle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
