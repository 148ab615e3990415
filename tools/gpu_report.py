#!/usr/bin/env python3
"""Verdict agreement on declared GPUs: the verdict corpora crossed with GPUs, judged by vLLM's own GPU platform.

For each release and each GPU of `GPUS`, every case of the broad corpus (tools/broad_corpus.py), of the
ReplaySSM/KV corpus (tools/verdict_corpus.py) and every real launch of tests/data/launches gets one more layer,
`[hardware] gpu = NAME` with `gpus_per_node = 8`; profilekit's `vllm_verdict` reads the GPU from the stack
(`Stack.gpu(role)`), and the oracle is a GPU-mode worker (tools/oracle/gpu_platform.py: vLLM's own
`NvmlCudaPlatform` or `RocmPlatform` answering as 8 such devices). Judging is tools/verdict_common.py's `judge`.

A case the GPU-mode oracle cannot decide is `undecidable` with its reason: a package the oracle does not install,
the dummy models' missing checkpoint files, or a compiled library / driver this machine lacks (the worker's own
`undecidable` answers). CPU-platform limits (`platform-capability`) do not apply: here the platform is the GPU's.

    python3 tools/gpu_report.py --versions 0.27.0 0.33.0   # tests/oracle/results/gpu-X.json and docs/GPU-VERDICTS.md
    python3 tools/gpu_report.py --versions 0.33.0 --gpus T4 MI300X --slice 0/6   # a slice, printed only
    python3 tools/gpu_report.py --doc                       # only rewrite docs/GPU-VERDICTS.md from the results
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = REPO / "tests" / "oracle" / "results"
DOC = REPO / "docs" / "GPU-VERDICTS.md"
LAUNCHES = REPO / "tests" / "data" / "launches"

for extra in (HERE, REPO, REPO / "src"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import broad_corpus  # noqa: E402
import verdict_corpus  # noqa: E402
from broad_limits import CHECKPOINT_LIMITS  # noqa: E402
from broad_report import vllm_message  # noqa: E402
from verdict_common import Case, Limit, Outcome, judge  # noqa: E402
from verdict_report import KNOWN_LIMITS, oracle_config_json  # noqa: E402

GPUS = ("T4", "A100-SXM4-80GB", "L40S", "H100-SXM-80GB", "B200", "MI300X")
GPUS_PER_NODE = 8
CORPORA = ("broad", "verdicts", "launches")

# what the GPU-mode oracle cannot decide (the CPU platform's own limits do not apply: the platform is the GPU's)
GPU_LIMITS: tuple[Limit, ...] = (
    *KNOWN_LIMITS,
    Limit(
        "host-library",
        r"compiled library the CPU-only oracle lacks|needs the GPU's driver|amdsmi is not installed|"
        r"replaced by an empty module",
        "the case reaches a compiled CUDA/ROCm kernel module, a driver query or amdsmi while the config is built; "
        "this machine has none of them (tools/oracle/gpu_platform.py host_library_reason), a GPU host has",
    ),
    Limit(
        "package-not-installed",
        r"module '[\w.]+' is not installed|Failed to import Ray|Arctic Inference is required|"
        r"Unable to configure formatter 'vllm_json'",
        "a package the oracle pins (tools/oracle/oracle-pins.txt) do not install: ray, arctic-inference, ijson, "
        "python-json-logger, httpx (0.27-0.29), a kernel package; a host that uses it has it",
    ),
    Limit(
        "no-tokenizer",
        r"tokenizer must be passed to the ReasoningParser|'NoneType' object has no attribute 'encode'",
        "the oracle builds the config with `skip_tokenizer_init` (the dummy models have no tokenizer)",
    ),
    *CHECKPOINT_LIMITS,
)


def hardware_layer(gpu: str) -> str:
    return f'[hardware]\ngpu = "{gpu}"\ngpus_per_node = {GPUS_PER_NODE}\n'


def on_gpu(case: Case, gpu: str) -> Case:
    """The case with one more layer declaring the GPU."""
    return dataclasses.replace(
        case, layers={**case.layers, "hw/gpu": hardware_layer(gpu)}, stack=f"{case.stack}+hw/gpu"
    )


def in_slice(index: int, part: int, parts: int) -> bool:
    return parts <= 1 or index % parts == part


# ---- the real launches ---------------------------------------------------------------------------------------------

# the dummy model (tests/oracle/models.py) that stands for a launch's model: the same architecture family
LAUNCH_MODELS: tuple[tuple[str, str], ...] = (
    (r"Qwen", "Qwen3ForCausalLM"),
    (r"[Ll]lama", "LlamaForCausalLM"),
    (r"Nemotron|/mnt/models", "NemotronHForCausalLM"),  # /mnt/models: D3f serves Nemotron 3 (nemotron_v3 parser)
)


def launch_cases(version: str, root: Path) -> tuple[list[Case], list[dict[str, str]]]:
    """Each launch of tests/data/launches imported by profilekit into a layer, on the dummy model of its family."""
    from oracle_report import _script_args, launch_examples

    from profilekit.errors import UsageError
    from profilekit.importing.launch import import_launch
    from profilekit.importing.shellwords import ShellError
    from profilekit.vllm.catalogue import load_catalogue

    catalogue = load_catalogue(version)
    cases: list[Case] = []
    skipped: list[dict[str, str]] = []
    (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
    for stem, path in launch_examples():
        try:
            args = _script_args(path)
        except ShellError as exc:
            skipped.append({"case": stem, "reason": f"only a shell can run it as written ({exc})"})
            continue
        try:
            imported = import_launch(root, [path.name], name=f"ex/{stem}", catalogue=catalogue, cwd=path.parent)
        except UsageError as exc:
            skipped.append({"case": stem, "reason": f"profilekit import refuses it: {exc.message}"})
            continue
        text = imported.text
        model = next((a for a in args if not a.startswith("-")), "") or text
        arch = next((a for pattern, a in LAUNCH_MODELS if re.search(pattern, model + text)), None)
        if arch is None:
            skipped.append({"case": stem, "reason": f"no dummy model of the family of {model!r}"})
            continue
        layers = {
            f"ex/{stem}": text,
            f"ex/{stem}-model": f'[model]\nconfig = "models/{arch}/config.json"\n',
        }
        files = {f"models/{arch}/config.json": json.dumps(oracle_config_json(arch))}
        cases.append(Case(f"{version}/launch-{stem}", arch, f"ex/{stem}+ex/{stem}-model", layers, {}, files))
    return cases, skipped


# ---- running ---------------------------------------------------------------------------------------------------------


def corpus_cases(version: str, corpus: str, root: Path) -> tuple[list[Case], list[dict[str, str]]]:
    if corpus == "broad":
        return broad_corpus.generate(version, broad_corpus.COUNT, broad_corpus.SEED), []
    if corpus == "verdicts":
        from verdict_report import COUNT, SEED

        return verdict_corpus.generate(version, COUNT, SEED), []
    return launch_cases(version, root)


def config_json_for(corpus: str) -> Callable[[Case], dict[str, Any]]:
    if corpus == "broad":
        from tests.oracle.models import config_json

        return lambda case: config_json(case.architecture)
    return lambda case: oracle_config_json(case.architecture)


def run(
    version: str, gpu: str, oracle: Any, *, part: int = 0, parts: int = 1, corpora: tuple[str, ...] = CORPORA
) -> dict[str, Outcome]:
    """Judge each corpus (or its slice `part` of `parts`) on `gpu` with profilekit and with the GPU-mode oracle."""
    outcomes: dict[str, Outcome] = {}
    for corpus in corpora:
        with tempfile.TemporaryDirectory(prefix="profilekit-gpu-launches-") as tmp:
            cases, skipped = corpus_cases(version, corpus, Path(tmp))
        chosen = [on_gpu(case, gpu) for index, case in enumerate(cases) if in_slice(index, part, parts)]
        outcome = judge(
            version,
            oracle,
            chosen,
            seed=0,
            limits=GPU_LIMITS,
            config_json=config_json_for(corpus),
            limits_on_errors=True,
        )
        outcome.skipped = skipped  # type: ignore[attr-defined]
        outcomes[corpus] = outcome
    return outcomes


def false_rejects(outcome: Outcome) -> list[dict[str, Any]]:
    return [d for d in outcome.disagreements if d["vllm"] == "accept"]


def false_accepts(outcome: Outcome) -> list[dict[str, Any]]:
    return [d for d in outcome.disagreements if d["profilekit"] == "accept"]


def figures(outcomes: dict[str, Outcome]) -> dict[str, Any]:
    """Per GPU: the totals over the corpora, each corpus' figures, undecidable reasons, disagreements."""
    per_corpus = {}
    total = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    for corpus, outcome in outcomes.items():
        row = {
            "cases": outcome.checks,
            "decided": outcome.decided,
            "agreements": outcome.agreements,
            "false_rejects": len(false_rejects(outcome)),
            "false_accepts": len(false_accepts(outcome)),
            "wrong_rule": len(outcome.disagreements) - len(false_rejects(outcome)) - len(false_accepts(outcome)),
            "undecidable": len(outcome.undecidable),
            "unexplained_undecidable": len(outcome.unexplained),
            "seconds": outcome.seconds,
        }
        skipped = getattr(outcome, "skipped", [])
        if skipped:
            row["skipped"] = skipped
        per_corpus[corpus] = row
        for key in ("cases", "decided", "agreements", "false_rejects", "false_accepts", "wrong_rule", "undecidable"):
            total[key] += row[key]
        total["seconds"] += outcome.seconds
        for entry in outcome.undecidable:
            reasons[f"{entry['limit'] or 'unexplained'}: {_reason(entry['reason'])}"] += 1
    summary: dict[str, Any] = dict(total)
    summary["seconds"] = round(summary.get("seconds", 0.0), 1)
    summary["agreement_rate"] = round(total["agreements"] / total["decided"], 6) if total["decided"] else None
    summary["corpora"] = per_corpus
    summary["undecidable_reasons"] = dict(reasons.most_common())
    return summary


def _reason(text: str) -> str:
    text = re.sub(r"/tmp/[\w./-]+", "<tmp>", str(text))
    text = re.sub(r"(?<![\w.])-?\d+(\.\d+)?", "N", text)
    return text.splitlines()[0][:200] if text else ""


def group_disagreements(by_gpu: dict[str, dict[str, Outcome]]) -> list[dict[str, Any]]:
    """Every disagreement of every GPU, grouped by vLLM's message (normalised), with one example and its GPUs."""
    kinds: dict[tuple[str, str, str], dict[str, Any]] = {}
    for gpu, outcomes in by_gpu.items():
        for corpus, outcome in outcomes.items():
            for row in outcome.disagreements:
                message = vllm_message(row) if row["vllm"] != "accept" else "accept"
                key = (message, row["profilekit"], row["vllm"])
                kind = kinds.get(key)
                if kind is None:
                    kind = kinds[key] = {
                        "vllm_message": message,
                        "profilekit": row["profilekit"],
                        "vllm": row["vllm"] if not row["vllm"].startswith("unmapped") else "unmapped",
                        "category": "false-reject"
                        if row["vllm"] == "accept"
                        else ("false-accept" if row["profilekit"] == "accept" else "wrong-rule"),
                        "count": 0,
                        "gpus": {},
                        "example": {
                            "gpu": gpu,
                            "corpus": corpus,
                            "case": row["case"],
                            "architecture": row["architecture"],
                            "argv": row["argv"],
                            "env": row["env"],
                            "vllm_error": str(row.get("vllm_error") or "")[:500],
                        },
                    }
                kind["count"] += 1
                kind["gpus"][gpu] = kind["gpus"].get(gpu, 0) + 1
    return sorted(kinds.values(), key=lambda k: (-k["count"], k["vllm_message"]))


def write_results(
    version: str, by_gpu: dict[str, dict[str, Outcome]], startup: dict[str, float], part: str = "0/1"
) -> Path:
    data = {
        "vllm_version": version,
        # "0/1": every case; "P/N": only the cases whose index is P modulo N (a run cut short for time)
        "slice": part,
        "gpus_per_node": GPUS_PER_NODE,
        "corpora": {
            "broad": {"seed": broad_corpus.SEED, "count": broad_corpus.COUNT},
            "verdicts": {"seed": verdict_corpus_seed(), "count": verdict_corpus_count()},
            "launches": {"directory": "tests/data/launches"},
        },
        "gpus": {
            gpu: {**figures(outcomes), "worker_startup_seconds": startup.get(gpu)} for gpu, outcomes in by_gpu.items()
        },
        "limits": {limit.id: limit.why for limit in GPU_LIMITS},
        "disagreements": group_disagreements(by_gpu),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"gpu-{version}.json"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def verdict_corpus_seed() -> int:
    from verdict_report import SEED

    return SEED


def verdict_corpus_count() -> int:
    from verdict_report import COUNT

    return COUNT


# ---- the markdown ----------------------------------------------------------------------------------------------------


def write_doc() -> Path:
    """docs/GPU-VERDICTS.md from every tests/oracle/results/gpu-X.json."""
    lines = [
        "# Verdicts on declared GPUs",
        "",
        "Generated by `python3 tools/gpu_report.py` from `tests/oracle/results/gpu-<release>.json`; do not edit.",
        "",
        "Each case of the broad corpus (`tools/broad_corpus.py`), of the ReplaySSM/KV corpus",
        "(`tools/verdict_corpus.py`) and each real launch of `tests/data/launches` gets a layer",
        f'`[hardware] gpu = "NAME"`, `gpus_per_node = {GPUS_PER_NODE}`. profilekit\'s verdict is compared with',
        "vLLM's own: the oracle worker runs the release's `NvmlCudaPlatform` or `RocmPlatform` answering as",
        f"{GPUS_PER_NODE} such devices (`tools/oracle/gpu_platform.py`, `tools/oracle/README.md`).",
        "A false reject: profilekit refuses what vLLM starts; a false accept: profilekit accepts what vLLM refuses.",
        "",
        "| release | GPU | cases | decided | agree | rate | false rejects | false accepts | wrong rule | undecidable "
        "| seconds |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    kinds_by_release: dict[str, list[dict[str, Any]]] = {}
    undecidable: dict[str, dict[str, dict[str, int]]] = {}
    for path in sorted(RESULTS.glob("gpu-*.json"), key=lambda p: tuple(int(x) for x in p.stem[4:].split("."))):
        data = json.loads(path.read_text(encoding="utf-8"))
        version = data["vllm_version"]
        if data.get("slice", "0/1") != "0/1":
            version = f"{version} (slice {data['slice']})"
        for gpu, row in data["gpus"].items():
            rate = f"{100 * row['agreement_rate']:.2f}%" if row.get("agreement_rate") is not None else "n/a"
            lines.append(
                f"| {version} | {gpu} | {row['cases']} | {row['decided']} | {row['agreements']} | {rate} | "
                f"{row['false_rejects']} | {row['false_accepts']} | {row['wrong_rule']} | {row['undecidable']} | "
                f"{row['seconds']} |"
            )
        kinds_by_release[data["vllm_version"]] = data["disagreements"]
        undecidable[data["vllm_version"]] = {gpu: row["undecidable_reasons"] for gpu, row in data["gpus"].items()}
    lines += ["", "## Disagreements by vLLM's message", ""]
    for version, kinds in kinds_by_release.items():
        lines.append(f"### vLLM {version}")
        lines.append("")
        if not kinds:
            lines += ["None.", ""]
            continue
        lines.append("| count | kind | profilekit | vLLM's message | GPUs | example argv |")
        lines.append("| ---: | --- | --- | --- | --- | --- |")
        for kind in kinds:
            gpus = ", ".join(f"{g} ({n})" for g, n in kind["gpus"].items())
            argv = " ".join(kind["example"]["argv"]).replace("|", "\\|")
            message = kind["vllm_message"].replace("|", "\\|")
            lines.append(
                f"| {kind['count']} | {kind['category']} | {kind['profilekit']} | {message} | {gpus} | `{argv}` |"
            )
        lines.append("")
    lines += ["## Undecidable cases by reason", ""]
    for version, per_gpu in undecidable.items():
        lines += [f"### vLLM {version}", "", "| reason | " + " | ".join(per_gpu) + " |"]
        lines.append("| --- |" + " ---: |" * len(per_gpu))
        reasons = sorted(
            {r for row in per_gpu.values() for r in row},
            key=lambda r: (-max(v.get(r, 0) for v in per_gpu.values()), r),
        )
        for reason in reasons:
            cells = " | ".join(str(row.get(reason, 0)) for row in per_gpu.values())
            lines.append(f"| {reason.replace('|', chr(92) + '|')} | {cells} |")
        lines.append("")
    DOC.write_text("\n".join(lines).rstrip("\n") + "\n", encoding="utf-8")
    return DOC


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versions", nargs="+", metavar="X.Y.Z", default=[])
    parser.add_argument("--gpus", nargs="+", default=list(GPUS))
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    parser.add_argument("--slice", default="0/1", help="PART/PARTS: judge only every PARTS-th case")
    parser.add_argument("--doc", action="store_true", help="only rewrite docs/GPU-VERDICTS.md")
    args = parser.parse_args(argv)
    if args.doc:
        print(write_doc().relative_to(REPO))
        return 0

    from tests.oracle.oracle_client import OracleWorker

    from profilekit.hardware import CATALOGUE

    part, parts = (int(x) for x in args.slice.split("/"))
    full = tuple(args.gpus) == GPUS and tuple(args.corpora) == CORPORA
    for version in args.versions:
        by_gpu: dict[str, dict[str, Outcome]] = {}
        startup: dict[str, float] = {}
        # one model-inspection cache for this release's GPU workers (never the user's, nor another run's)
        cache = tempfile.mkdtemp(prefix=f"profilekit-oracle-cache-{version}-")
        for gpu in args.gpus:
            started = time.monotonic()
            with OracleWorker(version, gpu=CATALOGUE[gpu], vllm_cache=cache) as oracle:
                startup[gpu] = round(time.monotonic() - started, 1)
                by_gpu[gpu] = run(version, gpu, oracle, part=part, parts=parts, corpora=tuple(args.corpora))
            row = figures(by_gpu[gpu])
            rate = f"{100 * row['agreement_rate']:.2f}%" if row["agreement_rate"] is not None else "n/a"
            print(
                f"vLLM {version} on {gpu}: {row['cases']} cases, {row['decided']} decided, {row['agreements']} agree "
                f"({rate}), {row['false_rejects']} false rejects, {row['false_accepts']} false accepts, "
                f"{row['undecidable']} undecidable; start {startup[gpu]}s, judging {row['seconds']}s",
                flush=True,
            )
            for reason, count in list(row["undecidable_reasons"].items())[:8]:
                print(f"    undecidable {count:4d} {reason}")
        shutil.rmtree(cache, ignore_errors=True)
        kinds = group_disagreements(by_gpu)
        for kind in kinds[:25]:
            print(f"  {kind['count']:4d} {kind['category']:12s} pk={kind['profilekit']} {kind['vllm_message'][:150]}")
            print(f"       {kind['gpus']} e.g. {' '.join(kind['example']['argv'])[:200]}")
        if full:
            print(f"-> {write_results(version, by_gpu, startup, args.slice).relative_to(REPO)}")
    if any(True for _ in RESULTS.glob("gpu-*.json")):
        write_doc()
    return 0


if __name__ == "__main__":
    sys.exit(main())
