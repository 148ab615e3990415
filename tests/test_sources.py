"""Sources shared across repositories (issue 14), with real git: a platform repository made here (commits, a
tag, a branch moved forward), consumed by local path and by file:// URL; lock, offline use, tampering, update
with its diff, provenance across the boundary, and what a source may not do."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import Run

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Platform Team",
    "GIT_AUTHOR_EMAIL": "platform@example.com",
    "GIT_COMMITTER_NAME": "Platform Team",
    "GIT_COMMITTER_EMAIL": "platform@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

BASE = """\
[layer]
abstract = true
description = "the platform's base"

[serve]
port = 8000
max_num_seqs = 256
"""

REPLAYSSM = """\
[layer]
abstract = true
extends = ["base"]
provides = ["replayssm"]

[serve]
use_replayssm = true
"""

CONSUMER_LAYER = """\
[layer]
extends = ["platform:base"]

[serve]
model = "Qwen/Qwen3-0.6B"
"""


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def commit(repo: Path, message: str, files: dict[str, str]) -> str:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def platform(tmp_path: Path) -> Path:
    """The platform team's repository: base and replayssm, tagged v1.0.0 on branch main."""
    repo = tmp_path / "platform"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(
        repo,
        "base and replayssm",
        {
            "profilekit.toml": '[vllm]\nversion = "0.33.0"\n',
            "profiles/base.toml": BASE,
            "profiles/replayssm.toml": REPLAYSSM,
        },
    )
    git(repo, "tag", "v1.0.0")
    return repo


def consumer(tmp_path: Path, git_address: str, rev: str = "main", layers: dict[str, str] | None = None) -> Path:
    root = tmp_path / "app"
    root.mkdir(exist_ok=True)
    config = f'[vllm]\nversion = "0.33.0"\n\n[sources.platform]\ngit = "{git_address}"\nrev = "{rev}"\n'
    write(root, {"profilekit.toml": config, **{f"profiles/{k}.toml": v for k, v in (layers or {}).items()}})
    if not layers:
        write(root, {"profiles/qwen.toml": CONSUMER_LAYER})
    return root


def short(repo: Path, rev: str = "HEAD") -> str:
    return git(repo, "rev-parse", "--short=7", rev)


def locked(root: Path) -> dict[str, str]:
    import tomli

    entry: dict[str, str] = tomli.loads((root / "profilekit.lock").read_text())["sources"]["platform"]
    return entry


def tree(root: Path) -> Path:
    return Path(os.environ["PROFILEKIT_CACHE_DIR"]) / "sources" / "trees" / locked(root)["commit"]


# ---- lock, and the refusals before it --------------------------------------------------------


def test_a_source_that_is_not_locked_is_refused_naming_it(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, "../platform")
    result = run("--repo", root, "check", "qwen")
    assert result.code == 1, result
    assert result.out + result.err == (
        "profilekit.toml:4:1: error source-unlocked source 'platform' is not locked: there is no profilekit.lock\n"
        "    fix: run `profilekit lock` (and commit profilekit.lock), so every run reads the same commit\n"
        "1 error, 0 warnings\n"
    )


def test_lock_records_the_commit_and_a_digest_and_check_reads_the_source(
    platform: Path, tmp_path: Path, run: Run
) -> None:
    root = consumer(tmp_path, "../platform")
    result = run("--repo", root, "lock")
    assert result.code == 0, result
    head = git(platform, "rev-parse", "HEAD")
    assert result.out == f"platform: main locked at {head[:7]}\n"
    assert result.err == "wrote profilekit.lock\n"
    entry = locked(root)
    assert entry["git"] == "../platform" and entry["rev"] == "main" and entry["commit"] == head
    assert entry["hash"].startswith("sha256:") and len(entry["hash"]) == 71
    check = run("--repo", root, "check", "qwen")
    assert (check.code, check.out) == (0, "qwen: no problems found (vLLM 0.33.0)\n"), check


def test_provenance_names_the_source_its_commit_and_the_line(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    at = f"platform@{short(platform)}"
    explain = run("--repo", root, "explain", "qwen", "max_num_seqs")
    assert explain.out == (
        "[serve] serve.max_num_seqs = 256\n"
        f"    set at {at}:profiles/base.toml:7:1  (serve.max_num_seqs, layer platform:base)\n"
    ), explain
    listing = run("--repo", root, "list")
    assert "platform:replayssm" in listing.out and "extends=platform:base" in listing.out, listing


def test_a_finding_inside_a_source_is_located_there_in_text_and_json(platform: Path, tmp_path: Path, run: Run) -> None:
    offload = """\
        [layer]
        extends = ["platform:replayssm"]

        [serve]
        model = "nvidia/Nemotron-H-8B-Base-8K"
        kv_offloading_size = 8
        mamba_backend = "flashinfer"
        """
    root = consumer(tmp_path, "../platform", layers={"nemo": offload})
    run("--repo", root, "lock")
    at = f"platform@{short(platform)}"
    result = run("--repo", root, "check", "nemo", "--format", "json")
    assert result.code == 1, result
    findings = json.loads(result.out)["findings"]
    kv = [f for f in findings if f["rule"] == "replayssm-kv-connector"]
    assert len(kv) == 1, findings
    files = [(loc["file"], loc["line"], loc.get("layer")) for loc in kv[0]["locations"]]
    assert files[0] == (f"{at}:profiles/replayssm.toml", 7, "platform:replayssm")
    assert ("profiles/nemo.toml", 6, "nemo") in files
    text = run("--repo", root, "check", "nemo")
    assert f"{at}:profiles/replayssm.toml:7:1: error replayssm-kv-connector use_replayssm = true" in text.out
    # CI formats: a source's file is not in this repository, so the annotation sits at the line here
    github = run("--repo", root, "check", "nemo", "--format", "github").out.splitlines()
    line = next(x for x in github if "title=replayssm-kv-connector" in x)
    assert line.startswith("::error file=profiles/nemo.toml,line=6,col=1,title=replayssm-kv-connector::"), line
    assert f"%0Aalso {at}:profiles/replayssm.toml:7:1: serve.use_replayssm (layer platform:replayssm)%0A" in line
    sarif = json.loads(run("--repo", root, "check", "nemo", "--format", "sarif").out)["runs"][0]
    result = next(r for r in sarif["results"] if r["ruleId"] == "replayssm-kv-connector")
    first = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert first == {"uri": "profiles/nemo.toml", "uriBaseId": "%SRCROOT%"}
    related = [r["physicalLocation"]["artifactLocation"] for r in result["relatedLocations"]]
    base = f"SOURCE_platform_{short(platform)}"
    assert {"uri": "profiles/replayssm.toml", "uriBaseId": base} in related
    assert sarif["originalUriBaseIds"][base] == {
        "description": {"text": f"source platform at commit {short(platform)} (profilekit.lock)"}
    }
    for result in sarif["results"]:  # every uri a relative reference: no ':' before its first '/'
        for loc in [*result["locations"], *result.get("relatedLocations", [])]:
            assert ":" not in loc["physicalLocation"]["artifactLocation"]["uri"].split("/")[0]


def test_a_file_url_source_and_a_tag(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, platform.as_uri(), rev="v1.0.0")
    assert run("--repo", root, "lock").out == f"platform: v1.0.0 locked at {short(platform, 'v1.0.0')}\n"
    assert run("--repo", root, "check", "qwen").code == 0


def test_names_in_a_source_resolve_inside_it_and_constraints_cross_the_boundary(
    platform: Path, tmp_path: Path, run: Run
) -> None:
    layers = {
        "qwen": CONSUMER_LAYER,
        "nocache": """\
        [layer]
        abstract = true
        conflicts = ["platform:replayssm"]

        [serve]
        enable_prefix_caching = false
        """,
    }
    root = consumer(tmp_path, "../platform", layers=layers)
    run("--repo", root, "lock")
    # replayssm's own `extends = ["base"]` is platform:base
    show = run("--repo", root, "explain", "qwen+platform:replayssm", "port")
    assert "layer platform:base" in show.out, show
    result = run("--repo", root, "check", "qwen+platform:replayssm+nocache")
    assert result.code == 1, result
    at = f"platform@{short(platform)}"
    assert (
        "profiles/nocache.toml:3:14: error declared-conflict layer 'nocache' conflicts with layer "
        "'platform:replayssm', which is in the stack\n"
        "    in stack qwen+platform:replayssm+nocache\n"
        f"    {at}:profiles/replayssm.toml:1:1: layer (layer platform:replayssm)\n"
    ) in result.out, result
    typo = run("--repo", root, "check", "qwen+platform:replayssn")
    assert typo.code == 2, typo
    assert "unknown layer 'platform:replayssn'" in typo.err and "did you mean 'platform:replayssm'?" in typo.err


def test_a_stale_lock_is_refused_at_the_line_that_changed(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    config = root / "profilekit.toml"
    config.write_text(config.read_text().replace('rev = "main"', 'rev = "v1.0.0"'))
    result = run("--repo", root, "check", "qwen")
    assert result.code == 1, result
    assert result.out + result.err == (
        "profilekit.toml:6:1: error source-lock-stale source 'platform' changed since it was locked: rev is "
        "'v1.0.0' in profilekit.toml, 'main' in profilekit.lock\n"
        "    profilekit.lock:7:1: sources.platform.rev\n"
        "    fix: run `profilekit lock` to lock 'platform' at the new rev\n"
        "1 error, 0 warnings\n"
    )
    assert run("--repo", root, "lock").code == 0
    assert run("--repo", root, "check", "qwen").code == 0
    write(root, {"profilekit.toml": '[vllm]\nversion = "0.33.0"\n', "profiles/qwen.toml": "[serve]\nmodel = 'm'\n"})
    dropped = run("--repo", root, "lock")  # the last source removed: so is the lock
    assert (dropped.code, dropped.out) == (0, "platform: no longer in profilekit.toml, dropped from profilekit.lock\n")
    assert dropped.err == "profilekit.toml has no [sources]: removed profilekit.lock\n"
    assert not (root / "profilekit.lock").exists()


WRITE_AGAIN = "    fix: run `profilekit lock` to write it again\n"
# profilekit.lock as `lock` writes it: two lines of header, `version = 1` on line 3, [sources.platform] on line 5
# with git, rev, commit and hash on lines 6 to 9; profilekit.toml declares [sources.platform] on line 4
DAMAGED_LOCKS = {
    "garbage": (
        lambda lock: b"garbage\n",
        "profilekit.lock is not valid TOML: Expected '=' after a key in a key/value pair\n"
        "    profilekit.lock:1:8:\n" + WRITE_AGAIN,
    ),
    "not UTF-8": (
        lambda lock: lock.replace(b"main", b"ma\xffin"),
        "profilekit.lock is not valid UTF-8\n    profilekit.lock:7:1:\n" + WRITE_AGAIN,
    ),
    "another format": (
        lambda lock: lock.replace(b"version = 1", b"version = 2"),
        "profilekit.lock is not a lock file of format 1 (it says version = 2; profilekit writes version = 1)\n"
        "    profilekit.lock:3:1: version\n" + WRITE_AGAIN,
    ),
    "an entry without hash": (
        lambda lock: b"".join(line for line in lock.splitlines(keepends=True) if not line.startswith(b"hash")),
        "[sources.platform] of profilekit.lock has no `hash`\n    profilekit.lock:5:1: sources.platform\n"
        + WRITE_AGAIN,
    ),
    "an ill-typed commit": (
        lambda lock: re.sub(rb'commit = "[0-9a-f]+"', b"commit = 5", lock),
        "`commit` of [sources.platform] in profilekit.lock is an integer, not a string\n"
        "    profilekit.lock:8:1: sources.platform.commit\n" + WRITE_AGAIN,
    ),
    "a commit that is no commit id": (
        lambda lock: re.sub(rb'commit = "[0-9a-f]+"', b'commit = "main"', lock),
        "profilekit.lock locks it at 'main', which is not a commit id\n"
        "    profilekit.lock:8:1: sources.platform.commit\n" + WRITE_AGAIN,
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGED_LOCKS), ids=list(DAMAGED_LOCKS))
def test_a_damaged_lock_is_refused_naming_the_source_its_line_and_the_damage(
    platform: Path, tmp_path: Path, run: Run, damage: str
) -> None:
    """`profilekit check qwen` with profilekit.lock damaged: the source, its line of profilekit.toml, where the
    damage is in the lock, and a fix that works (`profilekit lock`, then check again). Never a traceback."""
    root = consumer(tmp_path, "../platform")
    assert run("--repo", root, "lock").code == 0
    lock = root / "profilekit.lock"
    good = lock.read_bytes()
    spoil, expected = DAMAGED_LOCKS[damage]
    lock.write_bytes(spoil(good))
    result = run("--repo", root, "check", "qwen")
    assert (result.code, result.out + result.err) == (
        1,
        "profilekit.toml:4:1: error source-unlocked source 'platform' is not locked: "
        + expected
        + "1 error, 0 warnings\n",
    )
    assert run("--repo", root, "lock").code == 0
    assert lock.read_bytes() == good
    assert run("--repo", root, "check", "qwen").code == 0


def test_a_folder_in_place_of_the_lock_is_refused_naming_the_source(platform: Path, tmp_path: Path, run: Run) -> None:
    """`profilekit check qwen` with a folder named profilekit.lock: the fix says to remove it first (`lock` cannot
    write over a folder)."""
    root = consumer(tmp_path, "../platform")
    (root / "profilekit.lock").mkdir()
    result = run("--repo", root, "check", "qwen")
    assert (result.code, result.out + result.err) == (
        1,
        "profilekit.toml:4:1: error source-unlocked source 'platform' is not locked: profilekit.lock is a folder, "
        "not a file\n"
        "    profilekit.lock:1:1:\n"
        "    fix: remove the folder profilekit.lock, then run `profilekit lock` to write the file\n"
        "1 error, 0 warnings\n",
    )
    (root / "profilekit.lock").rmdir()
    assert run("--repo", root, "lock").code == 0 and run("--repo", root, "check", "qwen").code == 0


def test_a_lock_entry_for_a_source_profilekit_toml_does_not_declare_is_stale(
    platform: Path, tmp_path: Path, run: Run
) -> None:
    """`profilekit check qwen` with a [sources.old] left in profilekit.lock: refused at its line, until `lock`
    drops it; the source that is declared is still read."""
    root = consumer(tmp_path, "../platform")
    assert run("--repo", root, "lock").code == 0
    lock = root / "profilekit.lock"
    good = lock.read_text(encoding="utf-8")
    lock.write_text(good + "\n" + good.split("\n\n", 1)[1].replace("sources.platform", "sources.old"), encoding="utf-8")
    result = run("--repo", root, "check", "qwen")
    assert (result.code, result.out + result.err) == (
        1,
        "profilekit.lock:11:1: error source-lock-stale profilekit.lock locks source 'old', which profilekit.toml "
        "does not declare: the lock was written for another profilekit.toml\n"
        "    fix: run `profilekit lock` to drop 'old' from profilekit.lock (or declare [sources.old] again)\n"
        "1 error, 0 warnings\n",
    )
    dropped = run("--repo", root, "lock")
    assert (dropped.code, dropped.out) == (
        0,
        f"platform: main stays at {short(platform)}\nold: no longer in profilekit.toml, dropped from profilekit.lock\n",
    )
    assert lock.read_text(encoding="utf-8") == good
    assert run("--repo", root, "check", "qwen").code == 0


# ---- offline, and the cache that must not be trusted blindly -------------------------------------


def test_after_lock_every_command_works_offline_from_the_cache(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    platform.rename(tmp_path / "gone")  # the network-facing path: not there any more
    assert run("--repo", root, "check", "qwen").code == 0
    assert run("--repo", root, "render", "qwen", "--out", tmp_path / "out").code == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    base = manifest["layers"][0]
    assert base["name"] == "platform:base"
    assert base["file"] == f"platform@{short(tmp_path / 'gone')}:profiles/base.toml"
    assert base["source"] == {"name": "platform", "git": "../platform", "rev": "main", "commit": locked(root)["commit"]}
    assert "source" not in manifest["layers"][1]


def test_a_locked_commit_that_cannot_be_fetched_names_the_source(
    platform: Path, tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    private = tmp_path / "cache"
    monkeypatch.setenv("PROFILEKIT_CACHE_DIR", str(private))  # this test's own cache: it empties it
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    import shutil

    shutil.rmtree(private)  # a new machine: the lock, an empty cache
    platform.rename(tmp_path / "gone")  # and the source out of reach
    result = run("--repo", root, "check", "qwen")
    assert result.code == 1, result
    commit_id = locked(root)["commit"][:7]
    assert result.err == (
        f"profilekit.toml:4:1: error source-unavailable source 'platform': commit {commit_id} is not in the cache "
        f"and cannot be fetched: '{platform}' does not appear to be a git repository\n"
        "    fix: check the git address and your access to it; `profilekit lock` again if the commit is gone\n"
        "1 error, 0 warnings\n"
    ), result


def _process(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """profilekit as a user runs it: a new process, with its cache (a repeat run may be replayed)."""
    return subprocess.run(
        [sys.executable, "-m", "profilekit", "--repo", str(root), *args], capture_output=True, text=True, check=False
    )


def test_a_cached_copy_changed_by_hand_is_refused_even_on_a_repeat_run(platform: Path, tmp_path: Path) -> None:
    root = consumer(tmp_path, "../platform")
    assert _process(root, "lock").returncode == 0
    import time

    time.sleep(0.1)  # older than the cache's racy window, so the first check is stored
    assert _process(root, "check", "qwen").returncode == 0
    assert _process(root, "check", "qwen").returncode == 0  # answered from the cache
    copy = tree(root)
    base = copy / "profiles" / "base.toml"
    base.write_text(base.read_text().replace("256", "4096"))
    result = _process(root, "check", "qwen")
    assert result.returncode == 1, result
    assert result.stdout + result.stderr == (
        f"profilekit.toml:4:1: error source-tampered source 'platform': the cached copy of platform@"
        f"{short(platform)} ({copy}) changed after it was fetched\n"
        f"    fix: delete {copy} and run again: the locked commit is fetched anew and checked\n"
        "1 error, 0 warnings\n"
    )
    import shutil

    shutil.rmtree(copy)  # what the fix says
    again = _process(root, "explain", "qwen", "max_num_seqs")
    assert again.returncode == 0 and "serve.max_num_seqs = 256" in again.stdout, again


def test_a_lock_whose_digest_was_edited_is_refused_when_the_commit_is_fetched(
    platform: Path, tmp_path: Path, run: Run
) -> None:
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    import shutil

    shutil.rmtree(tree(root))
    lock = root / "profilekit.lock"
    lock.write_text(lock.read_text().replace(locked(root)["hash"], "sha256:" + "0" * 64))
    result = run("--repo", root, "check", "qwen")
    assert result.code == 1, result
    assert "error source-tampered source 'platform': the files of commit" in result.err
    assert "do not match the digest in profilekit.lock" in result.err


# ---- update ----------------------------------------------------------------------------------


def test_lock_keeps_a_locked_commit_and_update_moves_it_with_the_diff_of_every_stack(
    platform: Path, tmp_path: Path, run: Run
) -> None:
    layers = {"qwen": CONSUMER_LAYER, "other": "[serve]\nmodel = 'Qwen/Qwen3-0.6B'\nport = 9000\n"}
    root = consumer(tmp_path, "../platform", layers=layers)
    run("--repo", root, "lock")
    old = short(platform)
    new_commit = commit(
        platform,
        "base: max_num_seqs 128 for the H100 fleet",
        {"profiles/base.toml": BASE.replace("max_num_seqs = 256", "max_num_seqs = 128")},
    )
    new = new_commit[:7]
    again = run("--repo", root, "lock")
    assert again.out == f"platform: main stays at {old}\n", again  # lock never moves a locked source
    result = run("--repo", root, "update")
    assert result.code == 0, result
    assert result.out == (
        f"platform: main moved {old} -> {new} (1 commit)\n"
        f"  {new} base: max_num_seqs 128 for the H100 fleet\n"
        "stack other: no change\n"
        "\n"
        "stack qwen:\n"
        "--- before: qwen\n"
        "+++ after: qwen\n"
        "[serve]\n"
        "  ~ serve.max_num_seqs: 256 -> 128\n"
        f"      before: platform@{old}:profiles/base.toml:7:1  (serve.max_num_seqs, layer platform:base)\n"
        f"      after: platform@{new}:profiles/base.toml:7:1  (serve.max_num_seqs, layer platform:base)\n"
        "  command line:\n"
        "    - --max-num-seqs 256\n"
        "    + --max-num-seqs 128\n"
        "1 role differs: 1 changed, 0 added, 0 removed keys (vLLM 0.33.0)\n"
    )
    assert locked(root)["commit"] == new_commit
    assert "serve.max_num_seqs = 128" in run("--repo", root, "explain", "qwen", "max_num_seqs").out


def test_update_names_what_it_cannot_find(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    typo = run("--repo", root, "update", "plattform")
    assert (typo.code, typo.err) == (
        2,
        "profilekit: error: no source 'plattform' in profilekit.toml\n  hint: did you mean 'platform'?\n",
    )
    config = root / "profilekit.toml"
    config.write_text(config.read_text().replace('rev = "main"', 'rev = "v1.0.1"'))
    result = run("--repo", root, "lock")
    assert result.code == 1, result
    assert result.err == (
        "profilekit.toml:6:1: error source-unavailable source 'platform': rev 'v1.0.1' names no tag, branch or "
        "commit of ../platform\n"
        "    fix: did you mean 'v1.0.0'?\n"
        "1 error, 0 warnings\n"
    )


# ---- what the consumer's lint sees, and the source's own rules ---------------------------------


def test_lint_checks_the_consumer_and_lint_sources_the_sources_own_layers(
    platform: Path, tmp_path: Path, run: Run
) -> None:
    commit(
        platform,
        "nemo with offload",
        {
            "profiles/nemo.toml": """\
            [layer]
            extends = ["replayssm"]

            [serve]
            model = "nvidia/Nemotron-H-8B-Base-8K"
            kv_offloading_size = 8
            mamba_backend = "flashinfer"
            """
        },
    )
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    lint = run("--repo", root, "lint")
    assert (lint.code, lint.out) == (0, "lint: 1 files, 1 stacks checked, no problems found (vLLM 0.33.0)\n"), lint
    deep = run("--repo", root, "lint", "--sources")
    assert deep.code == 1, deep
    assert f"platform@{short(platform)}:profiles/replayssm.toml:7:1: error replayssm-kv-connector" in deep.out
    assert "in stack platform:nemo, role serve" in deep.out


def test_a_source_targeting_another_release_is_reported_at_both_files(platform: Path, tmp_path: Path, run: Run) -> None:
    commit(platform, "target 0.27.0", {"profilekit.toml": '[vllm]\nversion = "0.27.0"\n'})
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    result = run("--repo", root, "check", "qwen")
    assert result.code == 0, result
    at = f"platform@{short(platform)}"
    assert result.out == (
        f"{at}:profilekit.toml:2:1: warning source-config-mismatch source 'platform' targets vLLM 0.27.0, this "
        "repository 0.33.0: its layers were checked with vllm.version = '0.27.0'\n"
        "    profilekit.toml:2:1: vllm.version\n"
        "    fix: agree on vllm.version with the owners of 'platform', or lint the source with "
        "`profilekit lint --sources`\n"
        "0 errors, 1 warning\n"
    )


def test_layers_of_a_source_cannot_be_edited_here(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    before = tree(root) / "profiles" / "base.toml"
    text = before.read_text()
    result = run("--repo", root, "set", "platform:base", "serve.port", "9000")
    assert result.code == 2, result
    assert result.err == (
        f"profilekit: error: layer 'platform:base' is a layer of source 'platform' (platform@{short(platform)}): "
        "sources are read-only here\n"
        "  hint: change it in ../platform and `profilekit update platform`, or set the key in a layer of this "
        "repository that extends it\n"
    )
    assert before.read_text() == text


# ---- sources are data, never code ------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        (
            "https://deploy:s3cr3t-t0ken@git.example.com/ml/profiles.git",
            "the git URL carries credentials (https://***@...): a lock file and every message would repeat them",
        ),
        ("https://ghp_abcdefabcdef@git.example.com/x.git", "the git URL carries credentials (https://***@...)"),
        ("ext::sh -c touch% PWNED", "git transports written as `NAME::ADDRESS` run programs and are not allowed"),
        ("fd::3", "git transports written as `NAME::ADDRESS` run programs and are not allowed"),
        ("sftp://host/x", "git URLs of scheme 'sftp' are not allowed (use https://, ssh://, git:// or file://)"),
        ("--upload-pack=touch PWNED", "a git URL cannot start with '-'"),
    ],
)
def test_addresses_that_carry_credentials_or_run_programs_are_refused(
    address: str, shown: str, tmp_path: Path, run: Run
) -> None:
    root = consumer(tmp_path, address)
    for command in (("lock",), ("check", "qwen")):
        result = run("--repo", root, *command, cwd=tmp_path)
        assert result.code == 1, result
        assert f"profilekit.toml:5:1: error invalid-source source 'platform': {shown}" in result.err, result
        assert "s3cr3t" not in result.out + result.err and "ghp_" not in result.out + result.err
    assert not (tmp_path / "PWNED").exists() and not (root / "PWNED").exists()
    assert not (root / "profilekit.lock").exists()


def test_a_symlink_where_profilekit_reads_refuses_the_source(platform: Path, tmp_path: Path, run: Run) -> None:
    (tmp_path / "secret.toml").write_text("[serve]\nport = 1\n")
    (platform / "profiles" / "evil.toml").symlink_to(tmp_path / "secret.toml")
    git(platform, "add", "-A")
    git(platform, "commit", "-q", "-m", "a symlink out of the tree")
    root = consumer(tmp_path, "../platform")
    result = run("--repo", root, "lock")
    assert result.code == 1, result
    assert result.err.startswith(
        f"profilekit.toml:4:1: error invalid-source source 'platform': profiles/evil.toml in commit "
        f"{short(platform)} is a symlink: sources are read as plain files only\n"
    ), result
    assert not (root / "profilekit.lock").exists()


def test_a_tree_entry_that_climbs_out_is_refused_and_nothing_is_written_outside(
    platform: Path, tmp_path: Path, run: Run
) -> None:
    # git itself refuses to make a `..` entry; a hostile server can send one, so it is written as raw objects
    blob = _blob(platform, b"pwned\n")
    inner = _tree(platform, [(b"100644", b"escape.toml", blob)])
    top = _tree(
        platform, [(b"40000", b"..", inner), (b"40000", b"profiles", git(platform, "rev-parse", "HEAD:profiles"))]
    )
    bad = git(platform, "commit-tree", top, "-p", "HEAD", "-m", "climb out")
    git(platform, "update-ref", "refs/heads/evil", bad)
    root = consumer(tmp_path, "../platform", rev="evil")
    result = run("--repo", root, "lock")
    assert result.code == 1, result
    assert (
        f"error invalid-source source 'platform': commit {bad[:7]} holds '../escape.toml', a path with the part "
        "'..': a source stays in its folder" in result.err
    ), result
    cache = Path(os.environ["PROFILEKIT_CACHE_DIR"])
    assert not list(cache.rglob("escape.toml")) and not (cache / "sources" / "escape.toml").exists()


def _blob(repo: Path, data: bytes) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data, env=env, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


def _tree(repo: Path, entries: list[tuple[bytes, bytes, str]]) -> str:
    raw = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha) for mode, name, sha in entries)
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", "hash-object", "-w", "--literally", "-t", "tree", "--stdin"],
        cwd=repo,
        input=raw,
        env=env,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode().strip()


def test_team_templates_from_a_source_render_in_the_same_sandbox(platform: Path, tmp_path: Path, run: Run) -> None:
    hostile = '#!/bin/bash\n{{ "".__class__.__mro__[1].__subclasses__() }}\n'
    commit(platform, "a hostile launch template", {"templates/launch.sh.j2": hostile})
    root = consumer(tmp_path, "../platform")
    config = root / "profilekit.toml"
    config.write_text(config.read_text() + '\n[render]\ntemplates = "platform:templates"\n')
    run("--repo", root, "lock")
    out = tmp_path / "out"
    result = run("--repo", root, "render", "qwen", "--out", out)
    assert result.code == 1, result
    at = f"platform@{short(platform)}"
    assert result.out.startswith(
        f"{at}:templates/launch.sh.j2:2:1: error template-error template {at}:templates/launch.sh.j2 failed at "
        "line 2: refused by the sandbox: access to attribute '__class__' of 'str' object is unsafe.\n"
    ), result
    assert not out.exists()
    typo = config.read_text().replace('"platform:templates"', '"platfrom:templates"')
    config.write_text(typo)
    wrong = run("--repo", root, "render", "qwen", "--out", out)
    assert (wrong.code, wrong.err) == (
        2,
        "profilekit: error: [render] templates = 'platfrom:templates' names no source 'platfrom' (nor a folder of "
        "this repository)\n  hint: did you mean 'platform'?\n",
    )


def test_a_rev_that_git_would_read_as_an_option_is_refused(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, "../platform", rev="--output=PWNED")
    result = run("--repo", root, "lock", cwd=tmp_path)
    assert result.code == 1, result
    assert result.err.startswith(
        "profilekit.toml:6:1: error invalid-source source 'platform': a rev is a tag, a branch or a commit: "
        "letters, digits and . _ / + -, not starting with '-'\n"
    ), result
    assert not list(tmp_path.rglob("PWNED"))


def test_two_runs_at_once_on_an_empty_cache_both_fetch_a_whole_copy(platform: Path, tmp_path: Path) -> None:
    root = consumer(tmp_path, "../platform")
    env = {**os.environ, "PROFILEKIT_CACHE_DIR": str(tmp_path / "cache-a")}
    subprocess.run([sys.executable, "-m", "profilekit", "--repo", str(root), "lock"], env=env, check=True)
    env["PROFILEKIT_CACHE_DIR"] = str(tmp_path / "cache-b")  # a new machine: the lock, no copy yet
    command = [sys.executable, "-m", "profilekit", "--repo", str(root), "explain", "qwen", "max_num_seqs"]
    runs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in "ab"]
    for proc in runs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.startswith("[serve] serve.max_num_seqs = 256\n"), out
    trees = tmp_path / "cache-b" / "sources" / "trees"
    assert sorted(p.name for p in trees.iterdir()) == sorted(
        [locked(root)["commit"], locked(root)["commit"] + ".digest"]
    )


def test_a_file_of_the_repository_named_like_a_source_layer_is_an_error(
    platform: Path, tmp_path: Path, run: Run
) -> None:
    root = consumer(tmp_path, "../platform")
    write(root, {"profiles/platform:base.toml": "[serve]\nport = 1\n"})
    run("--repo", root, "lock")
    result = run("--repo", root, "lint")
    assert result.code == 1, result
    assert result.out == (
        "profiles/platform:base.toml:1:1: error invalid-layer layer file name 'platform:base' holds ':', which "
        "names a layer of a source (NAME:LAYER, [sources] in profilekit.toml)\n"
        "    in stack qwen\n"
        "    fix: rename the file without ':', e.g. platform-base.toml\n"
        "1 error, 0 warnings\n"
    )


def test_completion_offers_locked_sources_layers_and_source_names_without_fetching(
    platform: Path, tmp_path: Path
) -> None:
    from tests.test_completion import candidates

    root = consumer(tmp_path, "../platform")
    cache = tmp_path / "cache"
    env = {**os.environ, "PROFILEKIT_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-m", "profilekit", "--repo", str(root), "lock"], env=env, check=True)
    words = "profilekit check qwen+platform:"
    assert candidates(words, 2, cwd=root, cache=cache) == ["plain,qwen+platform:base", "plain,qwen+platform:replayssm"]
    assert candidates("profilekit update pl", 2, cwd=root, cache=cache) == ["plain,platform"]
    empty = tmp_path / "empty-cache"  # a commit not fetched yet: nothing offered, nothing fetched
    assert candidates(words, 2, cwd=root, cache=empty) == []
    assert not (empty / "sources").exists()


def test_update_dry_run_in_json_for_a_bot_that_opens_the_pull_request(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    old = locked(root)["commit"]
    new = commit(platform, "base: port 8100", {"profiles/base.toml": BASE.replace("port = 8000", "port = 8100")})
    before = (root / "profilekit.lock").read_text()
    result = run("--repo", root, "update", "platform", "--dry-run", "--format", "json")
    assert result.code == 0, result
    assert result.err == "profilekit.lock left as it was (--dry-run)\n"
    assert (root / "profilekit.lock").read_text() == before
    data = json.loads(result.out)
    assert data["sources"] == [
        {
            "name": "platform",
            "rev": "main",
            "from": old,
            "to": new,
            "moved": True,
            "commits": [f"{new[:7]} base: port 8100"],
        }
    ]
    [stack] = data["stacks"]
    assert (stack["stack"], stack["composes"], stack["equal"]) == ("qwen", True, False)
    [role] = stack["diff"]["roles"]
    [key] = role["keys"]
    assert (key["key"], key["change"], key["a"]["value"], key["b"]["value"]) == ("serve.port", "changed", 8000, 8100)
    assert key["b"]["origin"]["file"] == f"platform@{new[:7]}:profiles/base.toml"


def test_a_commit_as_rev_stays_where_it_is(platform: Path, tmp_path: Path, run: Run) -> None:
    first = git(platform, "rev-parse", "HEAD")
    commit(platform, "later", {"profiles/base.toml": BASE.replace("256", "512")})
    root = consumer(tmp_path, "../platform", rev=first)
    assert run("--repo", root, "lock").out == f"platform: {first} locked at {first[:7]}\n"
    assert run("--repo", root, "update").out == f"platform: {first} stays at {first[:7]}\n"
    assert "serve.max_num_seqs = 256" in run("--repo", root, "explain", "qwen", "max_num_seqs").out


def test_lock_writes_again_a_digest_edited_by_hand_as_its_fix_says(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    digest = locked(root)["hash"]
    lock = root / "profilekit.lock"
    lock.write_text(lock.read_text().replace(digest, "sha256:" + "0" * 64))
    refused = run("--repo", root, "check", "qwen")
    assert refused.code == 1 and "fix: run `profilekit lock` again if profilekit.lock was edited by hand" in refused.err
    assert run("--repo", root, "lock").code == 0, "the fix must work: the intact copy gives the digest again"
    assert locked(root)["hash"] == digest
    assert run("--repo", root, "check", "qwen").code == 0


def test_lock_never_records_a_changed_copy_whichever_rev_leads_to_it(platform: Path, tmp_path: Path, run: Run) -> None:
    root = consumer(tmp_path, "../platform")
    run("--repo", root, "lock")
    base = tree(root) / "profiles" / "base.toml"
    base.write_text(base.read_text().replace("256", "4096"))
    config = root / "profilekit.toml"
    config.write_text(config.read_text().replace('rev = "main"', 'rev = "v1.0.0"'))  # the same commit, another rev
    before = (root / "profilekit.lock").read_text()
    result = run("--repo", root, "lock")
    assert result.code == 1, result
    assert result.err.startswith(
        f"profilekit.toml:4:1: error source-tampered source 'platform': the cached copy of platform@"
        f"{short(platform)} ({tree(root)}) changed after it was fetched\n"
    ), result
    assert (root / "profilekit.lock").read_text() == before
