"""The `profilekit-lint` pre-commit hook (.pre-commit-hooks.yaml), run by the real `pre-commit try-repo`.

`try-repo` installs the hook the way a team's `.pre-commit-config.yaml` would: it clones this repository,
builds a virtualenv and `pip install`s profilekit into it (pip's own cache makes that quick after the first
time), then runs the hook in a sample profile repository made here as a git repository.

What is tried is this checkout *as it is on disk*: every file git tracks or would track (`git ls-files
--cached --others --exclude-standard`, so uncommitted edits and new files count, ignored ones such as
`.venv/` do not) is copied into a throwaway git repository and committed there. `try-repo` only sees
committed state, or uncommitted edits to files the source already tracks; the snapshot makes the test
give the same answer on a clean checkout, on a checkout with work in progress, and in CI's fresh clone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from profilekit import __version__
from profilekit.cache import record
from tests.conftest import REPO_ROOT, Run

CONFIG = '[vllm]\nversion = "0.33.0"\n'
# a deployable ReplaySSM stack on Nemotron-H (ReplaySSM needs Model Runner V1 from vLLM 0.30 on)
NEMOTRON = """\
[layer]
description = "Nemotron-H 8B with the ReplaySSM decode kernel"

[model]
architecture = "NemotronHForCausalLM"

[serve]
model = "nvidia/Nemotron-H-8B-Base-8K"
use_replayssm = true

[env]
VLLM_USE_V2_MODEL_RUNNER = "0"
"""
# the change under review: a layer that brings a KV connector (the one kv_offloading_size implies) into it
OFFLOAD = """\
[layer]
extends = ["nemotron"]

[serve]
kv_offloading_size = 8
"""


def _git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="profilekit tests",
        GIT_AUTHOR_EMAIL="tests@profilekit.invalid",
        GIT_COMMITTER_NAME="profilekit tests",
        GIT_COMMITTER_EMAIL="tests@profilekit.invalid",
        PRE_COMMIT_HOME=str(home),  # keeps the user's ~/.cache/pre-commit out of it; pip's cache is reused
        PRE_COMMIT_COLOR="never",
    )
    return env


def _git(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def _snapshot(env: dict[str, str], dest: Path) -> Path:
    """This checkout's files as git sees them, committed into a fresh repository at `dest`."""
    listed = _git(env, REPO_ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if not source.is_file():  # deleted in the work tree but not yet in the index
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    assert (dest / ".pre-commit-hooks.yaml").is_file()
    _git(env, dest, "init", "-q")
    _git(env, dest, "add", "-A")
    _git(env, dest, "commit", "-q", "--no-verify", "-m", "snapshot of the profilekit checkout under test")
    return dest


def _try_repo(env: dict[str, str], hook_repo: Path, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "profilekit-lint", "--color", "never", *extra],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_the_hook_passes_a_clean_repository_and_fails_a_staged_kv_connector_under_replayssm(tmp_path: Path) -> None:
    env = _git_env(tmp_path / "pre-commit-home")
    hook_repo = _snapshot(env, tmp_path / "profilekit")

    sample = tmp_path / "team-profiles"
    (sample / "profiles").mkdir(parents=True)
    (sample / "profilekit.toml").write_text(CONFIG, encoding="utf-8")
    (sample / "profiles" / "nemotron.toml").write_text(NEMOTRON, encoding="utf-8")
    (sample / "README.md").write_text("# team profiles\n", encoding="utf-8")
    _git(env, sample, "init", "-q")
    _git(env, sample, "add", "-A")
    _git(env, sample, "commit", "-q", "-m", "profiles")

    # a clean repository passes
    clean = _try_repo(env, hook_repo, sample, "--all-files")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert any(line.startswith("profilekit lint") and line.endswith("Passed") for line in clean.stdout.splitlines())

    def staged(name: str, text: str) -> subprocess.CompletedProcess[str]:
        """Stage `name` alone (a new file, or an edit), run the hook on what is staged, then commit it."""
        path = sample / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        _git(env, sample, "add", name)
        proc = _try_repo(env, hook_repo, sample)
        _git(env, sample, "commit", "-q", "--no-verify", "-m", name)
        return proc

    def hook_line(proc: subprocess.CompletedProcess[str]) -> str:
        (line,) = [x for x in proc.stdout.splitlines() if x.startswith("profilekit lint")]
        return line

    # files lint does not read do not run the hook: a README, a team template (render reads those)
    for name, text in (
        ("README.md", "# team profiles\n\nSee profiles/.\n"),
        ("team-templates/k8s.yaml.j2", "{{ header }}{{ yaml }}\n"),
    ):
        skipped = staged(name, text)
        assert skipped.returncode == 0, skipped.stdout + skipped.stderr
        assert hook_line(skipped).endswith("(no files to check)Skipped"), (name, skipped.stdout)

    # each file lint reads runs it, alone: profilekit.toml (here naming a stack of a layer that is not there) ...
    wrong = staged("profilekit.toml", CONFIG + '\n[lint]\nstacks = ["nemotrn"]\n')
    assert wrong.returncode == 1 and hook_line(wrong).endswith("Failed"), wrong.stdout
    assert "profilekit.toml:5:11: error unknown-layer " in wrong.stdout, wrong.stdout
    assert "did you mean 'nemotron'?" in wrong.stdout, wrong.stdout
    # ... and put right, the lock file, a model's config.json
    for name, text in (
        ("profilekit.toml", CONFIG + '\n[render]\ntemplates = "team-templates"\n'),
        ("profilekit.lock", "# no sources yet\n"),
        ("models/nemotron/config.json", '{"architectures": ["NemotronHForCausalLM"]}\n'),
    ):
        ran = staged(name, text)
        assert ran.returncode == 0, (name, ran.stdout + ran.stderr)
        assert hook_line(ran).endswith("Passed"), (name, ran.stdout)

    # a staged layer that brings a KV connector into the ReplaySSM stack fails the commit, showing why
    (sample / "profiles" / "nemotron-offload.toml").write_text(OFFLOAD, encoding="utf-8")
    _git(env, sample, "add", "profiles/nemotron-offload.toml")
    failed = _try_repo(env, hook_repo, sample)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    output = failed.stdout
    assert any(line.startswith("profilekit lint") and line.endswith("Failed") for line in output.splitlines())
    assert "- hook id: profilekit-lint\n- exit code: 1\n" in output
    assert (
        "profiles/nemotron.toml:9:1: error replayssm-kv-connector use_replayssm = true with the OffloadingConnector "
        '(kv_role "kv_both") that kv_offloading_size = 8 creates; vLLM 0.33.0 refuses to start: "--use-replayssm is '
        'incompatible with KV connectors (P/D disaggregation, KV cache offload)"\n'
        "    in stack nemotron-offload, role serve\n"
        "    profiles/nemotron-offload.toml:5:1: serve.kv_offloading_size (layer nemotron-offload)\n"
        "    fix: ReplaySSM and KV connectors cannot share a vLLM instance: remove the connector from this role "
        "(serve.kv_offloading_size), or turn use_replayssm off\n"
        "1 error, 0 warnings\n"
    ) in output


def test_the_manifest_and_the_readme_config_pass_pre_commits_own_validation(tmp_path: Path) -> None:
    manifest = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(REPO_ROOT / ".pre-commit-hooks.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert manifest.returncode == 0, manifest.stdout + manifest.stderr
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    (snippet,) = [b for b in re.findall(r"```yaml\n(.*?)```", readme, flags=re.DOTALL) if b.startswith("repos:")]
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(snippet, encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-config", str(config)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _hook_files() -> re.Pattern[str]:
    (hook,) = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return re.compile(hook["files"])


def test_the_hook_runs_on_every_file_lint_reads_and_on_nothing_it_does_not(tmp_path: Path, run: Run) -> None:
    """What a real lint opens, seen through the audit hook profilekit's run cache records its inputs with, for a
    profile repository in deploy/ of a git repository: every file of it that lint reads matches `files` (as
    pre-commit matches it, relative to the git root); the README and the team templates are not read."""
    checkout = tmp_path / "checkout"
    deploy = checkout / "deploy"
    files = {
        "profilekit.toml": CONFIG + '\n[render]\ntemplates = "team-templates"\n',
        "profiles/nemotron.toml": NEMOTRON.replace("[serve]", "[serve]\nmax_model_len = 4096\n"),
        "profiles/qwen.toml": '[model]\nconfig = "models/qwen"\n\n[serve]\nmodel = "Qwen/Qwen3-0.6B"\n',
        "profiles/local.toml": '[serve]\nmodel = "models/local"\n',
        "models/qwen/config.json": '{"architectures": ["Qwen3ForCausalLM"], "max_position_embeddings": 40960}\n',
        "models/local/config.json": '{"architectures": ["LlamaForCausalLM"]}\n',
        "team-templates/k8s.yaml.j2": "{{ header }}{{ yaml }}\n",
        "README.md": "# deploy\n",
    }
    for name, text in files.items():
        (deploy / name).parent.mkdir(parents=True, exist_ok=True)
        (deploy / name).write_text(text, encoding="utf-8")
    (checkout / ".git").mkdir()
    (checkout / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")

    recording = record.start(())
    try:
        result = run("--no-cache", "lint", "--repo", deploy, cwd=checkout)
    finally:
        record.stop(recording)
    assert result.code == 0, result
    read = sorted(Path(p).relative_to(checkout).as_posix() for p in recording.files if Path(p).is_relative_to(deploy))
    assert read == sorted(f"deploy/{name}" for name in files if name.endswith((".toml", ".json"))), read
    pattern = _hook_files()
    assert [name for name in read if not pattern.search(name)] == []
    assert not pattern.search("deploy/README.md") and not pattern.search("deploy/team-templates/k8s.yaml.j2")
    assert pattern.search("deploy/profilekit.lock") and pattern.search("profilekit.lock")


# every place that shows a team the `rev:` of this hook repository, and the `.pre-commit-config.yaml` init writes
REV_SHOWN = ("README.md", "docs/GUIDE.md", ".pre-commit-hooks.yaml")


def test_the_rev_the_docs_show_is_this_releases_tag_and_the_tag_provides_the_hook() -> None:
    """`rev: v0.1.0` in the docs is the tag of this release (`v` + the package version), the same tag init writes, and
    what `pre-commit` checks out at that rev has the hook.

    The tag itself is made by the release (docs/ARCHITECTURE.md: a release tags its commit `vX.Y.Z` when
    pyproject.toml's version becomes X.Y.Z); a checkout need not carry tags (CI's checkout of main has none), so
    where the tag is absent the hook manifest of this commit, which the tag will point at, is what is checked."""
    tag = f"v{__version__}"
    for name in REV_SHOWN:
        shown = re.findall(r"^[#\s]*rev: (\S+)$", (REPO_ROOT / name).read_text(encoding="utf-8"), flags=re.MULTILINE)
        assert shown and set(shown) == {tag}, (name, shown)
    scaffold = (REPO_ROOT / "templates" / "init" / "dot-pre-commit-config.yaml").read_text(encoding="utf-8")
    assert "    rev: v@PROFILEKIT_VERSION@\n" in scaffold  # init writes the same tag (tests/test_scaffold.py)

    env = _git_env(Path(os.devnull))
    proc = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    rev = tag if proc.returncode == 0 else "HEAD"
    manifest = _git(env, REPO_ROOT, "show", f"{rev}:.pre-commit-hooks.yaml")
    assert [hook["id"] for hook in yaml.safe_load(manifest)] == ["profilekit-lint"], rev
