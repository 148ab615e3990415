"""The compilation config's checks give vLLM's verdict (rules/compilation.py and the generated `mode` and
`cudagraph_mode` constraints), and so does the order of an unknown kv_transfer_config key and a missing kv_role.

Each case's expected verdict is written down, and profilekit's (`vllm_verdict`) and the oracle's (vLLM's message
mapped by tools/verdict_common.py `vllm_rule`) must both equal it, so a case cannot agree vacuously. The wrong-rule
and missed cases of the broad corpus (round 3 of issue 8) are among them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.conftest import OraclePool, applicable, verdicts

LLAMA = "LlamaForCausalLM"
NEMOTRON = "NemotronHForCausalLM"
KIMI = "KimiLinearForCausalLM"
QWEN3 = "Qwen3ForCausalLM"


@dataclass(frozen=True)
class Case:
    id: str
    expect: str | None
    arch: str
    serve: dict[str, Any]
    releases: str = ""


def _cc(**table: Any) -> dict[str, Any]:
    return {"compilation_config": table}


CASES = [
    # CompilationConfig.validate_mode_before and the CompilationMode enum
    Case("mode-bogus", "invalid-value", KIMI, _cc(mode="bogus")),
    Case("mode-digit-string", "invalid-value", LLAMA, _cc(mode="3")),
    Case("mode-4", "invalid-value", LLAMA, _cc(mode=4)),
    Case("mode-lower-name", None, LLAMA, _cc(mode="vllm_compile")),
    Case("mode-true", None, LLAMA, _cc(mode=True)),
    Case("mode-bogus-before-max-num-seqs", "invalid-value", LLAMA, {"max_num_seqs": -1, **_cc(mode="bogus")}),
    Case(
        "mode-bogus-before-multi-port-lb",
        "invalid-value",
        NEMOTRON,
        {"data_parallel_multi_port_external_lb": True, **_cc(mode="bogus", cudagraph_mode="NONE")},
    ),
    Case("mode-bogus-with-unknown-key", "unknown-option", LLAMA, _cc(mode="bogus", use_inductor=True)),
    # CompilationConfig.validate_cudagraph_mode_before: a bare KeyError
    Case("cudagraph-bogus", "invalid-value", LLAMA, _cc(mode="DYNAMO_TRACE_ONCE", cudagraph_mode="bogus")),
    Case("cudagraph-bogus-with-unknown-key", "invalid-value", NEMOTRON, _cc(cudagraph_mode="bogus", use_inductor=True)),
    Case("cudagraph-bogus-before-block-size", "invalid-value", LLAMA, {"block_size": 0, **_cc(cudagraph_mode="bogus")}),
    Case(
        "unknown-key-of-an-earlier-option",
        "unknown-option",
        LLAMA,
        {"kv_transfer_config": {"kv_pot": 1}, **_cc(cudagraph_mode="bogus")},
    ),
    Case("cudagraph-3", "invalid-value", LLAMA, _cc(cudagraph_mode=3)),
    Case("cudagraph-mixed-case", None, QWEN3, _cc(cudagraph_mode="Full_And_Piecewise")),
    Case("cudagraph-false", None, QWEN3, _cc(cudagraph_mode=False)),
    # CompilationConfig.__post_init__
    Case("custom-op-syntax", "compilation-config", NEMOTRON, _cc(cudagraph_mode="FULL", custom_ops=["bogus"])),
    Case("custom-op-two-base-modes", "compilation-config", LLAMA, _cc(custom_ops=["all", "none"])),
    Case("custom-op-both-ways", "compilation-config", LLAMA, _cc(custom_ops=["+rms_norm", "-rms_norm"])),
    Case("custom-ops-fine", None, LLAMA, _cc(custom_ops=["none", "+rms_norm"])),
    Case("custom-op-syntax-after-a-bad-mode", "invalid-value", LLAMA, _cc(mode="bogus", custom_ops=["bogus"])),
    Case("vllm-compile-backend", "compilation-config", LLAMA, _cc(mode="vllm_compile", backend="bogus")),
    Case("backend-without-mode", None, LLAMA, _cc(backend="bogus")),
    Case(
        "encoder-vision-items",
        "compilation-config",
        LLAMA,
        _cc(cudagraph_mm_encoder=True, encoder_cudagraph_max_vision_items_per_batch=-1),
    ),
    Case("encoder-token-budgets", "compilation-config", LLAMA, _cc(encoder_cudagraph_token_budgets=[0, 5])),
    Case("inductor-pass-without-module", "compilation-config", LLAMA, _cc(inductor_passes={"fuse": "bogus"})),
    Case(
        "decoder-replay-sizes",
        "compilation-config",
        LLAMA,
        _cc(decoder_replay_cudagraph_capture_sizes=[0]),
        releases=">=0.32.0",
    ),
    # VllmConfig._set_compile_ranges
    Case("compile-range-minus-1", "compile-range-endpoint", NEMOTRON, _cc(compile_ranges_endpoints=[-1])),
    Case(
        "compile-range-0-eager",
        "compile-range-endpoint",
        QWEN3,
        {"enforce_eager": True, **_cc(mode="VLLM_COMPILE", cudagraph_mode="NONE", compile_ranges_endpoints=[0])},
    ),
    Case(
        "compile-range-0-capture-sizes",
        "compile-range-endpoint",
        QWEN3,
        {"cudagraph_capture_sizes": [2**31 - 1], **_cc(compile_ranges_endpoints=[0])},
    ),
    Case(
        "compile-range-after-max-num-seqs",
        "invalid-value",
        LLAMA,
        {"max_num_seqs": 0, **_cc(compile_ranges_endpoints=[0])},
    ),
    Case("compile-range-positive", None, LLAMA, _cc(compile_ranges_endpoints=[1, 8])),
    # KVTransferConfig: an unknown key is a field error, the missing kv_role a __post_init__ check
    Case(
        "kv-unknown-key-first", "unknown-option", KIMI, {"kv_transfer_config": {"kv_connector": "bogus", "kv_pot": 1}}
    ),
    Case("kv-role-missing", "kv-role-missing", KIMI, {"kv_transfer_config": {"kv_connector": "bogus"}}),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    oracle = oracle_pool.get(version)
    predicted, actual, message = verdicts(oracle, version, tmp_path, arch=case.arch, serve=case.serve)
    assert (predicted, actual) == (case.expect, case.expect), message


def test_every_rule_of_the_compilation_config_has_a_triggering_and_an_accepted_case() -> None:
    from profilekit.rules import RULES

    expected = {c.expect for c in CASES}
    assert {"compilation-config", "compile-range-endpoint"} <= set(RULES)
    assert {"compilation-config", "compile-range-endpoint", "invalid-value", None} <= expected
