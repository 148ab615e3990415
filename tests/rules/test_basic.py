"""missing-model."""

from __future__ import annotations

from tests.rules.conftest import Check


def test_missing_model(check: Check) -> None:
    found = check({"s.toml": "[serve]\nport = 8000\n"})
    assert [(f.rule, f.role, f.message) for f in found] == [
        ("missing-model", "serve", "role serve runs vLLM but no layer of the stack sets serve.model (s)")
    ]
    assert found[0].fix == 'add a model layer to the stack, or set model = "..." in [serve]'
    command_only = '[roles.proxy]\nkind = "command"\ncommand = ["vllm-router"]\n'
    assert check({"s.toml": command_only}) == []
