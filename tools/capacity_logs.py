#!/usr/bin/env python3
"""Compare profilekit's capacity figures with published vLLM start-up logs (issue 32, item 4; docs/CAPACITY.md).

tests/data/capacity/logs.toml holds 37 published logs, each with its source and only what the log shows. For every
log whose model's config.json profilekit has (`MODELS` below: the shipped configs, tests/data/capacity's sourced
ones) and that shows the KV cache memory vLLM had, profilekit's KV cache is computed for the log's options and
given that same memory: its "GPU KV cache size" tokens, its "Maximum concurrency" and, for a logged refusal, its
verdict, are set beside what the log says. The logs come from releases before those profilekit targets, so the
figures are computed with 0.33.0's layout; the table says how far each lands.

A second comparison tests the ESTIMATE of the memory vLLM leaves for the KV cache (profilekit.capacity.memory): for
every log that shows the GPU (its total memory known from profilekit's catalogue or printed by the log), the weights
on one GPU and the KV cache memory vLLM had, `memory(...)` is run with the log's options and vLLM's defaults for the
rest, and its figure is set beside the logged one; for a logged refusal, profilekit's estimate-based verdict too.

Writes docs/CAPACITY-LOGS.md, tests/data/capacity/log-results.json and tests/data/capacity/log-estimates.json
(tests/test_capacity_logs.py keeps all three current).

python3 tools/capacity_logs.py
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from profilekit.capacity.kv import KvLayout, kv_layout  # noqa: E402
from profilekit.capacity.memory import DEFAULT_UTILIZATION, Memory, activations, memory  # noqa: E402
from profilekit.capacity.plan import Plan  # noqa: E402
from profilekit.capacity.weights import Weights  # noqa: E402
from profilekit.hardware import CATALOGUE, Gpu, batch_defaults  # noqa: E402
from profilekit.rules.facts import prefix_caching_and_mamba_mode  # noqa: E402
from profilekit.rules.models import ModelFacts  # noqa: E402
from profilekit.vllm.versions import at_least  # noqa: E402

DATA = REPO / "tests" / "data" / "capacity"
DOC = REPO / "docs" / "CAPACITY-LOGS.md"
RESULTS = DATA / "log-results.json"
ESTIMATES = DATA / "log-estimates.json"
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
        # the AWQ checkpoint of Kimi-Linear-48B-A3B-Instruct: its weights are quantized, its layers are the model's
        "cyankiwi/Kimi-Linear-48B-A3B-Instruct-AWQ-4bit": (
            kv["kimi-linear-48b-a3b (hybrid KDA, MLA, MoE)"],
            "Kimi-Linear-48B-A3B's config.json (kv-configs.json)",
        ),
        # DeepSeek-R1-Distill-Qwen-14B is Qwen2.5-14B's shape: a fine-tune of it with the same shapes
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B": (
            _checkpoint("deepcogito/cogito-v1-preview-qwen-14B"),
            "Qwen2.5-14B's shape (cogito-v1-preview-qwen-14B's config.json)",
        ),
    }


def _mamba_mode(config: dict[str, Any], log: dict[str, Any]) -> str | None:
    """A hybrid model's Mamba cache mode in 0.33.0, as profilekit's role facts give it (prefix caching as logged,
    else the model's default)."""
    architecture = (config.get("architectures") or [None])[0]
    if architecture is None:
        return None
    serve = {"enable_prefix_caching": log["enable_prefix_caching"]} if "enable_prefix_caching" in log else {}
    facts = ModelFacts(model=None, architecture=architecture, source="config.json")
    return prefix_caching_and_mamba_mode(VERSION, facts, serve)[2]


def _layout(config: dict[str, Any], log: dict[str, Any]) -> KvLayout | str:
    """profilekit's KV cache (0.33.0's layout) for the log's options, a hybrid model in its Mamba cache mode."""
    serve = _options(log)
    return kv_layout(
        config,
        version=VERSION,
        serve=serve,
        gpu=None,
        mamba_mode=_mamba_mode(config, log),
        max_model_len=serve.get("max_model_len"),
    )


def _options(log: dict[str, Any]) -> dict[str, Any]:
    keys = ("tensor_parallel_size", "pipeline_parallel_size", "kv_cache_dtype", "block_size", "max_model_len")
    return {key: log[key] for key in keys if key in log}


def compare(log: dict[str, Any], known: dict[str, tuple[dict[str, Any], str]]) -> dict[str, Any] | None:
    """profilekit's figures for one log, beside the log's; None when the log cannot be computed."""
    if log.get("model") not in known or log.get("available_kv_cache_gib") is None:
        return None
    config, what = known[log["model"]]
    serve = _options(log)
    layout = _layout(config, log)
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


# ---- the estimate of the KV cache memory (profilekit.capacity.memory) against the logs ----------------------------

EARLIEST = "0.27.0"  # the first release profilekit targets: its batch defaults stand for a V1 log of no stated release
CUDA_GRAPHS_SUBTRACTED = "0.21.0"  # gpu_worker.py: "CUDA graph memory profiling is enabled (default since v0.21.0)"
# V0 (the 2024 - early 2025 engine, "Loading model weights took X GB"): EngineArgs turns chunked prefill on by itself
# above 32768 tokens (`use_long_context = max_model_len > 32768`), and SchedulerConfig then batches 2048 tokens (512
# before 0.6.6); without chunked prefill it batches max(max_model_len, 2048); max_num_seqs is 256.
V0_LONG_CONTEXT = 32768
V0_CHUNK = 2048
V0_SEQS = 256
LARGE_GPU = 40 * GIB


def _fold(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def catalogue_gpu(shown: str) -> tuple[Gpu | None, str]:
    """The catalogue GPU a log's `gpu` string names, and how; None unless its total memory is unambiguous: the name
    (parenthesised remarks and a leading "NVIDIA" dropped) is a catalogue name or device name, or starts catalogue
    names that all report one total."""
    name = re.sub(r"^NVIDIA\s+", "", re.sub(r"\([^)]*\)", "", shown).strip())
    folded = _fold(name)
    if not folded:
        return None, f"the GPU {shown!r} is not one the catalogue names"

    def device(gpu: Gpu) -> str:
        return _fold(gpu.device_name.removeprefix("NVIDIA ").removeprefix("GeForce "))

    exact = [g for g in CATALOGUE.values() if folded in (_fold(g.name), device(g))]
    if len(exact) == 1:
        return exact[0], f"catalogue {exact[0].name} ({exact[0].memory_mib} MiB)"
    starts = [g for g in CATALOGUE.values() if _fold(g.name).startswith(folded)]
    if starts and len({g.memory_mib for g in starts}) == 1:
        names = " and ".join(g.name for g in starts)
        return starts[
            0
        ], f"catalogue {names}: {name!r} names {'both' if len(starts) == 2 else 'all'}, each {starts[0].memory_mib} MiB"
    if starts:
        return None, f"{shown!r} may be any of {', '.join(g.name for g in starts)}, of different memory"
    return None, f"the GPU {shown!r} is not in profilekit's catalogue"


def _total(log: dict[str, Any]) -> tuple[int | None, Gpu | None, str]:
    """The GPU's total memory in bytes, the catalogue GPU if any, and where the total comes from (or why none)."""
    if "gpu" not in log or log["gpu"].startswith("not stated"):
        return None, None, "the log does not name the GPU"
    gpu, how = catalogue_gpu(log["gpu"])
    if gpu is not None:
        return gpu.memory_bytes, gpu, how
    printed = re.search(r"total_gpu_memory=([0-9.]+)GiB", log.get("quote", ""))
    if printed:
        return int(float(printed.group(1)) * GIB), None, f"logged: total_gpu_memory={printed.group(1)}GiB"
    return None, None, f"{how}, and the log prints no total"


def _release(log: dict[str, Any]) -> str | None:
    found = re.match(r"v?(\d+\.\d+\.\d+)", str(log.get("vllm_version", "")))
    return found.group(1) if found else None


def _batch(log: dict[str, Any], gpu: Gpu | None) -> tuple[int, str, int, str]:
    """max_num_batched_tokens and max_num_seqs for the profile pass, each with where it comes from."""
    tokens, seqs = log.get("max_num_batched_tokens"), log.get("max_num_seqs")
    tokens_from, seqs_from = "logged", "logged"
    if "model_loading_gb_v0" in log:
        mml = log.get("max_model_len")
        if tokens is None and mml is not None:
            chunked = mml > V0_LONG_CONTEXT
            tokens = V0_CHUNK if chunked else max(mml, 2048)
            tokens_from = (
                f"vLLM V0 default: chunked prefill on above {V0_LONG_CONTEXT} tokens, {V0_CHUNK} batched (512 before "
                "0.6.6)"
                if chunked
                else "vLLM V0 default: no chunked prefill up to 32768 tokens, max(max_model_len, 2048) batched"
            )
        if seqs is None:
            seqs, seqs_from = V0_SEQS, "vLLM V0 default"
    else:
        release = _release(log) or EARLIEST
        defaults = batch_defaults(release if at_least(release, EARLIEST) else EARLIEST, gpu)
        which = f"vLLM default on this GPU (get_batch_defaults{'' if _release(log) else ', as ' + EARLIEST})"
        if tokens is None:
            tokens, tokens_from = defaults.tokens, which
        if seqs is None:
            seqs, seqs_from = defaults.seqs, which
    if tokens is None:
        tokens, tokens_from = V0_CHUNK, "unknown (V0 without max_model_len): 2048, a guess"
    return int(tokens), tokens_from, int(seqs), seqs_from


def _gib(value: int) -> float:
    return round(value / GIB, 2)


def estimate(log: dict[str, Any], known: dict[str, tuple[dict[str, Any], str]]) -> dict[str, Any]:
    """profilekit's estimate of the KV cache memory for one log, beside the log's; `skipped` says why not."""
    row: dict[str, Any] = {"id": log["id"]}
    total, gpu, gpu_from = _total(log)
    weights_gib = log.get("model_loading_gib", log.get("model_loading_gb_v0"))
    missing = [
        *(["the log shows no KV cache memory"] if log.get("available_kv_cache_gib") is None else []),
        *([gpu_from] if total is None else []),
        *(["the log shows no weights per GPU (Model loading)"] if weights_gib is None else []),
    ]
    if missing or total is None or weights_gib is None:
        return {**row, "skipped": "; ".join(missing)}
    logged = float(log["available_kv_cache_gib"])
    config, what = known.get(log.get("model", ""), (None, ""))
    tp = int(log.get("tensor_parallel_size", 1))
    gpus = tp * int(log.get("pipeline_parallel_size", 1))
    tokens, tokens_from, seqs, seqs_from = _batch(log, gpu)
    utilization = log.get("gpu_memory_utilization", DEFAULT_UTILIZATION)
    eager = log.get("enforce_eager", False)
    serve = {**_options(log), "gpu_memory_utilization": utilization, "enforce_eager": eager}
    weights = int(weights_gib * GIB)
    mem = memory(total=total, serve=serve, weights=weights, config=config, tokens=tokens, seqs=seqs, gpus=gpus)
    active = activations(config, tokens=tokens, seqs=seqs, tp=tp) if config is not None else None

    def given(key: str, value: Any, default: str) -> dict[str, Any]:
        return {"input": key, "value": value, "from": "logged" if key in log else default}

    v0 = "model_loading_gb_v0" in log
    inputs = [
        {"input": "gpu total GiB", "value": _gib(total), "from": gpu_from},
        {
            "input": "weights per GPU GiB",
            "value": weights_gib,
            "from": "logged (V0 'Loading model weights took X GB', GiB-based)" if v0 else "logged (Model loading)",
        },
        given("gpu_memory_utilization", utilization, "vLLM default"),
        given("tensor_parallel_size", tp, "vLLM default"),
        {"input": "max_num_batched_tokens", "value": tokens, "from": tokens_from},
        {"input": "max_num_seqs", "value": seqs, "from": seqs_from},
        given("enforce_eager", eager, "vLLM default"),
        {
            "input": "activations GiB",
            "value": _gib(active if active is not None else GIB),
            "from": f"profilekit estimate from {what}" if active is not None else "profilekit guess: no config.json",
        },
    ]
    error = (mem.available - logged * GIB) / abs(logged * GIB)
    release = _release(log)
    notes = []
    if active is None:
        notes.append("activations are the 1 GiB guess (profilekit has no config.json for this model)")
    if v0 or (release is not None and not at_least(release, CUDA_GRAPHS_SUBTRACTED)):
        notes.append(
            f"{'V0' if v0 else release} did not take CUDA graphs from the KV cache (captured after it); "
            "0.33.0 does, and so does the estimate"
            if not eager
            else ""
        )
    elif release is None and not eager:
        notes.append(
            f"release not stated: before {CUDA_GRAPHS_SUBTRACTED} vLLM did not take CUDA graphs from the KV cache"
        )
    if "cuda_graph_gib" in log:
        notes.append(f"the log's CUDA graphs took {log['cuda_graph_gib']} GiB")
    row.update(
        {
            "source": log["source"].split()[0],
            "model": log.get("model", log.get("model_as_shown", "")),
            "vllm_version": log.get("vllm_version", "unknown"),
            "engine": "V0" if v0 else "V1",
            "gpu": log["gpu"],
            "at_least_40_gib": total >= LARGE_GPU,
            "inputs": inputs,
            "estimate": {
                "requested_gib": _gib(mem.requested),
                "reserve_gib": _gib(mem.reserve),
                "uncertainty_gib": _gib(mem.uncertainty),
                "available_gib": _gib(mem.available),
            },
            "logged_gib": logged,
            "error_gib": round(mem.available / GIB - logged, 2),
            "error": round(error, 4),
            # what `capacity` prints as "give or take": does the logged figure lie within it?
            "within_uncertainty": abs(mem.available - logged * GIB) <= mem.uncertainty,
            "notes": [note for note in notes if note],
        }
    )
    verdict = _verdict(log, config=config, gpu=gpu, gpus=gpus, weights=weights, mem=mem)
    if verdict is not None:
        row["refused"] = verdict
    return row


def _verdict(
    log: dict[str, Any], *, config: dict[str, Any] | None, gpu: Gpu | None, gpus: int, weights: int, mem: Memory
) -> dict[str, Any] | None:
    """profilekit's estimate-based verdict (Plan.verdict) beside the log's outcome, where the log shows one."""
    refused = "refusal" in log or "refusal_note" in log
    mml = log.get("max_model_len")
    if not refused and mml is None:
        return None
    layout: KvLayout | str = "no config.json for the model: the KV cache's layout is unknown"
    if config is not None:
        layout = _layout(config, log)
    plan = Plan(log["id"], gpu, gpus, mml, Weights(weights * gpus, weights, "the log"), layout, mem)
    verdict = plan.verdict()
    return {"logged": refused, "profilekit": verdict.state, "why": verdict.why}


def run_estimates() -> list[dict[str, Any]]:
    logs = tomllib.loads((DATA / "logs.toml").read_text(encoding="utf-8"))["log"]
    known = models()
    return [estimate(log, known) for log in logs]


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Count, median and worst absolute error of the estimated rows, all and on GPUs of 40 GiB or more."""

    def stats(chosen: list[dict[str, Any]]) -> dict[str, Any]:
        errors = [abs(r["error"]) for r in chosen]
        return {
            "count": len(errors),
            "within_10_percent": sum(e <= 0.10 for e in errors),
            "median": round(statistics.median(errors), 4) if errors else None,
            "worst": round(max(errors), 4) if errors else None,
        }

    done = [r for r in rows if "skipped" not in r]
    return {"all": stats(done), "at_least_40_gib": stats([r for r in done if r["at_least_40_gib"]])}


def _bare(shown: str) -> str:
    """A logged GPU string without its parenthesised remarks."""
    return re.sub(r"\s*\([^)]*\)", "", shown)


def _value(row: dict[str, Any], key: str) -> str:
    item = next(i for i in row["inputs"] if i["input"] == key)
    mark = "" if item["from"].startswith("logged") else "*"
    return f"{item['value']}{mark}"


def estimate_document(rows: list[dict[str, Any]]) -> list[str]:
    done = [r for r in rows if "skipped" not in r]
    lines = [
        "",
        "## The estimate of the KV cache memory",
        "",
        "For every log that shows the GPU (its total from profilekit's catalogue when the name is unambiguous, else",
        "the total the log prints), the weights on one GPU and the KV cache memory vLLM had, profilekit's estimate",
        "(profilekit.capacity.memory: `total x gpu_memory_utilization - weights - reserve`, 0.33.0's formula) with the",
        "log's options, and vLLM's defaults of the log's engine for what the log does not show (marked `*`;",
        "tests/data/capacity/log-estimates.json gives each input with where it came from). The logs come from V0 and",
        "older V1 releases (2024-2025), whose profiling differs from 0.33.0's: V0 and V1 before 0.21.0 did not take",
        "CUDA graphs from the KV cache.",
        "",
        "| log | GPU (total GiB) | >= 40 GiB | release | weights GiB | utilization | batched tokens | sequences | "
        "activations GiB | estimated GiB (give or take) | logged GiB | error | refused: logged | profilekit |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in done:
        v = r.get("refused")
        cells = [
            f"[{r['id']}]({r['source']})",
            f"{_bare(r['gpu'])} ({_value(r, 'gpu total GiB')})",
            "yes" if r["at_least_40_gib"] else "no",
            f"{r['engine']} {r['vllm_version']}",
            _value(r, "weights per GPU GiB"),
            _value(r, "gpu_memory_utilization"),
            _value(r, "max_num_batched_tokens"),
            _value(r, "max_num_seqs"),
            _value(r, "activations GiB"),
            f"{r['estimate']['available_gib']} ({r['estimate']['uncertainty_gib']})",
            f"{r['logged_gib']}",
            _pct(r["error"]),
            ("yes" if v["logged"] else "no") if v else "",
            v["profilekit"] if v else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    s = summary(rows)

    def said(part: dict[str, Any]) -> str:
        if not part["count"]:
            return "none"
        return (
            f"{part['count']} logs, {part['within_10_percent']} within 10 %; absolute error median "
            f"{part['median'] * 100:.1f} %, worst {part['worst'] * 100:.1f} %"
        )

    inside = [r["id"] for r in done if r["within_uncertainty"]]
    lines += [
        "",
        f"All estimated: {said(s['all'])}. On GPUs of 40 GiB or more: {said(s['at_least_40_gib'])}. The logged figure",
        f"lies within the estimate's give-or-take (its uncertainty) for {len(inside)} of {len(done)}. The `profilekit`",
        "verdict is Plan.verdict on the estimate: `refused` holds even with no reserve, `tight` is kv-cache-too-small's",
        "warning, `unknown` lacks the model's config.json.",
        "",
        "`*`: not in the log (where each came from: log-estimates.json). Notes:",
        "",
    ]
    for r in done:
        if r["notes"]:
            lines.append(f"- {r['id']}: {'; '.join(r['notes'])}.")
    lines += ["", "Not estimated:", ""]
    lines += [f"- {r['id']}: {r['skipped']}." for r in rows if "skipped" in r]
    return lines


def _pct(value: float) -> str:
    return f"{value * 100:+.1f} %"


def document(rows: list[dict[str, Any]], total: int, estimates: list[dict[str, Any]]) -> str:
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
    lines += estimate_document(estimates)
    return "\n".join(lines) + "\n"


def main() -> int:
    rows, estimates = run(), run_estimates()
    total = len(tomllib.loads((DATA / "logs.toml").read_text(encoding="utf-8"))["log"])
    RESULTS.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    payload = {"summary": summary(estimates), "logs": estimates}
    ESTIMATES.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    DOC.write_text(document(rows, total, estimates), encoding="utf-8")
    done = summary(estimates)["all"]["count"]
    print(
        f"wrote {DOC.relative_to(REPO)}, {RESULTS.relative_to(REPO)} ({len(rows)} logs computed of {total}) and "
        f"{ESTIMATES.relative_to(REPO)} ({done} estimated)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
