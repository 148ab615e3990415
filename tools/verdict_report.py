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
import json
import sys
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

from verdict_common import Limit, Outcome, judge, match_limit  # noqa: E402
from verdict_corpus import generate  # noqa: E402

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
    return match_limit(answer, version, KNOWN_LIMITS)


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


def run_verdicts(version: str, oracle: Any, *, count: int = COUNT, seed: int = SEED) -> Outcome:
    """Judge every case with profilekit and with the oracle (an `OracleWorker` for `version`)."""
    cases = generate(version, count, seed)
    return judge(
        version,
        oracle,
        cases,
        seed=seed,
        limits=KNOWN_LIMITS,
        config_json=lambda case: oracle_config_json(case.architecture),
    )


def write_results(outcome: Outcome) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"verdicts-{outcome.version}.json"
    path.write_text(json.dumps(outcome.as_dict(KNOWN_LIMITS), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
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
