"""profilekit's KV cache against published vLLM start-up logs (issue 32, item 4; tools/capacity_logs.py).

Given the KV cache memory a published log shows, profilekit's token count and concurrency must land within 10 %
of the log's, every logged refusal must be refused, and docs/CAPACITY-LOGS.md must be what the tool writes now.
profilekit's own estimate of that memory (profilekit.capacity.memory) is compared too: the committed errors are
what the tool computes now, a logged refusal it can judge is refused or warned about, a logged start is never
refused, and where profilekit has the model's config.json the logged memory lies within the estimate's stated
give-or-take.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import capacity_logs  # noqa: E402


def test_the_committed_table_is_current() -> None:
    rows, estimates = capacity_logs.run(), capacity_logs.run_estimates()
    total = len(tomllib.loads((capacity_logs.DATA / "logs.toml").read_text(encoding="utf-8"))["log"])
    assert capacity_logs.DOC.read_text(encoding="utf-8") == capacity_logs.document(rows, total, estimates)
    assert json.loads(capacity_logs.RESULTS.read_text(encoding="utf-8")) == rows
    committed = json.loads(capacity_logs.ESTIMATES.read_text(encoding="utf-8"))
    assert committed == {"summary": capacity_logs.summary(estimates), "logs": estimates}


def test_every_log_that_can_be_computed_lands_within_10_percent_and_refusals_are_refused() -> None:
    rows = capacity_logs.run()
    assert len(rows) >= 6
    for row in rows:
        assert "skipped" not in row, row
        for key in ("tokens", "concurrency"):
            if key in row:
                assert abs(row[key]["error"]) <= 0.10, row
        if "refused" in row:
            assert row["refused"]["profilekit"] == row["refused"]["logged"], row


def test_every_log_is_sourced_and_shows_a_figure() -> None:
    logs = tomllib.loads((capacity_logs.DATA / "logs.toml").read_text(encoding="utf-8"))["log"]
    assert len(logs) >= 20
    figures = ("available_kv_cache_gib", "kv_cache_tokens", "max_concurrency", "refusal", "model_loading_gib")
    for log in logs:
        assert log["source"].startswith("https://"), log["id"]
        assert any(
            key in log for key in (*figures, "refusal_note", "model_loading_gb_v0", "gpu_blocks", "max_concurrency_tp8")
        ), log["id"]


def test_the_estimate_is_compared_with_every_log_that_shows_gpu_weights_and_kv_memory() -> None:
    estimates = capacity_logs.run_estimates()
    assert len(estimates) == len(tomllib.loads((capacity_logs.DATA / "logs.toml").read_text(encoding="utf-8"))["log"])
    done = [r for r in estimates if "skipped" not in r]
    assert len(done) >= 5
    assert sum(r["at_least_40_gib"] for r in done) >= 2
    for row in estimates:
        if "skipped" in row:
            assert row["skipped"], row["id"]
            continue
        assert {i["input"] for i in row["inputs"]} >= {"gpu total GiB", "weights per GPU GiB", "max_num_seqs"}
        assert all(i["from"] for i in row["inputs"]), row["id"]
        logged = row["logged_gib"]
        assert abs(row["error"] * abs(logged) - row["error_gib"]) <= 0.01, row["id"]
        guessed = next(i for i in row["inputs"] if i["input"] == "activations GiB")["from"].startswith(
            "profilekit guess"
        )
        assert guessed == any("1 GiB guess" in note for note in row["notes"]), row["id"]


def test_a_logged_refusal_profilekit_can_judge_is_refused_or_warned_and_a_logged_start_is_not_refused() -> None:
    verdicts = [r for r in capacity_logs.run_estimates() if "refused" in r]
    judged = [r for r in verdicts if r["refused"]["profilekit"] != "unknown"]
    assert any(r["refused"]["logged"] for r in judged)
    for row in judged:
        if row["refused"]["logged"]:
            assert row["refused"]["profilekit"] in ("refused", "weights", "tight"), row
        else:
            assert row["refused"]["profilekit"] not in ("refused", "weights"), row


def test_with_the_models_config_the_logged_memory_lies_within_the_estimates_give_or_take() -> None:
    with_config = [
        r
        for r in capacity_logs.run_estimates()
        if "skipped" not in r
        and not next(i for i in r["inputs"] if i["input"] == "activations GiB")["from"].startswith("profilekit guess")
    ]
    assert len(with_config) >= 3
    for row in with_config:
        assert row["within_uncertainty"], row
