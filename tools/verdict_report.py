#!/usr/bin/env python3
"""Verdict agreement between profilekit and vLLM's real `create_engine_config()` (the oracle).

For every case of the seeded corpus (tools/verdict_corpus.py) and every vLLM role of its stack, profilekit
predicts vLLM's verdict (`profilekit.rules.vllm_verdict`: accept, or the id of the rule vLLM reports first)
and the oracle runs the rendered argv and env against a model folder holding only a dummy config.json.
vLLM's message is mapped to a rule id (`rule_for_message`); the two must be equal.

Cases the CPU oracle cannot decide are not agreements: each must match one of `KNOWN_LIMITS`.

    python3 tools/verdict_report.py --versions 0.27.0 0.33.0   # writes tests/oracle/results/verdicts-X.json
    python3 tools/verdict_report.py --all
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = REPO / "tests" / "oracle" / "results"
SEED = 20261129
COUNT = 1200  # compositions per release (some hold two vLLM roles)

for extra in (HERE, REPO, REPO / "src"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from verdict_corpus import Case, generate, rule_for_message  # noqa: E402


@dataclass(frozen=True)
class Limit:
    """A kind of case that a CPU-only oracle cannot decide, and why a GPU host would differ."""

    id: str
    pattern: str  # matched against the worker's `undecidable` reason and error
    why: str
    releases: tuple[str, ...] = ()  # empty: every release


KNOWN_LIMITS = (
    Limit(
        "lmcache-not-importable",
        r"lmcache",
        "LMCache connectors (and --kv-offloading-backend lmcache) import the lmcache package while the config is "
        "built; it needs compiled CUDA code, so the CPU oracle has no verdict (vllm-facts.md 5.1a)",
    ),
    Limit(
        "mooncake-needs-httpx",
        r"module 'httpx' is not installed",
        "MooncakeConnector's module imports httpx in 0.27-0.29 when the HMA check loads the class; the oracle "
        "pins (reference/oracle-pins.txt) do not install httpx",
        ("0.27.0", "0.27.1", "0.28.0", "0.29.0"),
    ),
)


def limit_for(answer: dict[str, Any], version: str) -> Limit | None:
    text = f"{answer.get('undecidable', '')}\n{answer.get('error', '')}"
    for limit in KNOWN_LIMITS:
        if re.search(limit.pattern, text) and (not limit.releases or version in limit.releases):
            return limit
    return None


def oracle_config_json(architecture: str) -> dict[str, Any]:
    """The dummy config.json of `architecture`, as a GPU host would judge it.

    The Kimi Linear dummy drops MLA (`kv_lora_rank`): vLLM's CPU platform turns prefix caching off for MLA
    models (`vllm/platforms/cpu.py`, "MLA is enabled on a non-GPU platform"), which a GPU host never does;
    0.28.0 then even refuses the model ("--mamba-block-size can only be set with --enable-prefix-caching").
    The ReplaySSM rules read only the architecture name, so this changes no verdict a GPU host gives.
    """
    from tests.oracle.models import config_json

    config = config_json(architecture)
    if architecture.startswith("Kimi"):
        config["kv_lora_rank"] = None
    return config


@dataclass
class Outcome:
    version: str
    seed: int
    cases: int = 0  # compositions
    checks: int = 0  # vLLM roles judged (a composition may hold a prefill and a decode role)
    agreements: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    undecidable: list[dict[str, Any]] = field(default_factory=list)
    unexplained: list[dict[str, Any]] = field(default_factory=list)  # undecidable matching no known limit
    verdicts: collections.Counter[str] = field(default_factory=collections.Counter)
    seconds: float = 0.0

    @property
    def decided(self) -> int:
        return self.agreements + len(self.disagreements)

    def as_dict(self) -> dict[str, Any]:
        by_limit = collections.Counter(u["limit"] for u in self.undecidable)
        return {
            "vllm_version": self.version,
            "seed": self.seed,
            "compositions": self.cases,
            "cases": self.checks,
            "decided": self.decided,
            "agreements": self.agreements,
            "agreement_rate": round(self.agreements / self.decided, 6) if self.decided else None,
            "disagreements": self.disagreements,
            "undecidable": {
                "count": len(self.undecidable),
                "by_limit": dict(sorted(by_limit.items())),
                "limits": {limit.id: limit.why for limit in KNOWN_LIMITS if limit.id in by_limit},
                "unexplained": self.unexplained,
            },
            "verdicts": dict(sorted(self.verdicts.items())),
        }


def _write_repo(root: Path, version: str, cases: list[Case]) -> None:
    (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
    for case in cases:
        for name, text in case.layers.items():
            path = root / "profiles" / f"{name}.toml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        for rel, text in case.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def run_verdicts(version: str, oracle: Any, *, count: int = COUNT, seed: int = SEED) -> Outcome:
    """Judge every case with profilekit and with the oracle (an `OracleWorker` for `version`)."""
    from profilekit.compose import Catalog, compose
    from profilekit.rules import vllm_verdict
    from profilekit.vllm.argv import render_argv
    from profilekit.vllm.catalogue import load_catalogue

    started = time.monotonic()
    catalogue = load_catalogue(version)
    cases = generate(version, count, seed)
    outcome = Outcome(version, seed)
    with tempfile.TemporaryDirectory(prefix="profilekit-verdicts-") as tmp:
        root = Path(tmp)
        _write_repo(root, version, cases)
        catalog = Catalog(root, catalogue)
        for case in cases:
            outcome.cases += 1
            stack = compose(catalog, case.stack)
            for name, role in stack.roles.items():
                if not role.is_vllm:
                    continue
                outcome.checks += 1
                predicted = vllm_verdict(stack, name, version=version, catalogue=catalogue, root=root)
                argv = render_argv(role.serve, catalogue)
                env = {k: v for k, v in role.env.items() if isinstance(v, str)}
                answer = oracle.validate(argv, env=env, config_json=oracle_config_json(case.architecture))
                record = {"case": f"{case.id}:{name}", "argv": argv, "env": env, "architecture": case.architecture}
                if answer.get("undecidable"):
                    limit = limit_for(answer, version)
                    entry = {**record, "reason": answer["undecidable"], "limit": limit.id if limit else None}
                    outcome.undecidable.append(entry)
                    if limit is None:
                        outcome.unexplained.append(entry)
                    continue
                if answer.get("ok"):
                    actual: str | None = None
                else:
                    text = "\n".join(str(answer.get(k, "")) for k in ("error", "stderr", "raw_error"))
                    actual = rule_for_message(text) or f"unmapped vLLM error: {answer.get('error', '')[:300]}"
                expected = None if predicted.accepted else predicted.rule
                outcome.verdicts[actual or "accept"] += 1
                if expected == actual:
                    outcome.agreements += 1
                else:
                    outcome.disagreements.append(
                        {
                            **record,
                            "profilekit": expected or "accept",
                            "vllm": actual or "accept",
                            "vllm_error": answer.get("error"),
                            "reason": f"profilekit says {expected or 'accept'}, vLLM says {actual or 'accept'}",
                        }
                    )
    outcome.seconds = round(time.monotonic() - started, 1)
    return outcome


def write_results(outcome: Outcome) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"verdicts-{outcome.version}.json"
    path.write_text(json.dumps(outcome.as_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--versions", nargs="+", metavar="X.Y.Z")
    which.add_argument("--all", action="store_true")
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)

    from tests.oracle.oracle_client import SUPPORTED_VERSIONS, OracleWorker

    versions = list(SUPPORTED_VERSIONS) if args.all else list(args.versions)
    failed = False
    for version in versions:
        with OracleWorker(version) as oracle:
            outcome = run_verdicts(version, oracle, count=args.count, seed=args.seed)
        path = write_results(outcome)
        rate = f"{100 * outcome.agreements / outcome.decided:.2f}%" if outcome.decided else "n/a"
        print(
            f"vLLM {version}: {outcome.checks} cases ({outcome.cases} compositions), {outcome.agreements}/"
            f"{outcome.decided} agree ({rate}), {len(outcome.undecidable)} undecidable, "
            f"{outcome.seconds}s -> {path.relative_to(REPO)}"
        )
        for d in outcome.disagreements[:10]:
            print(f"  {d['case']}: {d['reason']}  argv={d['argv']} env={d['env']}")
        failed = failed or bool(outcome.disagreements or outcome.unexplained)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
