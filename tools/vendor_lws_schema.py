"""Writes tests/data/k8s/leaderworkerset-v1.schema.json: the `v1` version's `schema.openAPIV3Schema` of the
LeaderWorkerSet CRD (kubernetes-sigs/lws, config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml),
with every `description` removed and nothing else changed. Test data only: profilekit never reads it.

    python3 tools/vendor_lws_schema.py --git-dir /path/to/lws/.git --rev v0.10.0 [--check]
    python3 tools/vendor_lws_schema.py --crd leaderworkerset.x-k8s.io_leaderworkersets.yaml [--check]

`--check` writes nothing and fails when the vendored file differs from what the source gives.
tests/data/k8s/SOURCE.md records the tag, commit and path it was made from.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parent.parent / "tests/data/k8s/leaderworkerset-v1.schema.json"
CRD_PATH = "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
CRD_NAME = "leaderworkersets.leaderworkerset.x-k8s.io"
VERSION = "v1"

# keywords whose value maps names to schemas (so a field called `description` there is a field, not a keyword)
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions")


def strip_descriptions(schema: Any) -> Any:
    """`schema` without the `description` keyword anywhere; property names are kept whatever they are."""
    if isinstance(schema, list):
        return [strip_descriptions(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: strip_descriptions(sub) for name, sub in value.items()}
        else:
            out[key] = strip_descriptions(value)
    return out


def openapi_schema(crd: dict[str, Any]) -> dict[str, Any]:
    """The `openAPIV3Schema` of the CRD's `v1` version."""
    if crd.get("kind") != "CustomResourceDefinition" or crd.get("metadata", {}).get("name") != CRD_NAME:
        raise SystemExit(f"not the {CRD_NAME} CustomResourceDefinition")
    for version in crd["spec"]["versions"]:
        if version["name"] == VERSION:
            schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            return schema
    raise SystemExit(f"the CRD has no {VERSION} version")


def render(crd_text: str) -> str:
    schema = strip_descriptions(openapi_schema(yaml.safe_load(crd_text)))
    return json.dumps(schema, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--git-dir", type=Path, help="a clone (bare is fine) of kubernetes-sigs/lws")
    source.add_argument("--crd", type=Path, help="the CRD's YAML file")
    parser.add_argument("--rev", default="v0.10.0", help="the tag or commit to read with --git-dir")
    parser.add_argument("--check", action="store_true", help="compare with the vendored file, write nothing")
    args = parser.parse_args()
    if args.crd is not None:
        crd_text = args.crd.read_text(encoding="utf-8")
    else:
        crd_text = subprocess.run(
            ["git", f"--git-dir={args.git_dir}", "show", f"{args.rev}:{CRD_PATH}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    text = render(crd_text)
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} differs from the CRD given", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
