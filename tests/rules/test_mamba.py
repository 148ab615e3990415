"""Mamba cache rules that hold with or without ReplaySSM."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.layers import NEMOTRON, RELEASES, layer


@pytest.mark.parametrize("version", RELEASES)
def test_stochastic_rounding_needs_a_float16_ssm_cache(check: Check, version: str) -> None:
    found = check({"s.toml": layer(NEMOTRON, enable_mamba_cache_stochastic_rounding=True)}, version=version)
    assert messages(found) == [
        f"enable_mamba_cache_stochastic_rounding = true with mamba_ssm_cache_dtype unset; vLLM {version} refuses to start: "
        '"Stochastic rounding for Mamba cache requires the SSM cache to be float16. Please set it explicitly, by '
        "specifying `--mamba-ssm-cache-dtype float16`, or disable stochastic rounding by not specifying "
        '`--enable-mamba-cache-stochastic-rounding`."'
    ]
    ok = layer(NEMOTRON, enable_mamba_cache_stochastic_rounding=True, mamba_ssm_cache_dtype="float16")
    assert check({"s.toml": ok}, version=version) == []
