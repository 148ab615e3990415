"""A top-level flag and the config key it feeds, both written (rules/exclusive.py): vLLM's
`EngineArgs.create_engine_config` refuses each pair, every release."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES

RULE = "flag-and-config-key"


@pytest.mark.parametrize("version", RELEASES)
def test_attention_backend_twice(check: Check, version: str) -> None:
    found = check(files(attention_backend="FLASH_ATTN", attention_config={"backend": "TRITON_ATTN"}), version=version)
    assert messages(found) == [
        refuses(
            version,
            'attention_backend = "FLASH_ATTN" and attention_config.backend = "TRITON_ATTN"',
            "attention_backend and attention_config.backend are mutually exclusive",
        )
    ]
    assert found[0].rule == RULE
    once = files(attention_backend="FLASH_ATTN", attention_config={"use_prefill_decode_attention": True})
    assert check(once, version=version, rule=RULE) == []


@pytest.mark.parametrize("version", RELEASES)
def test_flashinfer_autotune_twice_even_when_false(check: Check, version: str) -> None:
    found = check(
        files(enable_flashinfer_autotune=False, kernel_config={"enable_flashinfer_autotune": True}), version=version
    )
    assert messages(found) == [
        refuses(
            version,
            "enable_flashinfer_autotune = false and kernel_config.enable_flashinfer_autotune = true",
            "enable_flashinfer_autotune and kernel_config.enable_flashinfer_autotune are mutually exclusive",
        )
    ]
    assert check(files(kernel_config={"enable_flashinfer_autotune": True}), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_capture_sizes_twice(check: Check, version: str) -> None:
    found = check(
        files(
            cudagraph_capture_sizes=[1, 2],
            max_cudagraph_capture_size=8,
            compilation_config={"cudagraph_capture_sizes": [1, 4], "max_cudagraph_capture_size": 8},
        ),
        version=version,
    )
    assert messages(found) == [
        refuses(
            version,
            "cudagraph_capture_sizes = [1, 2] and compilation_config.cudagraph_capture_sizes = [1, 4]",
            "cudagraph_capture_sizes and compilation_config.cudagraph_capture_sizes are mutually exclusive",
        ),
        refuses(
            version,
            "max_cudagraph_capture_size = 8 and compilation_config.max_cudagraph_capture_size = 8",
            "max_cudagraph_capture_size and compilation_config.max_cudagraph_capture_size are mutually exclusive",
        ),
    ]
    split = files(cudagraph_capture_sizes=[1, 2], compilation_config={"max_cudagraph_capture_size": 2})
    assert check(split, version=version, rule=RULE) == []


@pytest.mark.parametrize("version", RELEASES)
def test_ir_op_priority_twice_names_the_first_op(check: Check, version: str) -> None:
    found = check(
        files(
            ir_op_priority={"fused_add_rms_norm": ["native"], "rms_norm": "native"},
            kernel_config={"ir_op_priority": {"rms_norm": ["native"], "fused_add_rms_norm": ["native"]}},
        ),
        version=version,
    )
    assert messages(found) == [
        refuses(
            version,
            "ir_op_priority.rms_norm and kernel_config.ir_op_priority.rms_norm are both set",
            "Op priority for rms_norm specified via both ir_op_priority and KernelConfig.ir_op_priority, "
            "only one allowed at a time.",
        )
    ]
    other_ops = files(ir_op_priority={"rms_norm": ["native"]}, kernel_config={"ir_op_priority": {"rms_norm": []}})
    assert check(other_ops, version=version, rule=RULE) == []
