"""Layers for the cross-field rule tests: a role whose `[model] config` is one of the oracle's dummy config.json files."""

from __future__ import annotations

import json
from typing import Any

import tomlkit

from tests.oracle.models import config_json

CONFIG = "profiles/../models/dummy/config.json"  # the repository's models/dummy/config.json


def files(
    arch: str = "LlamaForCausalLM",
    *,
    config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    with_config: bool = True,
    **serve: Any,
) -> dict[str, str]:
    """The layer `s` serving a dummy `arch` model with `serve` options, and its config.json (with `config` changes)."""
    doc = tomlkit.document()
    doc["model"] = {"config": "models/dummy/config.json"} if with_config else {"architecture": arch}
    doc["serve"] = {"model": f"dummy/{arch}", **serve}
    if env:
        doc["env"] = env
    out = {"s.toml": tomlkit.dumps(doc)}
    if with_config:
        raw = config_json(arch)
        for key, value in (config or {}).items():
            if value is None:
                raw.pop(key, None)
            else:
                raw[key] = value
        out[CONFIG] = json.dumps(raw)
    return out


def refuses(version: str, what: str, message: str) -> str:
    return f'{what}; vLLM {version} refuses to start: "{message}"'
