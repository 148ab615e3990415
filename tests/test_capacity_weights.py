"""Weights counted from config.json against real checkpoints' `metadata.total_size` (issue 32, item 4).

tests/data/capacity/checkpoints.toml holds 25 real checkpoints: the `total_size` of each one's
model.safetensors.index.json and its config.json fields, each with the URL of both files at a commit (collected
from public copies of the checkpoints; see the file's header). Every checkpoint of a family profilekit counts must
land within 2 % of its index; every other one must say why it is not counted, never guess.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from profilekit.capacity.weights import FAMILIES, GIB, counted, index_total, stage_sizes, weights

DATA = Path(__file__).resolve().parent / "data" / "capacity" / "checkpoints.toml"
CHECKPOINTS: list[dict[str, Any]] = tomllib.loads(DATA.read_text(encoding="utf-8"))["checkpoint"]
META = {"model", "repo_holding_files", "relation", "index_source", "config_source", "total_size", "source_note"}


def _config(record: dict[str, Any]) -> dict[str, Any]:
    """The config.json fields of a record (its flattened `quant_method` back under quantization_config)."""
    config = {key: value for key, value in record.items() if key not in META}
    if "quant_method" in config:
        config["quantization_config"] = {"quant_method": config.pop("quant_method")}
    return config


def test_the_data_is_sourced() -> None:
    assert len(CHECKPOINTS) >= 20
    for record in CHECKPOINTS:
        assert record["index_source"].startswith("https://"), record["model"]
        assert record["total_size"] > 0


@pytest.mark.parametrize("record", CHECKPOINTS, ids=[r["model"] for r in CHECKPOINTS])
def test_counted_weights_land_within_2_percent_of_the_checkpoint(record: dict[str, Any]) -> None:
    result = counted(_config(record), tp=1, pp=1)
    if record.get("model_type") in FAMILIES and "quant_method" not in record and "text_config" not in record:
        assert not isinstance(result, str), result
        assert abs(result.total - record["total_size"]) <= 0.02 * record["total_size"], (
            result.total,
            record["total_size"],
        )
    else:
        assert isinstance(result, str)
        assert result.startswith("not counted from config.json: ")


def test_most_of_the_checkpoints_are_counted_and_exactly() -> None:
    exact = 0
    for record in CHECKPOINTS:
        result = counted(_config(record), tp=1, pp=1)
        exact += not isinstance(result, str) and abs(result.total - record["total_size"]) < 0.001 * record["total_size"]
    assert exact >= 14


def test_per_gpu_follows_vllms_sharding() -> None:
    mixtral = _config(next(r for r in CHECKPOINTS if r["model"] == "mistralai/Mixtral-8x7B-v0.1"))
    whole = counted(mixtral, tp=1, pp=1)
    by_two = counted(mixtral, tp=2, pp=1)
    assert not isinstance(whole, str) and not isinstance(by_two, str)
    norms = (2 * 4096 * 32 + 4096) * 2  # bf16 norms stay whole on every rank
    assert by_two.per_gpu == (whole.total - norms) // 2 + norms
    # vLLM's get_pp_indices: the remainder goes to the stages before the last, from the second-to-last back
    assert stage_sizes(32, 3) == [11, 11, 10]
    assert stage_sizes(4, 3) == [1, 2, 1]
    staged = counted(mixtral, tp=1, pp=3)
    assert not isinstance(staged, str)
    assert whole.total / 3 < staged.per_gpu < whole.total / 2


def test_a_declared_size_or_index_wins_and_is_split_evenly() -> None:
    given = weights(None, declared_gib=140.0, index=None, index_source="", tp=4, pp=2)
    assert not isinstance(given, str)
    assert (given.total, given.per_gpu, given.source) == (140 * GIB, 140 * GIB // 8, "[model] weights_gib")
    index = index_total({"metadata": {"total_size": 16060522496}, "weight_map": {}})
    assert index == 16060522496
    from_index = weights({}, declared_gib=None, index=index, index_source="models/x/index.json", tp=2, pp=1)
    assert not isinstance(from_index, str)
    assert from_index.per_gpu == 8030261248
    assert "split evenly" in from_index.inputs[1]
    assert index_total({"metadata": {}}) is None
    assert index_total([]) is None
    assert weights(None, declared_gib=None, index=None, index_source="", tp=1, pp=1) == (
        "no config.json, [model] weights_gib or [model] weights_index for the model"
    )


KV_CONFIGS = Path(__file__).resolve().parent / "data" / "capacity" / "kv-configs.json"


def _kv_config(name: str) -> dict[str, Any]:
    import json

    config: dict[str, Any] = json.loads(KV_CONFIGS.read_text(encoding="utf-8"))["models"][name]["config"]
    return config


def test_nemotron_h_is_counted_as_vllm_builds_it() -> None:
    # Nemotron-H 8B: 24 Mamba-2, 4 attention and 24 MLP layers; vLLM 0.27.0-0.33.0 allocates 8,100,852,736
    # parameters for it (tests/oracle/test_weights_vllm.py builds the model on the meta device and counts them)
    config = _kv_config("nemotron-h-8b-base-8k (hybrid Mamba-2)")
    found = counted(config, tp=1, pp=1)
    assert not isinstance(found, str), found
    assert found.total == 8_100_852_736 * 2
    assert found.inputs[-1] == "Nemotron-H: 24 Mamba-2, 4 attention, 24 MLP layers"
    # TP 16 over 8 groups: vLLM extends the groups to 16 (each rank holds one), so a rank holds more than 1/16
    wide = counted(config, tp=16, pp=1)
    assert not isinstance(wide, str)
    assert wide.per_gpu > found.total // 16
    assert "8 groups extended to 16 for tensor_parallel_size 16" in wide.inputs[-1]


def test_nemotron_h_parts_not_counted_are_said() -> None:
    nano = _kv_config("nemotron-3-nano-30b-a3b (hybrid Mamba-2, MoE)")
    assert counted(nano, tp=1, pp=1) == (
        "not counted from config.json: Nemotron-H layers 'E' (mixture of experts) are not counted yet"
    )
    config = {**_kv_config("nemotron-h-8b-base-8k (hybrid Mamba-2)"), "intermediate_size": 0}
    assert counted(config, tp=1, pp=1) == (
        "not counted from config.json: Nemotron-H needs intermediate_size (a size, or one per MLP layer)"
    )
