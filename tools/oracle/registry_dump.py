"""What one vLLM release's model registry says about every architecture it registers, as vLLM itself computes it.

Run with the oracle base venv's python and ``PYTHONPATH=<vllm-X copy>`` (``build_env.OracleEnv``), one argument:
the JSON file to write. It imports ``worker`` (the CPU oracle's process set-up), then loads each registered
model class in this process and takes ``_ModelInfo.from_model_cls`` of it, the record vLLM's registry answers
``is_text_generation_model``, ``supports_multimodal``, ``supports_pp``... from
(``vllm/model_executor/models/registry.py``). Model modules that import a library the oracle does not install
(torchvision, torchaudio, mistral_common, ...; a GPU host has them) get a stand-in module whose every name is
a placeholder class: class definitions and the interface flags they set are vLLM's own, and only code that
runs such a library's functions would notice. A class that still cannot load is listed with the reason.
"""

from __future__ import annotations

import dataclasses
import importlib.abc
import importlib.machinery
import json
import re
import sys
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import worker  # noqa: F401 - the oracle's process set-up, and vLLM imported
from vllm.model_executor.models.registry import ModelRegistry, _ModelInfo

# libraries some model modules import at the top that the CPU oracle does not install
STAND_INS = ("torchvision", "torchaudio", "mistral_common", "timm", "tiktoken", "terratorch", "numba")


class _Anything:
    """Whatever a stand-in's name is used as at import time: called, indexed, an attribute read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> _Anything:
        return _Anything()

    def __getattr__(self, name: str) -> _Anything:
        return _Anything()

    def __getitem__(self, key: Any) -> _Anything:
        return _Anything()

    def __iter__(self) -> Any:
        return iter(())


class _StandIn(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (_Anything,), {})


class _StandInLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StandIn(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _StandInFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".", maxsplit=1)[0] not in STAND_INS:
            return None
        try:
            found = importlib.machinery.PathFinder.find_spec(fullname.split(".", maxsplit=1)[0])
        except (ImportError, ValueError):
            found = None
        if found is not None:
            return None  # installed: the real one
        return importlib.machinery.ModuleSpec(fullname, _StandInLoader(), is_package=True)


def dump() -> dict[str, Any]:
    # installed after vLLM and transformers are imported: their "is torchvision available" probes saw the truth
    sys.meta_path.insert(0, _StandInFinder())
    infos: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    for arch, model in sorted(ModelRegistry.models.items()):
        try:
            info = _ModelInfo.from_model_cls(model.load_model_cls())
        except Exception as exc:  # a class that cannot load is reported, not fatal
            first = str(exc).splitlines()[0] if str(exc) else ""
            # no host paths in the shipped file: "(/root/.cache/...)" dropped
            failed[arch] = f"{type(exc).__name__}: {re.sub(r' [(]/[^)]*[)]?', '', first)[:160]}"
            continue
        infos[arch] = dataclasses.asdict(info)
    return {"architectures": infos, "not_inspected": failed}


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(dump(), default=str), encoding="utf-8")
