"""Verdicts the out-of-sample broad corpus (seed 11, round 3 of issue 8) found profilekit getting wrong.

argparse converts the options in argv order, so an item of an array option fails at its option's place and a
validator of a JSON option (ProfilerConfig, EngramConfig) at its table's place, before an unknown key of a later
table; a data-parallel start rank infers hybrid load balancing, which one local rank turns into external load
balancing; SpeculativeConfig refuses `tensor_parallel_size` before it asks for a token count; EngramConfig's
validator runs as argparse reads `--engram-config`, long before the model check of `VllmConfig.__post_init__`.

Each case's expected verdict is written down, and profilekit's (`vllm_verdict`) and the oracle's (vLLM's message
mapped by tools/verdict_common.py `vllm_rule`) must both equal it, so a case cannot agree vacuously.
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


@dataclass(frozen=True)
class Case:
    id: str
    expect: str | None
    arch: str
    serve: dict[str, Any]
    releases: str = ""


UNKNOWN_KEY = {"structured_outputs_config": {"disable_ny_whitespace": True}}  # a table: after the scalars in argv
PROTON = {"profiler_config": {"proton_output_format": "hatchet", "proton_hook": "triton"}}
ELASTIC = {
    "enable_elastic_ep": True,
    "enable_eplb": True,
    "enable_expert_parallel": True,
    "eplb_config": {"use_async": False},  # async EPLB needs NIXL, which the oracle leaves out
    "data_parallel_size": 4,
    "data_parallel_start_rank": 2,
}
NGRAM = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2, "prompt_lookup_max": 4}

CASES = [
    # an array item fails at its option's place in the argv
    Case(
        "traces-item-first", "invalid-value", NEMOTRON, {"collect_detailed_traces": ["model", "bogus"], **UNKNOWN_KEY}
    ),
    Case(
        "traces-none-item-first",  # the seed-11 case
        "invalid-value",
        NEMOTRON,
        {"collect_detailed_traces": ["model,all", "None"], "ir_op_priority": {"fued_add_rms_norm": "bogus"}},
        releases="==0.29.0",
    ),
    Case("traces-fine-unknown-key", "unknown-option", NEMOTRON, {"collect_detailed_traces": ["model"], **UNKNOWN_KEY}),
    # a JSON option's validator fails at its table's place in the argv
    Case("proton-before-unknown-key", "profiler-config", LLAMA, {**PROTON, **UNKNOWN_KEY}, releases=">=0.28.0"),
    Case("unknown-key-before-proton", "unknown-option", LLAMA, {**UNKNOWN_KEY, **PROTON}, releases=">=0.28.0"),
    # EngramConfig._validate_shared_memory, before the model check (Kimi has no Engram embeddings)
    Case(
        "engram-thp-shared",
        "engram-config",
        KIMI,
        {"engram_config": {"dp_shared_memory": True, "use_thp": True}},
        releases=">=0.31.0",
    ),
    Case("engram-thp-private", "engram-model", KIMI, {"engram_config": {"use_thp": True}}, releases=">=0.31.0"),
    Case(
        "engram-shared-no-offload",
        "engram-config",
        KIMI,
        {"engram_config": {"cpu_offload": False, "dp_shared_memory": True}},
        releases=">=0.30.0",
    ),
    Case("engram-shared", "engram-model", KIMI, {"engram_config": {"dp_shared_memory": True}}, releases=">=0.30.0"),
    # a start rank with one local rank is an external load balancer (0.27.x: a non-zero start rank)
    Case(
        "start-rank-0-one-local",
        "data-parallel-external-lb",
        KIMI,
        {"data_parallel_start_rank": 0, "data_parallel_size_local": 1},
        releases=">=0.28.0",
    ),
    Case(
        "start-rank-0-one-local-027",
        None,
        KIMI,
        {"data_parallel_start_rank": 0, "data_parallel_size_local": 1},
        releases="<0.28.0",
    ),
    Case(
        "start-rank-1-one-local",
        "data-parallel-external-lb",
        KIMI,
        {"data_parallel_start_rank": 1, "data_parallel_size_local": 1},
    ),
    Case(
        "start-rank-one-local-dp2",
        None,
        KIMI,
        {"data_parallel_size": 2, "data_parallel_start_rank": 1, "data_parallel_size_local": 1},
    ),
    # ... and elastic EP sees the mode the start rank infers
    Case("elastic-inferred-hybrid", "elastic-expert-parallel", KIMI, {**ELASTIC, "data_parallel_size_local": 2}),
    Case("elastic-one-node", None, KIMI, {**ELASTIC, "data_parallel_size_local": 4}),
    # SpeculativeConfig._verify_args
    Case(
        "spec-tp-before-count",
        "speculative-tensor-parallel-size",
        NEMOTRON,
        {"speculative_config": {"method": "ngram", "tensor_parallel_size": 0}},
    ),
    Case(
        "spec-tp",
        "speculative-tensor-parallel-size",
        LLAMA,
        {"speculative_config": {**NGRAM, "tensor_parallel_size": 1}},
    ),
    Case("spec-draft-tp", None, LLAMA, {"speculative_config": {**NGRAM, "draft_tensor_parallel_size": 1}}),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    oracle = oracle_pool.get(version)
    predicted, actual, message = verdicts(oracle, version, tmp_path, arch=case.arch, serve=case.serve)
    assert (predicted, actual) == (case.expect, case.expect), message


def test_every_new_rule_has_a_triggering_and_an_accepted_case() -> None:
    from profilekit.rules import RULES

    expected = {c.expect for c in CASES}
    assert {"engram-config", "speculative-tensor-parallel-size"} <= set(RULES)
    assert {"engram-config", "speculative-tensor-parallel-size", "data-parallel-external-lb", None} <= expected
