"""profilekit's weight count (src/profilekit/capacity/weights.py) against the parameters vLLM itself allocates.

For every real config.json profilekit counts (tests/data/capacity/kv-configs.json and the 25 checkpoints of
tests/data/capacity/checkpoints.toml: dense GQA, MHA, MQA, mixtures of experts, Gemma-2/3, Nemotron-H's Mamba-2
hybrid), tools/oracle/weights_probe.py builds the release's own model class on the meta device, as a worker of
tensor_parallel_size 1 builds it, and sums its parameters: profilekit's count must be that number exactly. (The
checkpoints' `metadata.total_size` is held within 2 % by tests/test_capacity_weights.py; vLLM's allocation is
what "Model loading took" reports, and what the capacity estimate subtracts.)

`PROFILEKIT_WEIGHTS_RESULTS=write` rewrites tests/oracle/results/weights-<release>.json.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from profilekit.capacity.weights import Weights, counted
from profilekit.vllm.modelshape import DTYPE_BYTES, ModelShape
from tests.oracle.conftest import oracle_disabled
from tests.oracle.probes import run_probe

pytestmark = pytest.mark.oracle

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = ROOT / "tests" / "data" / "capacity"
RESULTS = HERE / "results"
# checkpoints.toml's keys that describe the record, not the model
_META = {"model", "repo_holding_files", "relation", "index_source", "config_source", "total_size", "source_note"}


def _configs() -> dict[str, tuple[dict[str, Any], str]]:
    """Each config.json profilekit counts, by name, with its source."""
    found: dict[str, tuple[dict[str, Any], str]] = {}
    for name, entry in json.loads((DATA / "kv-configs.json").read_text())["models"].items():
        if entry.get("oracle") is not False:
            found[name] = (entry["config"], entry["source"])
    for record in tomllib.loads((DATA / "checkpoints.toml").read_text())["checkpoint"]:
        config = {k: v for k, v in record.items() if k not in _META}
        found.setdefault(record["model"], (config, record["config_source"]))
    return {name: (c, s) for name, (c, s) in found.items() if isinstance(counted(c, tp=1, pp=1), Weights)}


CONFIGS = _configs()


def _params(weights: Weights, config: dict[str, Any]) -> int:
    dtype = ModelShape.of(dict(config)).dtype or "bfloat16"
    return weights.total // DTYPE_BYTES[dtype]


def test_counted_weights_are_the_parameters_vllm_allocates(oracle_version: str) -> None:
    if oracle_disabled():
        pytest.skip("PROFILEKIT_ORACLE=off")
    assert len(CONFIGS) >= 20
    requests = [
        {"config": {k: v for k, v in c.items() if k != "auto_map"}, "serve": {"max_model_len": 2048}}
        for c, _ in CONFIGS.values()
    ]
    answers = run_probe(oracle_version, "weights_probe.py", requests, timeout=1800)
    rows: list[dict[str, Any]] = []
    wrong: list[str] = []
    for (name, (config, source)), answer in zip(CONFIGS.items(), answers, strict=True):
        assert answer["ok"], f"{name}: vLLM did not build the model: {answer['error'][-1500:]}"
        ours = counted(config, tp=1, pp=1)
        assert isinstance(ours, Weights)
        params = _params(ours, config)
        rows.append({"model": name, "source": source, "profilekit": params, "vllm": answer["params"]})
        if params != answer["params"]:
            wrong.append(f"{name}: profilekit {params} parameters, vLLM {answer['params']}")
    if os.environ.get("PROFILEKIT_WEIGHTS_RESULTS") == "write":
        document = {
            "release": oracle_version,
            "about": "parameters profilekit counts from config.json against those vLLM allocates building the model "
            "(tests/oracle/test_weights_vllm.py)",
            "compared": len(rows),
            "equal": len(rows) - len(wrong),
            "models": rows,
        }
        (RESULTS / f"weights-{oracle_version}.json").write_text(json.dumps(document, indent=1) + "\n")
    assert not wrong, "\n".join(wrong)
