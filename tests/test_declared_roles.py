"""Issue 25, item 1: roles exist only where a layer declares them (docs/ROLES.md).

Each newcomer case of the issue, on a copy of this project's example repository, with the exact command a user
runs and the exact message it now gets.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, MakeRepo, Run

SITE_DC1 = '[layer]\ndescription = "data centre 1"\nabstract = true\n\n[roles.prefill.serve]\nport = 9100\n'


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """The example repository with the site layer of the issue: it moves the prefill port."""
    root = tmp_path / "example"
    shutil.copytree(REPO_ROOT / "profiles", root / "profiles")
    shutil.copy(REPO_ROOT / "profilekit.toml", root / "profilekit.toml")
    (root / "profiles" / "site" / "dc1.toml").write_text(SITE_DC1, encoding="utf-8")
    return root


def test_a_misspelt_role_is_unknown_role_and_renders_nothing(example: Path, run: Run) -> None:
    (example / "profiles" / "mine.toml").write_text(
        '[layer]\nextends = ["qwen-disaggregated"]\n\n[roles.prefil.serve]\nmax_num_seqs = 32\n', encoding="utf-8"
    )
    message = (
        "profiles/mine.toml:4:1: error unknown-role [roles.prefil] names role 'prefil', which no layer of the "
        "repository declares\n"
        "    fix: did you mean 'prefill'?\n"
        "1 error, 0 warnings\n"
    )
    checked = run("check", "mine", cwd=example)
    assert (checked.code, checked.out) == (1, message)
    rendered = run("render", "mine", "--out", example / "out", cwd=example)
    assert (rendered.code, rendered.out, rendered.err) == (1, "", message)
    assert not (example / "out").exists()
    linted = run("lint", cwd=example)  # the layer is in the repository: lint reads it too
    assert linted.code == 1 and linted.out.startswith(message.splitlines()[0])


def test_a_site_layer_serves_single_role_and_pd_stacks_alike(example: Path, run: Run, tmp_path: Path) -> None:
    single = "nemotron-replayssm+site/h100+site/dc1"
    assert run("check", single, cwd=example).out == f"{single}: no problems found (vLLM 0.33.0)\n"
    rendered = run("render", single, "--out", tmp_path / "single", cwd=example)
    assert rendered.code == 0, rendered
    assert sorted(p.name for p in (tmp_path / "single").iterdir()) == ["manifest.json", "serve.env", "serve.sh"]
    explained = run("explain", single, "roles.prefill.serve.port", cwd=example)
    assert (explained.code, explained.out) == (
        0,
        f"[prefill] not applied: role prefill is not in {single}  (profiles/site/dc1.toml:5:1, layer site/dc1)\n",
    )
    shown = json.loads(run("show", single, "--format", "json", cwd=example).out)
    assert list(shown["roles"]) == ["serve"]
    assert shown["not_applied"] == [
        {
            "role": "prefill",
            "at": "profiles/site/dc1.toml:5:1",
            "layer": "site/dc1",
            "why": f"role prefill is not in {single}",
        }
    ]
    # the same layer moves the port of the P/D stack, and its router follows the reference
    pd = json.loads(run("show", "qwen-disaggregated+site/dc1", "--format", "json", cwd=example).out)
    assert list(pd["roles"]) == ["prefill", "decode", "proxy"]
    assert pd["roles"]["prefill"]["serve"]["port"] == 9100
    assert "http://127.0.0.1:9100" in pd["roles"]["proxy"]["command"]
    assert "not_applied" not in pd


def test_every_command_that_names_a_role_checks_it(example: Path, run: Run) -> None:
    for args in (
        ("render", "qwen-disaggregated", "--role", "prefil"),
        ("explain", "qwen-disaggregated", "roles.prefil.serve.port"),
    ):
        result = run(*args, cwd=example)
        assert (result.code, result.err) == (
            2,
            "profilekit: error: stack 'qwen-disaggregated' has no role 'prefil'\n  hint: did you mean 'prefill'?\n",
        ), args
    result = run("render", "nemotron-replayssm", "--role", "prefill", cwd=example)
    assert (result.code, result.err) == (
        2,
        "profilekit: error: role 'prefill' is not in nemotron-replayssm\n"
        "  hint: layer disaggregated declares it: compose the stack with it; roles of this stack: serve\n",
    )


def test_a_repository_written_before_declarations_gets_the_fix(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "pd.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n\n[roles.prefill.serve]\nport = 8100\n\n'
            '[roles.proxy]\ncommand = ["vllm-router", "--port", "8192"]\n'
        }
    )
    result = run("check", "pd", cwd=root)
    assert (result.code, result.out) == (
        1,
        "profiles/pd.toml:4:1: error unknown-role [roles.prefill] names role 'prefill', which no layer of the "
        "repository declares\n"
        '    fix: declare the role where it is defined: write kind = "vllm" in [roles.prefill] of this layer\n'
        "profiles/pd.toml:7:1: error unknown-role [roles.proxy] names role 'proxy', which no layer of the "
        "repository declares\n"
        '    fix: declare the role where it is defined: write kind = "command" in [roles.proxy] of this layer\n'
        "2 errors, 0 warnings\n",
    )


def test_a_role_declared_with_two_kinds_is_refused(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "pd.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\n\n[roles.proxy]\nkind = "vllm"\n',
            "router.toml": '[roles.proxy]\nkind = "command"\ncommand = ["vllm-router", "--port", "8192"]\n',
        }
    )
    result = run("check", "pd+router", cwd=root)
    assert result.code == 1
    assert "error role-kind-mismatch" in result.out
    assert result.out == (
        "profiles/router.toml:2:1: error role-kind-mismatch roles.proxy.kind = 'command', but layer 'pd' declares "
        "role 'proxy' kind = 'vllm'\n"
        "    profiles/pd.toml:5:1: roles.proxy.kind (layer pd)\n"
        "    fix: a role is one kind in every layer: write kind = 'vllm', or give the role another name\n"
        "profiles/router.toml:3:1: error role-kind-mismatch role 'proxy' is declared kind = 'vllm' but layer 'router' "
        "gives it a command\n"
        "    profiles/pd.toml:5:1: roles.proxy.kind (layer pd)\n"
        '    fix: a vLLM role runs `vllm serve`: remove the command, or declare the role kind = "command"\n'
        "2 errors, 0 warnings\n"
    )
