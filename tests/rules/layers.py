"""Build layer files for rule tests."""

from __future__ import annotations

from typing import Any

import tomlkit

NEMOTRON = "NemotronHForCausalLM"
KIMI = "KimiLinearForCausalLM"
LLAMA = "LlamaForCausalLM"
RELEASES = ("0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


def layer(arch: str | None = NEMOTRON, *, env: dict[str, Any] | None = None, **serve: Any) -> str:
    """A layer that declares `arch` and serves a model with `serve` options and `env`."""
    doc = tomlkit.document()
    if arch is not None:
        doc["model"] = {"architecture": arch}
    doc["serve"] = {"model": f"org/{arch or 'model'}", **serve}
    if env:
        doc["env"] = env
    return tomlkit.dumps(doc)


def at_least(version: str, minimum: str) -> bool:
    return tuple(map(int, version.split("."))) >= tuple(map(int, minimum.split(".")))
