#!/usr/bin/env python3
"""Regenerate the environment-variable lists of each vLLM release shipped as package data (stdlib only).

vLLM knows an environment variable when it is a key of the `environment_variables` dict in the
release's `vllm/envs.py`; at start-up it warns about (or, with `--fail-on-environ-validation`, refuses)
any `VLLM_*` variable that is not one (`validate_environ`). This script reads that dict's keys with
`ast` from each release's oracle copy (``tools/oracle/build_env.py``: the Python sources of the
release's wheel, built if missing) and writes ``src/profilekit/vllm/catalogues/envs-<X>.json``.

Usage::

    python3 tools/gen_envs.py --all
    python3 tools/gen_envs.py --versions 0.33.0
    python3 tools/gen_envs.py --all --check   # fail if a file would change
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "oracle"))

import build_env  # noqa: E402

REPO_ROOT = HERE.parent
CATALOGUE_DIR = REPO_ROOT / "src" / "profilekit" / "vllm" / "catalogues"
SOURCE = "vllm/envs.py: keys of environment_variables"


RENAMED_PATH = CATALOGUE_DIR / "envs-renamed.json"

# Renames found by reading consecutive releases' envs.py side by side (the new entry's comment describes
# the old one's job); main() checks that each old name leaves, and each new name arrives, in `release`.
RENAMES: list[dict[str, str]] = [
    # 0.31.0 generalised the Kimi-K3 GEMM-RS fusion to other models
    {"old": "VLLM_KIMI_K3_GEMM_RS", "new": "VLLM_ENABLE_GEMM_RS", "release": "0.31.0"},
    # 0.31.0 turned the a8w4 switch into a choice of activation dtype
    {
        "old": "VLLM_ROCM_USE_AITER_MOE_SITUV2_A8W4",
        "new": "VLLM_ROCM_USE_AITER_MOE_SITUV2",
        "release": "0.31.0",
        "value": "a8w4",
    },
]


def envs_path(version: str) -> Path:
    return CATALOGUE_DIR / f"envs-{version}.json"


def environment_variables(source: str) -> list[str]:
    """The keys of the module-level `environment_variables` dict literal, in source order."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        else:
            continue
        if name != "environment_variables":
            continue
        if not isinstance(value, ast.Dict):
            raise build_env.BuildError("environment_variables is not a dict literal")
        keys: list[str] = []
        for key in value.keys:
            if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
                raise build_env.BuildError(
                    f"environment_variables has a key that is not a string (line {value.lineno})"
                )
            keys.append(key.value)
        return keys
    raise build_env.BuildError("no environment_variables dict in vllm/envs.py")


def envs_source(version: str) -> str:
    path = build_env.vllm_copy_dir(version) / "vllm" / "envs.py"
    if not path.is_file():
        build_env.ensure(version)
    return path.read_text(encoding="utf-8")


def renamed(lists: dict[str, list[str]]) -> list[dict[str, str]]:
    """Variables a release renamed (RENAMES, checked) or replaced by a `vllm serve` option (found in its catalogue)."""
    versions = list(build_env.SUPPORTED_VERSIONS)
    moves: list[dict[str, str]] = []
    for entry in RENAMES:
        after = versions.index(entry["release"])
        before, now = set(lists[versions[after - 1]]), set(lists[entry["release"]])
        if not (entry["old"] in before - now and entry["new"] in now - before):
            raise build_env.BuildError(
                f"RENAMES entry {entry} does not match the lists of {versions[after - 1]} and {entry['release']}"
            )
        moves.append(dict(entry))
    for previous, release in itertools.pairwise(versions):
        catalogue = json.loads((CATALOGUE_DIR / f"vllm-{release}.json").read_text(encoding="utf-8"))
        dests = {flag["dest"] for flag in catalogue if flag.get("option_strings")}
        for name in sorted(set(lists[previous]) - set(lists[release])):
            dest = name.removeprefix("VLLM_").lower()
            if name.startswith("VLLM_") and dest in dests:
                moves.append({"old": name, "option": dest, "release": release})
    return moves


def render(version: str, names: list[str]) -> str:
    data = {"vllm_version": version, "source": SOURCE, "names": names}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--versions", nargs="+", metavar="X.Y.Z")
    which.add_argument("--all", action="store_true", help="every supported release")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a list differs")
    args = parser.parse_args(argv)
    versions = list(build_env.SUPPORTED_VERSIONS) if args.all else list(args.versions)
    unknown = [v for v in versions if v not in build_env.SUPPORTED_VERSIONS]
    if unknown:
        parser.error(
            f"unsupported vLLM version(s) {' '.join(unknown)}; supported: {' '.join(build_env.SUPPORTED_VERSIONS)}"
        )
    stale: list[str] = []
    try:
        outputs: dict[Path, str] = {}
        lists: dict[str, list[str]] = {}
        for version in build_env.SUPPORTED_VERSIONS:
            if version in versions:
                lists[version] = environment_variables(envs_source(version))
                outputs[envs_path(version)] = render(version, lists[version])
            else:
                lists[version] = json.loads(envs_path(version).read_text(encoding="utf-8"))["names"]
        outputs[RENAMED_PATH] = json.dumps(renamed(lists), indent=1, ensure_ascii=False) + "\n"
        for path, text in outputs.items():
            current = path.read_text(encoding="utf-8") if path.exists() else None
            if args.check:
                if current != text:
                    stale.append(str(path.relative_to(REPO_ROOT)))
            elif current != text:
                path.write_text(text, encoding="utf-8")
            unchanged = " (unchanged)" if current == text else ""
            build_env.log(f"{path.relative_to(REPO_ROOT)}{unchanged}")
    except (build_env.BuildError, OSError, SyntaxError) as exc:
        build_env.log(f"ERROR: {exc}")
        return 1
    if stale:
        build_env.log("out of date: " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
