"""`override-order`: a stack written general-last (`site/h100+qwen-offload`) loses the site's values to `base`, and
every command that composes it says so, with the order that keeps them (docs/FORMAT.md, "The order of a stack")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT, Run

SITE_FIRST = (
    "profiles/site/h100.toml:6:1: warning override-order serve.gpu_memory_utilization = 0.92 of 'site/h100' is "
    "overridden by 0.9 of 'base' (profiles/base.toml:8:1), which 'qwen-offload' extends (qwen-offload -> "
    "models/qwen3-0.6b -> base) and the stack names after 'site/h100'\n"
    "    in stack site/h100+qwen-offload\n"
    "    profiles/base.toml:8:1: serve.gpu_memory_utilization (layer base)\n"
    "    fix: write qwen-offload+site/h100 ('site/h100' then keeps 0.92, and no other value changes)\n"
)


def _findings(run: Run, root: Path, stack: str) -> list[dict[str, Any]]:
    result = run("--repo", root, "--no-cache", "check", stack, "--format", "json")
    assert result.code == 0, result
    found: list[dict[str, Any]] = json.loads(result.out)["findings"]
    return found


def _order_findings(run: Run, root: Path, stack: str) -> list[dict[str, Any]]:
    return [f for f in _findings(run, root, stack) if f["rule"] == "override-order"]


def _values(run: Run, root: Path, stack: str) -> dict[str, Any]:
    """Every role's effective values and the layers in merge order, as `show --format json` prints them."""
    result = run("--repo", root, "--no-cache", "show", stack, "--format", "json")
    assert result.code == 0, result
    data: dict[str, Any] = json.loads(result.out)
    data.pop("stack", None)
    return data


def _fixed(finding: dict[str, Any]) -> str:
    fix = str(finding["fix"])
    assert fix.startswith("write "), fix
    return fix.removeprefix("write ").split(" ", 1)[0]


def test_check_names_both_values_and_files_and_the_order_that_keeps_the_site(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "--no-cache", "check", "site/h100+qwen-offload")
    assert result.out == SITE_FIRST + "0 errors, 1 warning\n"
    assert result.code == 0  # a warning: the stack is legal
    assert run("--repo", REPO_ROOT, "--no-cache", "check", "site/h100+qwen-offload", "--strict").code == 1


def test_format_md_shows_the_output_check_gives() -> None:
    text = (REPO_ROOT / "docs" / "FORMAT.md").read_text(encoding="utf-8")
    block = text.split("$ profilekit check 'site/h100+qwen-offload'\n", 1)[1].split("```", 1)[0]
    assert block == SITE_FIRST + "0 errors, 1 warning\n"


def test_the_json_finding_points_at_both_values(run: Run) -> None:
    [finding] = _findings(run, REPO_ROOT, "site/h100+qwen-offload")
    assert finding["severity"] == "warning"
    assert [(loc["file"], loc["line"], loc["key"], loc["layer"]) for loc in finding["locations"]] == [
        ("profiles/site/h100.toml", 6, "serve.gpu_memory_utilization", "site/h100"),
        ("profiles/base.toml", 8, "serve.gpu_memory_utilization", "base"),
    ]


@pytest.mark.parametrize(
    "stack",
    ["site/h100+qwen-offload", "site/h100+qwen-disaggregated", "site/gb200+nemotron-replayssm", "site/h100+dc1"],
)
def test_the_fix_keeps_the_value_and_every_other_one(run: Run, tmp_path: Path, stack: str) -> None:
    root = _example_copy(tmp_path, {"dc1.toml": '[layer]\nextends = ["models/qwen3-0.6b", "site/h100"]\n'})
    [finding] = _order_findings(run, root, stack)
    fixed = _fixed(finding)
    assert _order_findings(run, root, fixed) == []
    before, after = _values(run, root, stack), _values(run, root, fixed)
    kept = finding["locations"][0]
    for role in before["roles"].values():
        if "gpu_memory_utilization" in role.get("serve", {}):
            role["serve"]["gpu_memory_utilization"] = {"h100": 0.92, "gb200": 0.95}[kept["layer"].split("/")[1]]
    assert {k: v for k, v in after.items() if k != "layers"} == {k: v for k, v in before.items() if k != "layers"}


def test_ordinary_layering_is_not_an_order_mistake(run: Run, tmp_path: Path) -> None:
    root = _example_copy(
        tmp_path,
        {
            "same.toml": "[layer]\nabstract = true\n[serve]\ngpu_memory_utilization = 0.9\n",
            # extends the layer it overrides: the more specific layer wins, as in the layer alone
            "tuned.toml": '[layer]\nabstract = true\nextends = ["site/h100"]\n[serve]\ngpu_memory_utilization = 0.8\n',
            "tuned-qwen.toml": '[layer]\nextends = ["models/qwen3-0.6b", "tuned"]\n',
            # base comes after site/h100 in this layer alone: the value is lost whatever the stack's order
            "base-last.toml": '[layer]\nextends = ["site/h100", "models/qwen3-0.6b"]\n',
            "ports.toml": "[layer]\nabstract = true\n[serve]\nport = 9000\n",
            "dcx.toml": '[layer]\nabstract = true\nextends = ["site/h100"]\n',
        },
    )
    for stack in [
        "qwen-offload+site/h100",  # general first, site last
        "nemotron-replayssm+site/h100",  # the [lint] stacks of the example repository
        "qwen-disaggregated+site/h100",
        "site/h100+base+models/qwen3-0.6b",  # a member written later overrides an earlier one: asked for
        "same+qwen-offload",  # an equal value loses nothing
        "site/h100+tuned-qwen",  # tuned extends site/h100: the more specific layer wins
        "site/h100+base-last",
        "ports+qwen-disaggregated",  # the roles' own ports replace the top level whatever the order
        # site/h100 is written last: the stack does not name it before nemotron-replayssm (dcx brings it in
        # first, which this rule does not judge)
        "dcx+nemotron-replayssm+site/h100",
    ]:
        assert _order_findings(run, root, stack) == [], stack


def test_the_later_member_beats_the_members_before_it_and_the_fix_moves_the_last_of_them(
    run: Run, tmp_path: Path
) -> None:
    root = _example_copy(tmp_path, {"tune.toml": "[layer]\nabstract = true\n[serve]\ngpu_memory_utilization = 0.85\n"})
    [finding] = _order_findings(run, root, "site/h100+tune+qwen-offload")
    # site/h100's 0.92 was replaced by tune's on purpose: tune is the value lost
    assert finding["message"].startswith("serve.gpu_memory_utilization = 0.85 of 'tune' is overridden by 0.9 of")
    assert finding["fix"] == "write site/h100+qwen-offload+tune ('tune' then keeps 0.85, and no other value changes)"


def test_a_role_value_moves_and_the_router_follows_it(run: Run, tmp_path: Path) -> None:
    root = _example_copy(tmp_path, {"box.toml": "[layer]\nabstract = true\n[roles.prefill.serve]\nport = 9100\n"})
    [finding] = _order_findings(run, root, "box+qwen-disaggregated")
    assert finding["role"] == "prefill"
    assert finding["message"] == (
        "roles.prefill.serve.port = 9100 of 'box' is overridden by 8100 of 'disaggregated' "
        "(profiles/disaggregated.toml:16:1), which 'qwen-disaggregated' extends (qwen-disaggregated -> "
        "disaggregated) and the stack names after 'box'"
    )
    assert _fixed(finding) == "qwen-disaggregated+box"
    proxy = _values(run, root, "qwen-disaggregated+box")["roles"]["proxy"]["command"]
    assert "http://127.0.0.1:9100" in proxy


def test_no_order_fixes_it_when_the_later_member_also_overrides_on_purpose(run: Run, tmp_path: Path) -> None:
    root = _example_copy(
        tmp_path,
        {
            "site/dc1.toml": "[layer]\nabstract = true\n[serve]\nport = 9000\ngpu_memory_utilization = 0.8\n",
            "qport.toml": '[layer]\nextends = ["models/qwen3-0.6b"]\n[serve]\nport = 9100\n',
        },
    )
    [finding] = _order_findings(run, root, "site/dc1+qport")
    assert finding["fix"] == (
        "no order of the stack's layers keeps 0.8 and every other value: write serve.gpu_memory_utilization = 0.8 "
        "in a layer the stack names after 'qport'"
    )


def test_lint_warns_for_a_listed_stack(run: Run, tmp_path: Path) -> None:
    root = _example_copy(tmp_path, {})
    config = root / "profilekit.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace('"nemotron-replayssm+site/h100"', '"site/h100+nemotron-replayssm"'),
        encoding="utf-8",
    )
    result = run("--repo", root, "--no-cache", "lint")
    assert result.code == 0, result
    assert "warning override-order serve.gpu_memory_utilization = 0.92 of 'site/h100'" in result.out
    assert "    in stack site/h100+nemotron-replayssm\n" in result.out
    assert "    fix: write nemotron-replayssm+site/h100 (" in result.out
    assert result.out.endswith("0 errors, 1 warning\n")


def test_the_example_repository_lints_clean(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "--no-cache", "lint")
    assert result.code == 0, result
    assert "override-order" not in result.out + result.err


def test_render_warns_and_writes(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("--repo", REPO_ROOT, "--no-cache", "render", "site/h100+qwen-offload", "--out", out)
    assert result.code == 0, result
    assert result.err.startswith(SITE_FIRST)
    assert "--gpu-memory-utilization 0.9 " in (out / "serve.sh").read_text(encoding="utf-8")


def test_explain_mentions_it_for_the_value_it_explains(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "--no-cache", "explain", "site/h100+qwen-offload", "gpu_memory_utilization")
    assert result.code == 0, result
    assert result.err == SITE_FIRST + "0 errors, 1 warning\n"
    assert "overrides 0.92 from profiles/site/h100.toml:6:1" in result.out
    other = run("--repo", REPO_ROOT, "--no-cache", "explain", "site/h100+qwen-offload", "max_num_seqs")
    assert other.err == ""


def _example_copy(tmp_path: Path, extra: dict[str, str]) -> Path:
    """The example repository (profiles/ and profilekit.toml), with more layers."""
    root = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "profiles", root / "profiles")
    shutil.copy(REPO_ROOT / "profilekit.toml", root / "profilekit.toml")
    for name, text in extra.items():
        (root / "profiles" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "profiles" / name).write_text(text, encoding="utf-8")
    return root
