"""`check` output: golden text for the canonical conflicts, and the json / github / sarif formats."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.test_sarif import assert_valid_sarif

GOLDEN = Path(__file__).resolve().parent / "golden"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PROFILEKIT_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("stack", ["nemotron-replayssm+disaggregated", "nemotron-replayssm+offload"])
def test_check_text_of_replayssm_with_a_kv_connector(run: Run, stack: str) -> None:
    """The rule, both files with line numbers, both values, vLLM's message and the fix, in one reading."""
    result = run("check", stack, cwd=REPO_ROOT)
    assert result.code == 1, result
    assert result.err == ""
    _golden(f"check-{stack.replace('/', '_')}.txt", result.out)
    assert '"--use-replayssm is incompatible with KV connectors (P/D disaggregation, KV cache offload)"' in result.out


def test_check_json_contract(run: Run) -> None:
    result = run("check", "nemotron-replayssm+offload", "--format", "json", cwd=REPO_ROOT)
    assert result.code == 1, result
    data = json.loads(result.out)
    assert data["vllm_version"] == "0.33.0"
    assert data["summary"] == {"errors": 2, "warnings": 0, "ignored": 0, "ignored_by_rule": {}}
    kv = next(f for f in data["findings"] if f["rule"] == "replayssm-kv-connector")
    assert kv == {
        "rule": "replayssm-kv-connector",
        "severity": "error",
        "message": 'use_replayssm = true with the OffloadingConnector (kv_role "kv_both") that kv_offloading_size = '
        '16 creates; vLLM 0.33.0 refuses to start: "--use-replayssm is incompatible with KV connectors (P/D '
        'disaggregation, KV cache offload)"',
        "stack": "nemotron-replayssm+offload",
        "role": "serve",
        "locations": [
            {
                "file": "profiles/replayssm.toml",
                "line": 9,
                "column": 1,
                "key": "serve.use_replayssm",
                "layer": "replayssm",
            },
            {
                "file": "profiles/offload.toml",
                "line": 7,
                "column": 1,
                "key": "serve.kv_offloading_size",
                "layer": "offload",
            },
            {
                "file": "profiles/offload.toml",
                "line": 8,
                "column": 1,
                "key": "serve.kv_offloading_backend",
                "layer": "offload",
            },
        ],
        "fix": "ReplaySSM and KV connectors cannot share a vLLM instance: remove the connector from this role "
        "(serve.kv_offloading_size), or turn use_replayssm off",
    }


def test_check_json_of_a_clean_stack(run: Run) -> None:
    result = run("check", "nemotron-replayssm", "--format", "json", cwd=REPO_ROOT)
    assert result.code == 0, result
    assert json.loads(result.out) == {
        "vllm_version": "0.33.0",
        "findings": [],
        "summary": {"errors": 0, "warnings": 0, "ignored": 0, "ignored_by_rule": {}},
    }


def test_check_github_workflow_commands(run: Run) -> None:
    result = run("check", "nemotron-replayssm+offload", "--format", "github", cwd=REPO_ROOT)
    assert result.code == 1, result
    lines = result.out.splitlines()
    assert len(lines) == 2
    assert lines[1] == (
        "::error file=profiles/replayssm.toml,line=9,col=1,title=replayssm-kv-connector::use_replayssm = true with the "
        'OffloadingConnector (kv_role "kv_both") that kv_offloading_size = 16 creates; vLLM 0.33.0 refuses to start: '
        '"--use-replayssm is incompatible with KV connectors (P/D disaggregation, KV cache offload)"'
        "%0Ain stack nemotron-replayssm+offload, role serve"
        "%0Aalso profiles/offload.toml:7:1: serve.kv_offloading_size (layer offload)"
        "%0Aalso profiles/offload.toml:8:1: serve.kv_offloading_backend (layer offload)"
        "%0Afix: ReplaySSM and KV connectors cannot share a vLLM instance: remove the connector from this role "
        "(serve.kv_offloading_size), or turn use_replayssm off"
    )


def _assert_sarif_2_1_0(log: dict[str, object]) -> None:
    """Valid by the SARIF 2.1.0 schema (tests/data/sarif), and the essentials code-scanning consumers rely on."""
    assert_valid_sarif(log)
    assert log["version"] == "2.1.0"
    assert str(log["$schema"]).endswith("sarif-2.1.0.json")
    runs = log["runs"]
    assert isinstance(runs, list) and len(runs) == 1
    run = runs[0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "profilekit"
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for rule in driver["rules"]:
        assert set(rule) >= {"id", "shortDescription"}
        assert isinstance(rule["shortDescription"]["text"], str)
    for result in run["results"]:
        assert result["ruleId"] in rule_ids
        assert result["level"] in ("none", "note", "warning", "error")
        assert isinstance(result["message"]["text"], str) and result["message"]["text"]
        for loc in [*result["locations"], *result.get("relatedLocations", [])]:
            physical = loc["physicalLocation"]
            assert not physical["artifactLocation"]["uri"].startswith("/")
            region = physical["region"]
            assert region["startLine"] >= 1 and region["startColumn"] >= 1
        for i, related in enumerate(result.get("relatedLocations", []), 1):
            assert related["id"] == i


def test_check_sarif_structure(run: Run) -> None:
    result = run("check", "nemotron-replayssm+disaggregated", "--format", "sarif", cwd=REPO_ROOT)
    assert result.code == 1, result
    log = json.loads(result.out)
    _assert_sarif_2_1_0(log)
    results = log["runs"][0]["results"]
    kv = [r for r in results if r["ruleId"] == "replayssm-kv-connector"]
    assert len(kv) == 1  # prefill and decode fail at one place: one result that names both roles
    assert kv[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "profiles/replayssm.toml"
    related = [
        (r["physicalLocation"]["artifactLocation"]["uri"], r["logicalLocations"][0]["fullyQualifiedName"])
        for r in kv[0]["relatedLocations"]
    ]
    assert related == [
        ("profiles/disaggregated.toml", f"roles.{role}.serve.kv_transfer_config.{key}")
        for role in ("decode", "prefill")
        for key in ("kv_connector", "kv_role")
    ]
    assert kv[0]["properties"]["roles"] == ["decode", "prefill"]


def test_check_strict_fails_on_warnings(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "s.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\nkv_offloading_size = 4\n'
            '[serve.kv_transfer_config]\nkv_connector = "NixlConnector"\nkv_role = "kv_producer"\n'
        }
    )
    assert run("check", "s", cwd=root).code == 0
    strict = run("check", "s", "--strict", cwd=root)
    assert strict.code == 1
    assert strict.out.splitlines()[-1] == "0 errors, 1 warning"


def test_render_refuses_a_stack_with_rule_errors(run: Run, tmp_path: Path) -> None:
    result = run("render", "nemotron-replayssm+offload", "--out", tmp_path / "out", cwd=REPO_ROOT)
    assert result.code == 1
    assert not (tmp_path / "out").exists()
    assert "replayssm-kv-connector" in result.out
    assert result.err == "nothing rendered: nemotron-replayssm+offload has errors\n"


def test_check_an_unknown_format_is_a_usage_error(run: Run) -> None:
    result = run("check", "nemotron-replayssm", "--format", "xml", cwd=REPO_ROOT)
    assert result.code == 2
    assert (
        result.err
        == "profilekit: error: unknown format 'xml'\n  hint: choose one of: text, json, github, sarif, markdown\n"
    )
