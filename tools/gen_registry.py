#!/usr/bin/env python3
"""Regenerate what each vLLM release's model registry says about every architecture, shipped as package data.

For each release, ``tools/oracle/registry_dump.py`` runs in the release's oracle environment
(``tools/oracle/build_env.py``, built if missing) and records vLLM's own ``_ModelInfo`` of every registered
model class; this script keeps the facts profilekit's rules read and writes
``src/profilekit/vllm/catalogues/registry-<X>.json`` (loaded by ``profilekit.vllm.registry``).

Usage::

    python3 tools/gen_registry.py --all
    python3 tools/gen_registry.py --versions 0.33.0
    python3 tools/gen_registry.py --all --check   # fail if a file would change
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "oracle"))

import build_env  # noqa: E402

REPO_ROOT = HERE.parent
CATALOGUE_DIR = REPO_ROOT / "src" / "profilekit" / "vllm" / "catalogues"
DUMP = HERE / "oracle" / "registry_dump.py"
# the `_ModelInfo` flags the rules read (a release without a flag has no list for it)
FLAGS = (
    "is_text_generation_model",
    "is_pooling_model",
    "supports_multimodal",
    "supports_hc_sp",
)


def registry_facts(version: str) -> dict[str, Any]:
    env = build_env.ensure(version)
    with tempfile.TemporaryDirectory(prefix="profilekit-registry-") as tmp:
        out = Path(tmp) / "registry.json"
        result = subprocess.run(
            [str(env.python), str(DUMP), str(out)],
            env=env.worker_environ(),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 or not out.is_file():
            tail = "\n".join(result.stderr.strip().splitlines()[-20:])
            raise SystemExit(f"registry dump of vllm {version} failed (exit {result.returncode}):\n{tail}")
        raw = json.loads(out.read_text(encoding="utf-8"))
    infos: dict[str, dict[str, Any]] = raw["architectures"]
    present = [flag for flag in FLAGS if any(flag in info for info in infos.values())]
    return {
        "generator": "tools/gen_registry.py",
        "release": version,
        "source": "vllm/model_executor/models/registry.py: _ModelInfo.from_model_cls of every registered class",
        "architectures": sorted(infos),
        "flags": {flag: sorted(a for a, info in infos.items() if info.get(flag) is True) for flag in present},
        # `_ModelInfo.architecture`, the class's own name, where vLLM's messages show it and it is not the key
        "class_names": {a: info["architecture"] for a, info in sorted(infos.items()) if info["architecture"] != a},
        "video_pruning_methods": {
            a: list(info["supported_video_pruning_methods"])
            for a, info in sorted(infos.items())
            if info.get("supported_video_pruning_methods")
        },
        "not_inspected": dict(sorted(raw["not_inspected"].items())),
    }


def path_of(version: str) -> Path:
    return CATALOGUE_DIR / f"registry-{version}.json"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--versions", nargs="+", metavar="X.Y.Z")
    which.add_argument("--all", action="store_true", help="every supported release")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file would change")
    args = parser.parse_args(argv)
    versions = list(build_env.SUPPORTED_VERSIONS) if args.all else list(args.versions)
    stale = []
    for version in versions:
        text = json.dumps(registry_facts(version), indent=0, sort_keys=False) + "\n"
        path = path_of(version)
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO_ROOT)}")
    if args.check and stale:
        for path in stale:
            print(
                f"{path.relative_to(REPO_ROOT)} is out of date: run python3 tools/gen_registry.py --all",
                file=sys.stderr,
            )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
