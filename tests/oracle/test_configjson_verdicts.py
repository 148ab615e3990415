"""The last start-up checks against the model's config.json give vLLM's verdict: a triggering and a non-triggering
case per rule and release (rules/checkpoint.py).

The cases run as tests/oracle/test_crossfield.py's do: one layer whose `[model] config` is the dummy config.json
(with the case's changes) that the oracle's model folder holds too; profilekit's verdict must equal vLLM's and the
verdict the case expects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import LLAMA, Case, _verdicts

FP8 = {"quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}

CASES = [
    # ModelConfig._verify_quantization: the checkpoint's method against --quantization
    Case("quant-mismatch", "quantization-checkpoint-mismatch", LLAMA, {"quantization": "awq"}, config=FP8),
    Case(
        "quant-no-method",
        "quantization-checkpoint-mismatch",
        LLAMA,
        {"quantization": "fp8"},
        config={"quantization_config": {"bits": 4}},
    ),
    Case(
        "quant-upper-case-method",
        None,
        LLAMA,
        {"quantization": "fp8"},
        config={"quantization_config": {"quant_method": "FP8", "activation_scheme": "dynamic"}},
    ),
    Case("quant-agrees", None, LLAMA, {"quantization": "fp8"}, config=FP8),
    Case("quant-from-checkpoint", None, LLAMA, {}, config=FP8),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message


def test_every_rule_has_a_triggering_and_an_accepted_case() -> None:
    from profilekit.rules import RULES

    ours = {r.id for r in RULES.values() if r.check.__module__.endswith(".checkpoint")}
    triggered = {c.expected(v) for c in CASES for v in ("0.27.0", "0.33.0")}
    assert triggered == {*ours, None}
