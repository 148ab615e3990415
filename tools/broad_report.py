#!/usr/bin/env python3
"""Verdict agreement on the broad corpus (tools/broad_corpus.py), and the disagreements grouped by kind.

For each release: profilekit's verdict against vLLM's real `create_engine_config()` (the oracle) on every
case of the broad corpus, with the same judging as the ReplaySSM corpus (tools/verdict_common.py). A case
the CPU oracle cannot decide must match one of `ORACLE_LIMITS` (the worker's own undecidable answers, and
rejections that come from the CPU platform or a package the oracle does not install).

The disagreements are grouped by kind: the category (`miss`: profilekit accepts what vLLM refuses;
`false-alarm`: profilekit refuses what vLLM accepts; `wrong-rule`: both refuse, for different reasons),
the options involved (each disagreement is shrunk to the fewest of its options that still disagree the
same way), vLLM's message with numbers and paths normalised, and which dummy models vLLM refuses it for.

    python3 tools/broad_report.py --versions 0.27.0 0.33.0   # writes tests/oracle/results/broad-X.json
    python3 tools/broad_report.py --all --notes DIR           # also DIR/broad-disagreements-X.json
    python3 tools/broad_report.py --all --fields              # regenerates tests/oracle/data/config-fields-X.json
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = REPO / "tests" / "oracle" / "results"
FIELDS = REPO / "tests" / "oracle" / "data"

for extra in (HERE, REPO, REPO / "src"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from broad_corpus import COUNT, SEED, exclusions, generate, single_case  # noqa: E402
from broad_limits import ORACLE_LIMITS  # noqa: E402
from verdict_common import Case, Outcome, judge  # noqa: E402

ARCHITECTURES = ("NemotronHForCausalLM", "KimiLinearForCausalLM", "LlamaForCausalLM", "Qwen3ForCausalLM")


def _config_json(case: Case) -> dict[str, Any]:
    from tests.oracle.models import config_json

    return config_json(case.architecture)


class LeakGuard:
    """Passes requests to the oracle and, every `every` cases, checks that the bare dummy models are judged
    as at the start: a case must never change how the long-lived worker judges later ones."""

    def __init__(self, oracle: Any, every: int = 200) -> None:
        self.oracle = oracle
        self.every = every
        self.count = 0
        self.baseline = self._bare()

    def _bare(self) -> dict[str, tuple[bool, str]]:
        from tests.oracle.models import config_json

        out = {}
        for arch in ARCHITECTURES:
            answer = self.oracle.validate(["dummy/bare"], config_json=config_json(arch))
            out[arch] = (bool(answer.get("ok")), str(answer.get("error", "")))
        return out

    def validate(
        self, argv: list[str], env: dict[str, str] | None = None, config_json: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        answer: dict[str, Any] = self.oracle.validate(argv, env=env, config_json=config_json)
        self.count += 1
        if self.count % self.every == 0:
            now = self._bare()
            if now != self.baseline:
                raise AssertionError(
                    f"the oracle leaks state between cases: after case {self.count} ({argv}) the bare models are "
                    f"judged {now}, at the start {self.baseline}"
                )
        return answer


def run_broad(version: str, oracle: Any, *, count: int = COUNT, seed: int = SEED) -> Outcome:
    """Judge every case of the broad corpus of `version` with profilekit and with the oracle."""
    return judge(
        version,
        LeakGuard(oracle),
        generate(version, count, seed),
        seed=seed,
        limits=ORACLE_LIMITS,
        config_json=_config_json,
        limits_on_errors=True,
    )


# ---- kinds ---------------------------------------------------------------------------------------------------

_PYDANTIC = re.compile(r"\d+ validation errors? for (\w+)\n(.*)", re.S)


def vllm_message(answer_or_row: dict[str, Any]) -> str:
    """vLLM's message with pydantic's field names kept, and numbers, quotes and temporary paths normalised."""
    error = str(answer_or_row.get("vllm_error") or answer_or_row.get("error") or "")
    detail = str(
        answer_or_row.get("vllm_detail") or answer_or_row.get("raw_error") or answer_or_row.get("stderr") or error
    )
    found = _PYDANTIC.search(detail)
    if found:
        parts: list[str] = []
        field = ""
        for line in found.group(2).splitlines():
            if not line.strip() or "errors.pydantic.dev" in line:
                continue
            if not line.startswith(" "):
                field = line.strip()
                continue
            text = re.sub(r"\s*\[type=.*$", "", line.strip()).removeprefix("Value error, ")
            if text in ("Unexpected keyword argument", "Extra inputs are not permitted"):
                field = "<unknown key>"  # typos and dropped keys are one kind per class
            parts.append(f"{found.group(1)}.{field}: {text}" if field else f"{found.group(1)}: {text}")
        if parts:
            error = "; ".join(parts)
    error = error.splitlines()[0] if error else ""
    error = re.sub(r"/tmp/profilekit-oracle-model-\w+", "<model>", error)
    error = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e[+-]?\d+)?", "N", error)
    return error[:240]


# What kind of check a disagreement is about, from vLLM's message (first match wins), and who models it
FAMILIES: tuple[tuple[str, str, str], ...] = (
    ("unknown-json-key", r"Unexpected keyword argument|Extra inputs are not permitted", "constraints"),
    (
        "field-constraint",
        r"Input should be|Field required|should have at least|Invalid version|must be a non-negative|"
        r"must contain non-negative|invalid choice|must use numactl",
        "constraints",
    ),
    (
        "free-string-registry",
        r"Unknown quantization method|Invalid kv_cache_dtype|Reasoning parser .* not found|Unknown config format|"
        r"can only be ray or mp|Unknown attention backend|Unsupported speculative method|not a valid",
        "constraints",
    ),
    ("needs-model-files", r"Cannot find the config file for|params\.json", "crossfield"),
    (
        "model-config",
        r"attention heads|MoE models|[Nn]umber of experts|multimodal model|not supported for \w+ForCausalLM|"
        r"LoRA is not supported|derived max_model_len|Engram|only supported for DeepSeek|Non-MoE",
        "crossfield",
    ),
)


def family(kind: dict[str, Any]) -> tuple[str, str]:
    """(family, the helper area that models it) of one kind of disagreement."""
    if kind["category"] == "false-alarm":
        return "false-alarm", "whoever owns the rule profilekit names"
    message = kind["vllm_message"]
    for name, pattern, owner in FAMILIES:
        if re.search(pattern, message):
            return name, owner
    refused = kind.get("refused_for")
    if refused is not None and set(refused) != set(ARCHITECTURES):
        return "model-config", "crossfield"
    return "cross-field", "crossfield"


def category(row: dict[str, Any]) -> str:
    if row["profilekit"] == "accept":
        return "miss"
    if row["vllm"] == "accept":
        return "false-alarm"
    return "wrong-rule"


def _judge_one(version: str, oracle: Any, arch: str, options: dict[str, Any], tag: str) -> tuple[str, str]:
    """(profilekit's verdict, vLLM's normalised message or 'accept') for one single-layer case."""
    outcome = judge(
        version,
        oracle,
        [single_case(version, tag, arch, options)],
        seed=0,
        limits=ORACLE_LIMITS,
        config_json=_config_json,
        limits_on_errors=True,
    )
    if outcome.undecidable:
        return "undecidable", "undecidable"
    if outcome.disagreements:
        row = outcome.disagreements[0]
        return row["profilekit"], vllm_message(row) if row["vllm"] != "accept" else "accept"
    verdict = next(iter(outcome.verdicts))
    return verdict, "accept" if verdict == "accept" else f"agrees ({verdict})"


def shrink(version: str, oracle: Any, row: dict[str, Any]) -> dict[str, Any]:
    """The fewest of the row's options that still give the same pair of verdicts."""
    options = dict(row.get("options") or {})
    arch = row["architecture"]
    target = (row["profilekit"], vllm_message(row) if row["vllm"] != "accept" else "accept")
    for dest in list(options):
        if len(options) == 1:
            break
        trial = {k: v for k, v in options.items() if k != dest}
        if _judge_one(version, oracle, arch, trial, "shrink") == target:
            options = trial
    return options


def group(version: str, oracle: Any | None, outcome: Outcome, *, shrink_rows: bool = True) -> list[dict[str, Any]]:
    """The disagreements of `outcome` grouped by kind, most frequent first."""
    kinds: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in outcome.disagreements:
        options = shrink(version, oracle, row) if shrink_rows and oracle is not None else dict(row.get("options") or {})
        message = vllm_message(row) if row["vllm"] != "accept" else "accept"
        key = (category(row), tuple(sorted(options)), row["profilekit"], message)
        kind = kinds.get(key)
        if kind is None:
            kind = kinds[key] = {
                "category": key[0],
                "options": list(key[1]),
                "profilekit": row["profilekit"],
                "vllm": row["vllm"] if not row["vllm"].startswith("unmapped") else "unmapped",
                "vllm_message": message,
                "count": 0,
                "cases": [],
                "example": {"architecture": row["architecture"], "options": options, "argv": row["argv"]},
            }
        kind["count"] += 1
        kind["cases"].append(row["case"].split(":")[0])
    ordered = sorted(kinds.values(), key=lambda k: (-k["count"], k["category"], k["options"], k["vllm_message"]))
    if oracle is not None and shrink_rows:
        for kind in ordered:
            kind["refused_for"] = _refused_for(version, oracle, kind)
    for kind in ordered:
        kind["family"], kind["owner"] = family(kind)
    return ordered


def _refused_for(version: str, oracle: Any, kind: dict[str, Any]) -> list[str]:
    """The dummy models for which vLLM gives the kind's message on its shrunk options."""
    out = []
    for arch in ARCHITECTURES:
        _pk, message = _judge_one(version, oracle, arch, kind["example"]["options"], "arch")
        if message == kind["vllm_message"]:
            out.append(arch)
    return out


# ---- results ---------------------------------------------------------------------------------------------------


def summary(outcome: Outcome) -> dict[str, Any]:
    figures = outcome.as_dict(ORACLE_LIMITS)
    figures.pop("disagreements")
    by_category = collections.Counter(category(row) for row in outcome.disagreements)
    figures["disagreements"] = {"count": len(outcome.disagreements), "by_category": dict(sorted(by_category.items()))}
    figures["undecidable"]["cases"] = sorted(u["case"].split(":")[0] for u in outcome.undecidable)
    return figures


def results(outcome: Outcome, kinds: list[dict[str, Any]]) -> dict[str, Any]:
    """What tests/oracle/results/broad-X.json holds: figures, exclusions, and every disagreeing case by kind."""
    figures = summary(outcome)
    figures["kinds"] = [
        {k: kind[k] for k in ("category", "family", "options", "profilekit", "vllm_message", "count", "cases")}
        for kind in kinds
    ]
    figures["excluded"] = exclusions(outcome.version)
    return figures


def notes(outcome: Outcome, kinds: list[dict[str, Any]]) -> dict[str, Any]:
    """The grouped report for the people who model the rules: every kind with an example and its models."""
    figures = summary(outcome)
    families: dict[str, dict[str, Any]] = {}
    for kind in kinds:
        entry = families.setdefault(kind["family"], {"owner": kind["owner"], "cases": 0, "kinds": 0, "options": {}})
        entry["cases"] += kind["count"]
        entry["kinds"] += 1
        for dest in kind["options"]:
            entry["options"][dest] = entry["options"].get(dest, 0) + kind["count"]
    for entry in families.values():
        entry["options"] = dict(sorted(entry["options"].items(), key=lambda kv: -kv[1]))
    figures["families"] = dict(sorted(families.items(), key=lambda kv: -kv[1]["cases"]))
    figures["kinds"] = [
        {k: v for k, v in kind.items() if k != "cases"} | {"cases": kind["cases"][:10]} for kind in kinds
    ]
    return figures


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_fields(version: str) -> Path:
    """tests/oracle/data/config-fields-X.json from vLLM's own config classes (tools/oracle/config_fields.py)."""
    sys.path.insert(0, str(HERE / "oracle"))
    import build_env

    env = build_env.ensure(version)
    command = env.worker_command()
    catalogue = REPO / "src" / "profilekit" / "vllm" / "catalogues" / f"vllm-{version}.json"
    done = subprocess.run(
        [command[0], str(HERE / "oracle" / "config_fields.py"), str(catalogue)],
        env=env.worker_environ(),
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    path = FIELDS / f"config-fields-{version}.json"
    path.write_text(done.stdout, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--versions", nargs="+", metavar="X.Y.Z")
    which.add_argument("--all", action="store_true")
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--notes", type=Path, help="also write DIR/broad-disagreements-X.json")
    parser.add_argument("--no-shrink", action="store_true", help="group by every option of a case (faster)")
    parser.add_argument("--fields", action="store_true", help="only regenerate tests/oracle/data/config-fields-X.json")
    args = parser.parse_args(argv)

    from tests.oracle.oracle_client import SUPPORTED_VERSIONS, OracleWorker

    versions = list(SUPPORTED_VERSIONS) if args.all else list(args.versions)
    if args.fields:
        for version in versions:
            print(f"vLLM {version}: {write_fields(version).relative_to(REPO)}")
        return 0
    for version in versions:
        with OracleWorker(version) as oracle:
            outcome = run_broad(version, oracle, count=args.count, seed=args.seed)
            kinds = group(version, oracle, outcome, shrink_rows=not args.no_shrink)
        path = write_json(RESULTS / f"broad-{version}.json", results(outcome, kinds))
        if args.notes is not None:
            write_json(args.notes / f"broad-disagreements-{version}.json", notes(outcome, kinds))
        rate = f"{100 * outcome.agreements / outcome.decided:.2f}%" if outcome.decided else "n/a"
        print(
            f"vLLM {version}: {outcome.checks} cases, {outcome.decided} decided, {outcome.agreements} agree ({rate}), "
            f"{len(outcome.undecidable)} undecidable ({len(outcome.unexplained)} unexplained), "
            f"{len(kinds)} kinds of disagreement, {outcome.seconds}s -> {path.relative_to(REPO)}",
            flush=True,
        )
        for kind in kinds[:15]:
            print(f"  {kind['count']:4d} {kind['category']:11s} {','.join(kind['options'])}: {kind['vllm_message']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
