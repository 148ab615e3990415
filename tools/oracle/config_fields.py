"""The keys of vLLM's JSON-valued options: the fields of the config classes they are parsed into.

Runs inside one release's oracle environment (it imports vLLM) and prints JSON:
``{dest: {"class": "KVTransferConfig", "fields": {name: TYPE, ...}}}`` where TYPE is a small
description of the field's annotation (``{"kind": "int"}``, ``{"kind": "literal", "values": [...]}``,
``{"kind": "optional", "of": TYPE}``, ``{"kind": "config", "class": ..., "fields": {...}}`` for a nested
config class, one level deep). The broad verdict corpus (tools/broad_corpus.py) draws JSON keys and
values from it, independently of what profilekit models; `tools/broad_report.py --fields` writes it to
tests/oracle/data/config-fields-X.json.

    PYTHONPATH=<vllm-X copy> <oracle python> tools/oracle/config_fields.py CATALOGUE.json
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import os
import sys
import types
import typing
from typing import Any

# vLLM logs to stdout: the answer goes to a private copy of it, everything else to stderr
_OUT = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# options typed plain `json` that vLLM builds a config class from (EngineArgs.create_*_config)
UNTYPED = {
    "speculative_config": "SpeculativeConfig",
    "watermark_config": "WatermarkConfig",
    "diffusion_config": "DiffusionConfig",
}


def describe(tp: Any, depth: int = 0) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return {"kind": "any"}
    if origin is typing.Annotated:
        return describe(args[0], depth)
    if tp is bool:
        return {"kind": "bool"}
    if tp is int:
        return {"kind": "int"}
    if tp is float:
        return {"kind": "float"}
    if tp is str:
        return {"kind": "str"}
    if origin is typing.Literal:
        return {"kind": "literal", "values": [a.value if isinstance(a, enum.Enum) else a for a in args]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp if isinstance(m.value, (str, int))]
        return {"kind": "enum", "names": [m.name for m in tp], "values": values}
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) < len(args):
            if len(inner) == 1:
                return {"kind": "optional", "of": describe(inner[0], depth)}
            return {"kind": "optional", "of": {"kind": "union", "of": [describe(a, depth) for a in inner]}}
        return {"kind": "union", "of": [describe(a, depth) for a in inner]}
    if origin in (list, tuple, set, frozenset) or tp in (list, tuple, set):
        return {"kind": "list", "of": describe(args[0], depth + 1) if args else {"kind": "any"}}
    if origin is dict or tp is dict:
        return {"kind": "dict"}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        out: dict[str, Any] = {"kind": "config", "class": tp.__name__}
        if depth == 0:
            out["fields"] = fields_of(tp, depth + 1)
        return out
    return {"kind": "other", "repr": getattr(tp, "__name__", repr(tp))[:80]}


def fields_of(cls: type, depth: int = 0) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:
        hints = {}
    out: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if not field.init or field.name.startswith("_"):
            continue
        tp = hints.get(field.name, field.type)
        try:
            described = describe(tp, depth) if not isinstance(tp, str) else {"kind": "other", "repr": tp[:80]}
        except Exception as exc:  # an annotation this script does not understand
            described = {"kind": "other", "repr": f"{type(exc).__name__}"}
        default = field.default
        if default is not dataclasses.MISSING:
            if isinstance(default, enum.Enum):
                default = default.value
            try:
                json.dumps(default)
                described["default"] = default
            except TypeError:
                pass
        out[field.name] = described
    return out


def config_class(name: str) -> type | None:
    config = importlib.import_module("vllm.config")
    found = getattr(config, name, None)
    if isinstance(found, type):
        return found
    import pkgutil

    for info in pkgutil.iter_modules(config.__path__):
        try:
            module = importlib.import_module(f"vllm.config.{info.name}")
        except Exception:
            continue
        found = getattr(module, name, None)
        if isinstance(found, type):
            return found
    return None


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        catalogue = json.load(handle)
    wanted: dict[str, str] = {}
    for entry in catalogue:
        label = str(entry.get("type") or "").removeprefix("optional:")
        if label.startswith("json:"):
            wanted[entry["dest"]] = label.removeprefix("json:")
        elif entry["dest"] in UNTYPED:
            wanted[entry["dest"]] = UNTYPED[entry["dest"]]
    out: dict[str, Any] = {}
    for dest, name in sorted(wanted.items()):
        cls = config_class(name)
        if cls is None or not dataclasses.is_dataclass(cls):
            continue
        out[dest] = {"class": name, "fields": fields_of(cls)}
    _OUT.write(json.dumps(out, indent=1, sort_keys=True) + "\n")
    _OUT.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
