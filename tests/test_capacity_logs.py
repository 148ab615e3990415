"""profilekit's KV cache against published vLLM start-up logs (issue 32, item 4; tools/capacity_logs.py).

Given the KV cache memory a published log shows, profilekit's token count and concurrency must land within 10 %
of the log's, every logged refusal must be refused, and docs/CAPACITY-LOGS.md must be what the tool writes now.
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
    rows = capacity_logs.run()
    total = len(tomllib.loads((capacity_logs.DATA / "logs.toml").read_text(encoding="utf-8"))["log"])
    assert capacity_logs.DOC.read_text(encoding="utf-8") == capacity_logs.document(rows, total)
    assert json.loads(capacity_logs.RESULTS.read_text(encoding="utf-8")) == rows


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
