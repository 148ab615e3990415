#!/usr/bin/env python3
"""Write docs/vllm-raises.md and docs/vllm-raises.json: every `raise` vLLM's config start-up can reach, classified.

For each supported release, `raise_walk.py` walks the release's Python sources (the oracle copy that
`tools/oracle/build_env.py` builds or reuses) from `EngineArgs.create_engine_config()` and the config classes'
validators; the same check (function + normalised message) across releases is one row. `raise_classes.py`
classifies each row; a row no pattern matches stops the tool, so the inventory is always fully classified.

python3 tools/raise_inventory.py            # write both files
python3 tools/raise_inventory.py --check    # exit 1 if a committed file would change
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "oracle"))
sys.path.insert(0, str(HERE))

import build_env  # noqa: E402
import raise_classes  # noqa: E402
import raise_walk  # noqa: E402
import verdict_corpus  # noqa: E402

REPO = HERE.parent
DOCS = REPO / "docs"
JSON_PATH = DOCS / "vllm-raises.json"
MD_PATH = DOCS / "vllm-raises.md"
CLASSES = ("modelled", "to-model", "needs-config-json", "gpu-or-platform", "out-of-scope")
CLI_MODULE = "vllm/entrypoints/*/cli_args.py"


def row_id(function: str, normalised: str) -> str:
    return f"{function}/{hashlib.sha1(normalised.encode()).hexdigest()[:8]}"


def module_name(rel: str) -> str:
    """The module a row is filed under; the serve CLI module moved between releases."""
    return CLI_MODULE if rel in raise_walk.CLI_MODULES else rel


def collect(versions: Sequence[str]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for version in versions:
        source = build_env.ensure(version).vllm_copy
        for found in raise_walk.walk(source):
            rid = row_id(found.function, found.normalised)
            row = rows.setdefault(
                rid,
                {"id": rid, "function": found.function, "normalised": found.normalised, "releases": [], "where": {}},
            )
            # the newest release's spelling wins for the fields that are shown once
            row.update(module=module_name(found.module), exception=found.exception, message=found.template)
            row["root"] = found.root
            if version not in row["releases"]:
                row["releases"].append(version)
            where = f"{found.module}:{found.line}"
            row["where"][version] = f"{row['where'][version]}, {where}" if version in row["where"] else where
    out = sorted(rows.values(), key=lambda r: (r["module"], r["function"], r["normalised"]))
    unmatched = []
    for row in out:
        verdict = raise_classes.classify(row["function"], row["normalised"])
        if verdict is None:
            unmatched.append(row)
            continue
        row["class"], row["detail"] = verdict
    if unmatched:
        lines = "\n".join(f"  {r['function']}: {r['normalised']}" for r in unmatched)
        raise SystemExit(f"{len(unmatched)} raise(s) match no pattern of tools/raise_classes.py:\n{lines}")
    return out


def hints(rows: list[dict[str, Any]]) -> list[str]:
    """Rows whose class disagrees with the rule `verdict_corpus.MESSAGE_RULES` gives their message.

    Those patterns match vLLM's rendered messages loosely (they are applied to messages of a known failing case),
    so a disagreement is a prompt to look, not an error: a new rule usually shows up here first.
    """
    out = []
    for row in rows:
        claimed = verdict_corpus.rule_for_message(row["normalised"])
        if claimed and claimed not in {"unknown-option", "invalid-value"} and row["class"] != f"modelled:{claimed}":
            out.append(f"{row['id']} is {row['class']}; MESSAGE_RULES says {claimed}: {row['normalised'][:80]}")
    return out


def class_of(row: dict[str, Any]) -> str:
    return str(row["class"]).split(":", 1)[0]


def counts(rows: list[dict[str, Any]], versions: Sequence[str]) -> dict[str, dict[str, int]]:
    table = {}
    for version in versions:
        present = [r for r in rows if version in r["releases"]]
        table[version] = {c: sum(1 for r in present if class_of(r) == c) for c in CLASSES} | {"total": len(present)}
    return table


def span(releases: list[str], versions: Sequence[str]) -> str:
    """`all`, or the releases as ranges of consecutive supported releases: `0.29.0–0.33.0`."""
    if list(releases) == list(versions):
        return "all"
    runs: list[list[str]] = []
    for version in versions:
        if version in releases:
            if runs and versions.index(runs[-1][-1]) == versions.index(version) - 1:
                runs[-1].append(version)
            else:
                runs.append([version])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}–{run[-1]}" for run in runs)


def _cell(text: str) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return f"`{text}`" if "`" not in text else text


HEADER = """\
# Every `raise` of vLLM's config start-up, per release

Generated by `tools/raise_inventory.py` from the Python sources of each supported release (the oracle copies,
`tools/oracle/build_env.py`); do not edit by hand. `docs/vllm-raises.json` holds the same rows.

**What is walked.** `EngineArgs.create_engine_config` (vllm/engine/arg_utils.py), `validate_parsed_serve_args`
(the serve CLI module), `CudaPlatformBase.check_and_update_config` (vllm/platforms/cuda.py), and for every class
under vllm/config/ its `__post_init__`, its `model_validator` / `field_validator` methods and its `verify_*` /
`_verify_*` methods. From there the walk follows calls into vllm/config/, arg_utils.py, the CLI module and the CUDA
platform: `self.x()`, `cls.x()`, `super().x()`, module functions and imported names, `XConfig.y()`, and `obj.y()`
when `obj`'s class is known from a parameter annotation, a dataclass field annotation, a constructor call or a
return annotation. Reading a `@property` of a known class, calling a class (its `__init__` / `__post_init__`) and
passing a function as an argument count as calls. Every `raise` in a reached function is listed except bare
re-raises; a message is the string or f-string given to the exception, `{...}` holes showing the expression (a
message held in a variable is its last assignment before the `raise`).

**Over-approximation.** Every branch counts (a `raise` behind a condition that never holds at start-up is listed),
all `verify_*` methods are roots whether or not vLLM calls them at start-up, a function passed as an argument is
assumed called, and variable types are flow-insensitive (the last assignment wins).

**Under-approximation.** Calls leaving those modules are not followed (`vllm.transformers_utils` loading the model's
configuration, the attention-backend selectors, `vllm.platforms.current_platform.*` other than the CUDA hook,
model classes, tokenizers, the LoRA, quantization and KV-connector registries), nor calls through values whose class
the walk cannot name (`getattr`, containers, untyped locals). Pydantic field constraints (`gt`, `ge`, `Literal`) are
not `raise`s and are inventoried with the flag catalogues instead (issue 8, item 1); `assert`s are not listed.
`validate_api_server_args` (tool-call and reasoning parsers, run by the API server after these checks) is not a root.

**Rows.** One row is one check: the function plus its message with the holes emptied; the same check in several
releases is one row listing them. A reworded message is a new row. Counts are rows present in a release. `line` is
where the `raise` is in the newest release that has it; the JSON has `file:line` for every release.

**Classes** (the table in `tools/raise_classes.py`, first match wins; `tests/test_raise_inventory.py` checks every
rule id against `profilekit.rules.RULES`):

| class | meaning |
| --- | --- |
| `modelled:<rule>` | a profilekit rule makes the same check |
| `to-model` | decidable from the profile's options and environment alone; not modelled yet |
| `needs-config-json` | decidable from the options plus the model's `config.json`; not modelled yet |
| `gpu-or-platform` | depends on the GPU, the installed CUDA/torch/kernels or the host |
| `out-of-scope` | needs weights, a tokenizer, the network or files; an internal assertion; a test-only or runtime path |
"""


def markdown(rows: list[dict[str, Any]], versions: Sequence[str]) -> str:
    table = counts(rows, versions)
    out = [HEADER, "## Counts per release", "", "| release | " + " | ".join(CLASSES) + " | total |"]
    out.append("| --- " * (len(CLASSES) + 2) + "|")
    for version in versions:
        cells = [str(table[version][c]) for c in (*CLASSES, "total")]
        out.append(f"| {version} | " + " | ".join(cells) + " |")
    modules = sorted({r["module"] for r in rows})
    for module in modules:
        out += ["", f"## `{module}`", "", "| function | line | exception | message | releases | class | why |"]
        out.append("| --- | --- | --- | --- | --- | --- | --- |")
        for row in (r for r in rows if r["module"] == module):
            newest = row["where"][row["releases"][-1]]
            lines = ", ".join(place.rsplit(":", 1)[1] for place in newest.split(", "))
            out.append(
                f"| `{row['function']}` | {lines} | {row['exception']} "
                f"| {_cell(row['message']) if row['message'] else '—'} "
                f"| {span(row['releases'], versions)} | `{row['class']}` | {row['detail']} |"
            )
    return "\n".join(out) + "\n"


def document(rows: list[dict[str, Any]], versions: Sequence[str]) -> dict[str, Any]:
    return {
        "generator": "tools/raise_inventory.py",
        "releases": list(versions),
        "classes": list(CLASSES),
        "counts": counts(rows, versions),
        "rows": rows,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a committed file would change")
    args = parser.parse_args(argv)
    versions = list(build_env.SUPPORTED_VERSIONS)
    rows = collect(versions)
    texts = {
        JSON_PATH: json.dumps(document(rows, versions), indent=1, ensure_ascii=False) + "\n",
        MD_PATH: markdown(rows, versions),
    }
    stale = [path for path, text in texts.items() if not path.is_file() or path.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(REPO)} is out of date: run python3 tools/raise_inventory.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    for hint in hints(rows):
        print(f"hint: {hint}", file=sys.stderr)
    for version, figures in counts(rows, versions).items():
        print(version, " ".join(f"{c}={n}" for c, n in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
