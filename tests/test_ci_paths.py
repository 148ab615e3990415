"""`--format github` and `--format sarif` name files relative to the root of the git work tree, which is where
GitHub attaches annotations and code-scanning alerts, wherever the profile repository is inside it
(`profilekit lint --repo deploy`). Real git repositories, real worktrees, the real CLI.

Outside git the profile repository's own folder is the root (the paths are as they always were), and a file of a
`[sources.NAME]` source keeps its `platform@3f2a9c1:` label or its SARIF base (tests/test_sources.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from profilekit.load.worktree import path_in_work_tree, work_tree_root
from tests.conftest import REPO_ROOT, Run
from tests.test_sarif import assert_valid_sarif

CONFIG = '[vllm]\nversion = "0.33.0"\n\n[lint]\ncombinations = "none"\n'
# one syntax error, one unknown option: a finding with a file of its own, one at a key
LAYERS = {
    "broken.toml": "[serve\n",
    "qwen.toml": '[serve]\nmodel = "Qwen/Qwen3-0.6B"\nmax_num_seq = 4\n',
}


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@profilekit.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@profilekit.invalid",
    )
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def _profiles(root: Path) -> Path:
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text(CONFIG, encoding="utf-8")
    for name, text in LAYERS.items():
        (root / "profiles" / name).write_text(text, encoding="utf-8")
    return root


def _github_files(run: Run, repo: Path, cwd: Path) -> list[str]:
    result = run("lint", "--repo", repo, "--format", "github", cwd=cwd)
    assert result.code == 1, result
    return [line.split(",", 1)[0].removeprefix("::error file=") for line in result.out.splitlines()]


def _sarif_uris(run: Run, repo: Path, cwd: Path) -> list[str]:
    result = run("lint", "--repo", repo, "--format", "sarif", cwd=cwd)
    assert result.code == 1, result
    log: dict[str, Any] = json.loads(result.out)
    assert_valid_sarif(log)
    locations = [loc for r in log["runs"][0]["results"] for loc in r["locations"]]
    assert {loc["physicalLocation"]["artifactLocation"]["uriBaseId"] for loc in locations} == {"%SRCROOT%"}
    return [loc["physicalLocation"]["artifactLocation"]["uri"] for loc in locations]


def test_a_profile_repository_in_a_subfolder_of_git_is_annotated_from_the_git_root(tmp_path: Path, run: Run) -> None:
    checkout = tmp_path / "checkout"
    _profiles(checkout / "deploy")
    _git(checkout, "init", "-q")
    expected = ["deploy/profiles/broken.toml", "deploy/profiles/qwen.toml"]
    # from the checkout's root, as a workflow runs it, and from inside the profile repository: the same paths
    assert _github_files(run, Path("deploy"), cwd=checkout) == expected
    assert _github_files(run, Path("."), cwd=checkout / "deploy") == expected
    assert _sarif_uris(run, Path("deploy"), cwd=checkout) == expected
    # the text report a person reads keeps the paths of the profile repository
    text = run("lint", "--repo", "deploy", cwd=checkout).out
    assert "profiles/qwen.toml:3:1: error unknown-option " in text and "deploy/profiles" not in text, text


def test_a_linked_worktree_whose_dot_git_is_a_file_is_a_work_tree_too(tmp_path: Path, run: Run) -> None:
    main = tmp_path / "main"
    _profiles(main / "ops" / "deploy")
    _git(main, "init", "-q", "-b", "main")
    _git(main, "add", "-A")
    _git(main, "commit", "-q", "-m", "profiles")
    linked = tmp_path / "linked"
    _git(main, "worktree", "add", "-q", "-b", "review", str(linked))
    assert (linked / ".git").is_file()
    assert work_tree_root(linked / "ops" / "deploy") == linked.resolve()
    assert _github_files(run, linked / "ops" / "deploy", cwd=tmp_path) == [
        "ops/deploy/profiles/broken.toml",
        "ops/deploy/profiles/qwen.toml",
    ]


def test_outside_git_paths_start_at_the_profile_repository(tmp_path: Path, run: Run) -> None:
    outside = _profiles(tmp_path / "plain" / "deploy")
    assert work_tree_root(outside) is None  # the test's own folder is in no git work tree
    assert _github_files(run, outside, cwd=tmp_path) == ["profiles/broken.toml", "profiles/qwen.toml"]
    assert _sarif_uris(run, outside, cwd=tmp_path) == ["profiles/broken.toml", "profiles/qwen.toml"]


def test_a_dot_git_that_is_neither_a_repository_nor_a_gitdir_file_is_passed_over(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    deploy = _profiles(checkout / "deploy")
    (deploy / ".git").write_text("not a git file\n", encoding="utf-8")
    (checkout / ".git").mkdir()  # an empty folder: no HEAD, git does not take it for a repository
    assert path_in_work_tree(deploy) == ""
    _git(checkout, "init", "-q", "--template=")
    assert path_in_work_tree(deploy) == "deploy/"
    assert path_in_work_tree(checkout) == ""


def test_a_repeat_run_sees_the_git_repository_that_appeared(tmp_path: Path) -> None:
    """The run cache replays a lint only while what it looked at holds: `git init` above the profile repository
    changes the paths of the next run."""
    checkout = tmp_path / "checkout"
    _profiles(checkout / "deploy")

    def github() -> list[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "profilekit", "lint", "--repo", "deploy", "--format", "github"],
            cwd=checkout,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 1, proc
        return [line.split(",", 1)[0] for line in proc.stdout.splitlines()]

    assert github() == ["::error file=profiles/broken.toml", "::error file=profiles/qwen.toml"]
    assert github() == ["::error file=profiles/broken.toml", "::error file=profiles/qwen.toml"]  # replayed
    _git(checkout, "init", "-q")
    assert github() == ["::error file=deploy/profiles/broken.toml", "::error file=deploy/profiles/qwen.toml"]


def test_this_checkout_is_a_work_tree_at_its_root() -> None:
    """The example repository is the root of this project's checkout (a `.git` folder, or a file in a linked
    worktree): its CI paths are unchanged."""
    assert work_tree_root(REPO_ROOT) == REPO_ROOT.resolve()
    assert path_in_work_tree(REPO_ROOT) == ""


def test_a_broken_profilekit_toml_in_a_subfolder_is_annotated_there(tmp_path: Path, run: Run) -> None:
    """No repository opens, and the finding is still placed from the git root."""
    checkout = tmp_path / "checkout"
    (checkout / "deploy" / "profiles").mkdir(parents=True)
    (checkout / "deploy" / "profilekit.toml").write_text("[vllm\n", encoding="utf-8")
    _git(checkout, "init", "-q")
    result = run("lint", "--repo", "deploy", "--format", "github", cwd=checkout)
    assert result.code == 1, result
    assert result.out.startswith("::error file=deploy/profilekit.toml,line=1,col=6,title=toml-syntax::"), result
