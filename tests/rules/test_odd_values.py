"""No value a user can write makes a rule crash: odd types reach the rules as findings of other checks, never as a traceback."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check

ODD = [
    "1979-05-27T07:32:00Z",
    "{ a = 1979-05-27 }",
    "[1979-05-27]",
    "[1, [2, 3]]",
    '"text"',
    "true",
    "-3",
    "1e400",
    "{ a = { b = [] } }",
    "[]",
]
KEYS = [
    "kv_transfer_config",
    "kv_offloading_size",
    "kv_offloading_backend",
    "speculative_config",
    "mamba_backend",
    "mamba_cache_mode",
    "replayssm_buffer_len",
    "enable_prefix_caching",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "block_size",
    "kv_cache_dtype",
    "model",
    "use_replayssm",
]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("value", ODD)
def test_odd_values_do_not_crash_the_rules(check: Check, key: str, value: str) -> None:
    base = '[model]\narchitecture = "NemotronHForCausalLM"\n\n[serve]\n'
    text = base + (
        "" if key == "model" else 'model = "m"\nuse_replayssm = true\n' if key != "use_replayssm" else 'model = "m"\n'
    )
    text += f"{key} = {value}\n"
    pd = (
        '[roles.prefill.serve]\nkv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_producer" }\n'
        f"{'' if key == 'kv_transfer_config' else key + ' = ' + value}\n"
        '[roles.decode.serve]\nkv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_consumer" }\n'
        '[roles.decode.env]\nVLLM_NIXL_SIDE_CHANNEL_PORT = "x"\nPYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"\n\n[roles.decode]\nkind = "vllm"\n\n[roles.prefill]\nkind = "vllm"\n'
    )
    for files, stack in (({"s.toml": text}, "s"), ({"s.toml": text, "p.toml": pd}, "s+p")):
        for version in ("0.27.0", "0.33.0"):
            findings = check(files, stack=stack, version=version)
            assert all(f.message for f in findings)
