"""`--format sarif` as code scanning reads it: valid against the SARIF 2.1.0 schema (tests/data/sarif, checked with
jsonschema, formats too), each rule described with a help link to the section of docs/RULES.md that lists it
(anchors as GitHub makes them, by mdit-py-plugins), one result per rule and location, and fingerprints that
survive a second run and lines moving."""

from __future__ import annotations

import json
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin

from profilekit import __version__
from profilekit.report.formats import PROJECT_URL, rule_descriptor
from profilekit.rules import RULES
from profilekit.rules.documented import OTHER_CHECKS
from tests.conftest import REPO_ROOT, MakeRepo, Run

SCHEMA = Path(__file__).resolve().parent / "data" / "sarif" / "sarif-schema-2.1.0.json"
RULES_MD = REPO_ROOT / "docs" / "RULES.md"


@cache
def _validator() -> Any:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=jsonschema.FormatChecker())


def assert_valid_sarif(log: object) -> None:
    """`log` is a SARIF 2.1.0 log by the OASIS schema, every `format` (uri, uri-reference) checked."""
    errors = sorted(_validator().iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def _sarif(run: Run, *args: str | Path, cwd: Path) -> dict[str, Any]:
    result = run(*args, "--format", "sarif", cwd=cwd)
    assert result.code in (0, 1), result
    assert result.err == ""
    log: dict[str, Any] = json.loads(result.out)
    assert_valid_sarif(log)
    return log


def _results(log: dict[str, Any]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = log["runs"][0]["results"]
    return results


def _uri(result: dict[str, Any]) -> str:
    uri: str = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    return uri


NEMO = """
[model]
architecture = "NemotronHForCausalLM"

[serve]
model = "nvidia/Nemotron-H-8B-Base-8K"
"""
# abstract: reached only through the stacks that extend it
REPLAY = """
[layer]
abstract = true
extends = ["nemo"]

[serve]
use_replayssm = true

[env]
VLLM_USE_V2_MODEL_RUNNER = "0"
"""


def _failing(make_repo: MakeRepo) -> Path:
    """A repository with a fault in a shared layer that two stacks reach (with different values), a syntax
    error, an unknown option, and a layer file whose name needs percent-encoding in a URI."""
    return make_repo(
        {
            "nemo.toml": NEMO,
            "replay.toml": REPLAY,
            "small.toml": '[layer]\nextends = ["replay"]\n\n[serve]\nkv_offloading_size = 8\n',
            "large.toml": '[layer]\nextends = ["replay"]\n\n[serve]\nkv_offloading_size = 16\n',
            "broken.toml": "[serve\n",
            "my layer.toml": '[layer]\nextends = ["nemo"]\n\n[serve]\nmax_num_seq = 4\n',
        },
        config='[vllm]\nversion = "0.33.0"\n\n[lint]\ncombinations = "none"\n',
    )


# ---- the schema ---------------------------------------------------------------------------------


def test_lint_of_the_example_repository_and_of_a_failing_one_is_valid_sarif(make_repo: MakeRepo, run: Run) -> None:
    clean = _sarif(run, "lint", cwd=REPO_ROOT)
    assert _results(clean) == []
    failing = _sarif(run, "lint", cwd=_failing(make_repo))
    rules = {r["ruleId"] for r in _results(failing)}
    assert rules >= {"toml-syntax", "unknown-option", "replayssm-kv-connector"}, rules
    # a file name with a space is a percent-encoded URI reference (the schema's format check holds it)
    assert "profiles/my%20layer.toml" in {_uri(r) for r in _results(failing)}


def test_check_of_a_failing_example_stack_is_valid_sarif(run: Run) -> None:
    log = _sarif(run, "check", "nemotron-replayssm+disaggregated", cwd=REPO_ROOT)
    assert {r["ruleId"] for r in _results(log)} >= {"replayssm-kv-connector", "declared-conflict"}


def test_the_schema_check_catches_what_code_scanning_refuses(make_repo: MakeRepo, run: Run) -> None:
    """The validator is no formality: a level SARIF does not have, or a source's label as a URI, fails it."""
    log = json.loads(run("lint", "--format", "sarif", cwd=_failing(make_repo)).out)
    bad_level = json.loads(json.dumps(log))
    bad_level["runs"][0]["results"][0]["level"] = "fatal"
    bad_uri = json.loads(json.dumps(log))
    bad_uri["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = (
        "platform@3f2a9c1:profiles/base.toml"
    )
    for bad in (bad_level, bad_uri):
        assert list(_validator().iter_errors(bad)), bad


# ---- rules: descriptions and help links -----------------------------------------------------------


def _sections() -> dict[str, str]:
    """docs/RULES.md's sections by the anchor GitHub gives their heading: anchor -> the section's text."""
    text = RULES_MD.read_text(encoding="utf-8")
    lines = text.splitlines()
    md = MarkdownIt("commonmark").enable("table").use(anchors_plugin, min_level=1, max_level=6)
    heads = [(t.attrs["id"], t.map[0]) for t in md.parse(text) if t.type == "heading_open" and t.map]
    sections: dict[str, str] = {}
    for index, (anchor, start) in enumerate(heads):
        end = heads[index + 1][1] if index + 1 < len(heads) else len(lines)
        sections[str(anchor)] = "\n".join(lines[start:end])
    return sections


def test_every_rule_links_to_the_section_of_rules_md_that_lists_it() -> None:
    sections = _sections()
    base = f"{PROJECT_URL}/blob/v{__version__}/docs/RULES.md#"
    ids = [*RULES, *(row[0] for row in OTHER_CHECKS)]
    assert len(ids) > 150
    for rule_id in ids:
        descriptor = rule_descriptor(rule_id)
        assert descriptor["id"] == rule_id
        url = descriptor["helpUri"]
        assert url.startswith(base), url
        anchor = url.removeprefix(base)
        assert anchor in sections, f"{rule_id}: RULES.md has no heading #{anchor}"
        # the section is the one whose table lists the rule, on a row of its own
        assert f"\n| `{rule_id}` | " in sections[anchor], f"{rule_id}: not listed under #{anchor}"
        short = descriptor["shortDescription"]["text"]
        assert short and short != rule_id and "](" not in short, (rule_id, short)
        assert descriptor["fullDescription"]["text"].startswith(short), rule_id
        assert descriptor["defaultConfiguration"]["level"] in ("error", "warning")


def test_the_rules_of_a_run_are_described_and_indexed(make_repo: MakeRepo, run: Run) -> None:
    log = _sarif(run, "lint", cwd=_failing(make_repo))
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert sorted(ids) == sorted({r["ruleId"] for r in _results(log)})  # each rule of a result, once
    for result in _results(log):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    syntax = rules[ids.index("toml-syntax")]
    assert syntax["shortDescription"] == {"text": "a layer or profilekit.toml is not valid TOML"}
    assert syntax["helpUri"] == (
        f"https://github.com/profilekit/profilekit/blob/v{__version__}/docs/RULES.md#checks-outside-the-rule-engine"
    )
    kv = rules[ids.index("replayssm-kv-connector")]
    assert kv["helpUri"].endswith("/docs/RULES.md#replayssm-rulesreplayssmpy")
    assert kv["fullDescription"]["text"] == (
        "use_replayssm with an active KV connector, explicit or implied. Severity: error; vLLM releases: all; "
        "vLLM source: vllm/config/vllm.py VllmConfig.validate_mamba_cached_kernel. Listed in docs/RULES.md, "
        'section "ReplaySSM (rules/replayssm.py)".'
    )


def test_the_project_url_is_pyprojects(run: Run) -> None:
    urls = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert urls["Homepage"] == PROJECT_URL
    driver = _sarif(run, "lint", cwd=REPO_ROOT)["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == PROJECT_URL
    assert driver["version"] == __version__


# ---- one result per rule and location ------------------------------------------------------------


def test_a_fault_two_stacks_reach_is_one_result_naming_both(make_repo: MakeRepo, run: Run) -> None:
    root = _failing(make_repo)
    text = run("lint", cwd=root).out
    # the text report has one finding per stack at the shared layer's line
    assert text.count("profiles/replay.toml:6:1: error replayssm-kv-connector ") == 2, text
    kv = [r for r in _results(_sarif(run, "lint", cwd=root)) if r["ruleId"] == "replayssm-kv-connector"]
    assert len(kv) == 1, kv
    (result,) = kv
    assert _uri(result) == "profiles/replay.toml"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 6, "startColumn": 1}
    assert result["properties"] == {"stacks": ["large", "small"], "roles": ["serve"]}
    lines = result["message"]["text"].splitlines()
    assert lines[0].startswith("stack large, role serve: use_replayssm = true with the OffloadingConnector")
    assert "kv_offloading_size = 16 creates" in lines[0]
    assert lines[1].startswith("stack small, role serve: use_replayssm = true with the OffloadingConnector")
    assert "kv_offloading_size = 8 creates" in lines[1]
    assert lines[2] == "in stacks large, small; role serve"
    assert lines[3].startswith("fix: ReplaySSM and KV connectors cannot share a vLLM instance")
    related = [
        (loc["physicalLocation"]["artifactLocation"]["uri"], loc["physicalLocation"]["region"]["startLine"])
        for loc in result["relatedLocations"]
    ]
    assert ("profiles/large.toml", 5) in related and ("profiles/small.toml", 5) in related
    assert [loc["id"] for loc in result["relatedLocations"]] == list(range(1, len(related) + 1))


def test_roles_of_one_stack_at_one_place_are_one_result(run: Run) -> None:
    log = _sarif(run, "check", "nemotron-replayssm+disaggregated", cwd=REPO_ROOT)
    kv = [r for r in _results(log) if r["ruleId"] == "replayssm-kv-connector"]
    assert len(kv) == 1, kv
    assert kv[0]["properties"] == {"stacks": ["nemotron-replayssm+disaggregated"], "roles": ["decode", "prefill"]}
    # a result says what the text report says under the finding: the notes, then the fix
    (declared,) = [r for r in _results(log) if r["ruleId"] == "declared-conflict"]
    assert declared["message"]["text"].splitlines()[1:] == [
        "in stack nemotron-replayssm+disaggregated",
        "@kv-connector counts every active connector, including the one kv_offloading_size creates",
        "fix: remove what brings @kv-connector (see the locations above), or leave 'replayssm' out of the stack",
    ]
    places = [(r["ruleId"], json.dumps(r["locations"], sort_keys=True)) for r in _results(log)]
    assert len(places) == len(set(places))  # no rule twice at one location


# ---- fingerprints -------------------------------------------------------------------------------


def _fingerprints(log: dict[str, Any]) -> dict[tuple[str, str, str], tuple[str, int]]:
    """(rule, file, key) -> (fingerprint, line) of every result."""
    out: dict[tuple[str, str, str], tuple[str, int]] = {}
    for result in _results(log):
        loc = result["locations"][0]
        key = loc.get("logicalLocations", [{}])[0].get("fullyQualifiedName", "")
        line = loc["physicalLocation"]["region"]["startLine"]
        out[(result["ruleId"], _uri(result), key)] = (result["partialFingerprints"]["ruleFileKey/v1"], line)
    return out


def test_fingerprints_hold_across_runs_and_lines_moving(make_repo: MakeRepo, run: Run) -> None:
    root = _failing(make_repo)
    first = _fingerprints(_sarif(run, "lint", cwd=root))
    assert _fingerprints(_sarif(run, "--no-cache", "lint", cwd=root)) == first
    prints = [fp for fp, _line in first.values()]
    assert len(prints) == len(set(prints)), first  # each result its own

    layer = root / "profiles" / "my layer.toml"
    layer.write_text("# moved down by a comment\n\n" + layer.read_text(encoding="utf-8"), encoding="utf-8")
    moved = _fingerprints(_sarif(run, "lint", cwd=root))
    where = ("unknown-option", "profiles/my%20layer.toml", "serve.max_num_seq")
    assert moved[where][1] == first[where][1] + 2  # the line moved ...
    assert moved[where][0] == first[where][0]  # ... the fingerprint did not
    assert moved == {k: (fp, line + 2 if k == where else line) for k, (fp, line) in first.items()}

    # another key at the same place is another finding
    layer.write_text(layer.read_text(encoding="utf-8").replace("max_num_seq ", "max_num_sek "), encoding="utf-8")
    other = _fingerprints(_sarif(run, "lint", cwd=root))
    renamed = ("unknown-option", "profiles/my%20layer.toml", "serve.max_num_sek")
    assert where not in other and other[renamed][0] != first[where][0]
