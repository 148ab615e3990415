#!/usr/bin/env python3
"""Compare profilekit's capacity figures with published vLLM start-up logs (issue 32, item 4; docs/CAPACITY.md).

tests/data/capacity/logs.toml holds 37 published logs, each with its source and only what the log shows. For every
log whose model's config.json profilekit has (`MODELS` below: the shipped configs, tests/data/capacity's sourced
ones) and that shows the KV cache memory vLLM had, profilekit's KV cache is computed for the log's options and
given that same memory: its "GPU KV cache size" tokens, its "Maximum concurrency" and, for a logged refusal, its
verdict, are set beside what the log says. The logs come from releases before those profilekit targets, so the
figures are computed with 0.33.0's layout; the table says how far each lands. Writes docs/CAPACITY-LOGS.md and
tests/data/capacity/log-results.json (tests/test_capacity_logs.py keeps both current).

python3 tools/capacity_logs.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from profilekit.capacity.kv import kv_layout  # noqa: E402

DATA = REPO / "tests" / "data" / "capacity"
DOC = REPO / "docs" / "CAPACITY-LOGS.md"
RESULTS = DATA / "log-results.json"
VERSION = "0.33.0"
GIB = 1 << 30


def _kv_configs() -> dict[str, dict[str, Any]]:
    data = json.loads((DATA / "kv-configs.json").read_text(encoding="utf-8"))["models"]
    return {name: entry["config"] for name, entry in data.items()}


def _checkpoint(model: str) -> dict[str, Any]:
    records = tomllib.loads((DATA / "checkpoints.toml").read_text(encoding="utf-8"))["checkpoint"]
    meta = {"model", "repo_holding_files", "relation", "index_source", "config_source", "total_size", "source_note"}
    return {k: v for k, v in next(r for r in records if r["model"] == model).items() if k not in meta}


def models() -> dict[str, tuple[dict[str, Any], str]]:
    """Each logged model id profilekit has a config.json for, with the config and what it is."""
    kv = _kv_configs()
    extra = json.loads((DATA / "log-configs.json").read_text(encoding="utf-8"))["models"]
    return {
        **{model: (entry["config"], f"its config.json ({entry['source']})") for model, entry in extra.items()},
        "meta-llama/Llama-3.1-8B-Instruct": (kv["llama-3.1-8b"], "its config.json (kv-configs.json)"),
        # the GPTQ checkpoint of Mistral-7B-Instruct-v0.2: v0.3's attention shape (32 layers, 8 KV heads of 128)
        "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ": (kv["mistral-7b-v0.3"], "Mistral-7B-v0.3's attention shape"),
        # the FP8 checkpoint of Qwen3-30B-A3B: its weights are quantized, its attention shape is the model's
        "Qwen/Qwen3-30B-A3B-FP8": (kv["qwen3-30b-a3b (MoE)"], "Qwen3-30B-A3B's config.json (kv-configs.json)"),
        # DeepSeek-R1-Distill-Qwen-14B is Qwen2.5-14B's shape: a fine-tune of it with the same shapes
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B": (
            _checkpoint("deepcogito/cogito-v1-preview-qwen-14B"),
            "Qwen2.5-14B's shape (cogito-v1-preview-qwen-14B's config.json)",
        ),
    }


def _options(log: dict[str, Any]) -> dict[str, Any]:
    keys = ("tensor_parallel_size", "pipeline_parallel_size", "kv_cache_dtype", "block_size", "max_model_len")
    return {key: log[key] for key in keys if key in log}


def compare(log: dict[str, Any], known: dict[str, tuple[dict[str, Any], str]]) -> dict[str, Any] | None:
    """profilekit's figures for one log, beside the log's; None when the log cannot be computed."""
    if log.get("model") not in known or log.get("available_kv_cache_gib") is None:
        return None
    config, what = known[log["model"]]
    serve = _options(log)
    layout = kv_layout(config, version=VERSION, serve=serve, gpu=None)
    if isinstance(layout, str):
        return {"id": log["id"], "skipped": layout}
    available = int(log["available_kv_cache_gib"] * GIB)
    url = log["source"].split()[0]
    row: dict[str, Any] = {"id": log["id"], "source": url, "model": log["model"], "config": what}
    row["available_kv_cache_gib"] = log["available_kv_cache_gib"]
    if "kv_cache_tokens" in log:
        tokens = layout.tokens(available, serve.get("max_model_len"))
        row["tokens"] = {"logged": log["kv_cache_tokens"], "profilekit": tokens}
        row["tokens"]["error"] = round((tokens - log["kv_cache_tokens"]) / log["kv_cache_tokens"], 4)
    if "max_concurrency" in log and "concurrency_tokens" in log:
        concurrency = layout.max_concurrency(available, int(log["concurrency_tokens"]))
        row["concurrency"] = {"logged": log["max_concurrency"], "profilekit": round(concurrency, 2)}
        row["concurrency"]["error"] = round((concurrency - log["max_concurrency"]) / log["max_concurrency"], 4)
    mml = serve.get("max_model_len")
    if mml is not None:
        row["refused"] = {"logged": "refusal" in log, "profilekit": not layout.fits(available, int(mml))}
    return row


def run() -> list[dict[str, Any]]:
    logs = tomllib.loads((DATA / "logs.toml").read_text(encoding="utf-8"))["log"]
    known = models()
    return [row for log in logs if (row := compare(log, known)) is not None]


def _pct(value: float) -> str:
    return f"{value * 100:+.1f} %"


def document(rows: list[dict[str, Any]], total: int) -> str:
    errors = [abs(r[k]["error"]) for r in rows for k in ("tokens", "concurrency") if k in r]
    lines = [
        "# Capacity against published vLLM logs",
        "",
        "Generated by `python3 tools/capacity_logs.py` from tests/data/capacity/logs.toml; do not edit.",
        "",
        f"{total} published start-up logs are recorded with their sources (tests/data/capacity/logs.toml). A log is",
        "computed here when profilekit has its model's config.json and the log shows the KV cache memory vLLM had:",
        "profilekit's KV cache (profilekit.capacity.kv, 0.33.0's layout) is given that memory, and its token count,",
        "concurrency and fit verdict are set beside the log's. The other logs lack the model's shape (hybrid,",
        "MLA-with-indexer and newer models profilekit does not model yet), the memory, or both.",
        "",
        "| log | model | KV memory (GiB) | tokens: logged | profilekit | error | concurrency: logged | profilekit "
        "| error | refused: logged | profilekit |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['id']} | skipped: {r['skipped']} | | | | | | | | | |")
            continue
        t, c, v = r.get("tokens"), r.get("concurrency"), r.get("refused")
        cells = [
            f"[{r['id']}]({r['source']})",
            f"{r['model']} ({r['config']})",
            f"{r['available_kv_cache_gib']}",
            f"{t['logged']:,}" if t else "",
            f"{t['profilekit']:,}" if t else "",
            _pct(t["error"]) if t else "",
            f"{c['logged']}" if c else "",
            f"{c['profilekit']}" if c else "",
            _pct(c["error"]) if c else "",
            ("yes" if v["logged"] else "no") if v else "",
            ("yes" if v["profilekit"] else "no") if v else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if errors:
        lines += [
            "",
            f"Figures compared: {len(errors)}; absolute error median {statistics.median(errors) * 100:.1f} %, "
            f"worst {max(errors) * 100:.1f} %. Every logged refusal computed here is refused by profilekit too: "
            f"{all(r['refused']['profilekit'] for r in rows if r.get('refused', {}).get('logged'))}.",
        ]
    return "\n".join(lines) + "\n"


def main() -> int:
    rows = run()
    total = len(tomllib.loads((DATA / "logs.toml").read_text(encoding="utf-8"))["log"])
    RESULTS.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    DOC.write_text(document(rows, total), encoding="utf-8")
    print(f"wrote {DOC.relative_to(REPO)} and {RESULTS.relative_to(REPO)} ({len(rows)} logs computed of {total})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
