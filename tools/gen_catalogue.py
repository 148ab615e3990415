#!/usr/bin/env python3
"""Regenerate the vLLM flag catalogues shipped as package data (stdlib only).

For each release, builds (or reuses) its oracle environment
(``tools/oracle/build_env.py``), asks the oracle worker for the catalogue of
the real ``vllm serve`` parser and writes
``src/profilekit/vllm/catalogues/vllm-<X>.json``, and the value constraints of
the release's config classes (``tools/oracle/constraints.py``) to its sibling
``vllm-<X>.values.json``.

Usage::

    python3 tools/gen_catalogue.py --all
    python3 tools/gen_catalogue.py --versions 0.33.0
    python3 tools/gen_catalogue.py --all --check   # fail if a file would change
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "oracle"))

import build_env  # noqa: E402

REPO_ROOT = HERE.parent
CATALOGUE_DIR = REPO_ROOT / "src" / "profilekit" / "vllm" / "catalogues"


def catalogue_path(version: str) -> Path:
    return CATALOGUE_DIR / f"vllm-{version}.json"


def values_path(version: str) -> Path:
    return CATALOGUE_DIR / f"vllm-{version}.values.json"


def fetch_catalogue(env: build_env.OracleEnv) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run one worker for ``env`` and return its catalogue and value constraints."""
    result = subprocess.run(
        env.worker_command(),
        input=json.dumps({"op": "catalogue"}) + "\n",
        env=env.worker_environ(),
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    answers = [json.loads(line) for line in lines]
    if len(answers) < 2 or not answers[0].get("ok") or not answers[1].get("ok"):
        raise build_env.BuildError(
            f"vllm {env.version}: catalogue request failed (exit {result.returncode}): "
            f"{answers!r}\n{result.stderr[-4000:]}"
        )
    version = answers[1].get("version")
    if version != env.version:
        raise build_env.BuildError(f"asked for vllm {env.version}, the worker runs {version}")
    catalogue = answers[1]["catalogue"]
    values = answers[1].get("values")
    if not isinstance(catalogue, list) or not isinstance(values, dict):
        raise build_env.BuildError("the catalogue is not a list, or the value constraints are missing")
    return catalogue, values


def render(catalogue: list[dict[str, Any]] | dict[str, Any]) -> str:
    """indent=1, keys sorted inside entries, entries in parser order."""
    return json.dumps(catalogue, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _update(path: Path, text: str, *, check: bool, stale: list[str]) -> bool:
    """Write `text` to `path` unless it is already there (or only compare, with `check`); True if unchanged."""
    current = path.read_text() if path.exists() else None
    if current == text:
        return True
    if check:
        stale.append(str(path))
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--versions", nargs="+", metavar="X.Y.Z")
    which.add_argument("--all", action="store_true", help="every supported release")
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a catalogue differs from what is committed",
    )
    args = parser.parse_args(argv)
    versions = list(build_env.SUPPORTED_VERSIONS) if args.all else list(args.versions)
    unknown = [v for v in versions if v not in build_env.SUPPORTED_VERSIONS]
    if unknown:
        parser.error(
            f"unsupported vLLM version(s) {' '.join(unknown)}; supported: {' '.join(build_env.SUPPORTED_VERSIONS)}"
        )
    stale: list[str] = []
    try:
        for version in versions:
            start = time.monotonic()
            env = build_env.ensure(version)
            catalogue, values = fetch_catalogue(env)
            path = catalogue_path(version)
            same = _update(path, render(catalogue), check=args.check, stale=stale)
            same_values = _update(values_path(version), render(values), check=args.check, stale=stale)
            build_env.log(
                f"vllm {version}: {len(catalogue)} options{' (unchanged)' if same else ''}, "
                f"{len(values['options'])} constrained{' (unchanged)' if same_values else ''}"
                f" in {time.monotonic() - start:.1f} s -> {path.relative_to(REPO_ROOT)}"
            )
    except build_env.BuildError as exc:
        build_env.log(f"ERROR: {exc}")
        return 1
    if stale:
        build_env.log("out of date: " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
