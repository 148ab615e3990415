"""Running one of tools/oracle's probes (kv_probe.py, weights_probe.py) in a release's oracle environment."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.oracle.oracle_client import build_env

PROBES = Path(__file__).resolve().parents[2] / "tools" / "oracle"


def run_probe(version: str, probe: str, requests: list[dict[str, Any]], *, timeout: int) -> list[dict[str, Any]]:
    """One answer per request, from `probe` run by the release's own python (vLLM's logs quiet)."""
    env = build_env.ensure(version)
    environ = env.worker_environ()
    environ["VLLM_LOGGING_LEVEL"] = "ERROR"
    run = subprocess.run(
        [str(env.python), "-u", str(PROBES / probe)],
        input="".join(json.dumps(request) + "\n" for request in requests),
        capture_output=True,
        text=True,
        env=environ,
        timeout=timeout,
        check=False,
    )
    answers = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    assert len(answers) == len(requests), run.stderr[-4000:]
    return answers
