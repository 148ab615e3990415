"""`lint` with its unit cache (profilekit.lint.cache) reports exactly what a lint without it reports.

After each edit a user makes (a value, an error, a capability, a new layer, a model's config.json), the cached
lint and `lint --no-cache` must print the same report; and what did not change is not checked again.
Real processes, a generated repository of realistic shape (bench/lint_repo.py), a cache folder of its own.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
from lint_repo import generate


def lint(root: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PROFILEKIT_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "profilekit", "lint", "--format", "json", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def same_as_without_cache(root: Path, cache: Path, *args: str) -> dict[str, object]:
    cached = lint(root, cache, *args)
    fresh = lint(root, cache, "--no-cache", *args)
    assert (cached.returncode, cached.stdout, cached.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    report: dict[str, object] = json.loads(cached.stdout)
    return report


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    then = time.time() - 60  # not "changed as the lint began", which is checked but never stored
    os.utime(path, (then, then))


def rules(report: dict[str, object]) -> set[str]:
    return {str(f["rule"]) for f in report["findings"]}  # type: ignore[attr-defined, index]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    generate(root, 60)
    then = time.time() - 60
    for path in root.rglob("*.toml"):
        os.utime(path, (then, then))
    return root


def pack(cache: Path) -> bytes:
    [entry] = [p for p in (cache / "lint").rglob("*") if p.is_file() and not p.name.startswith(".")]
    return entry.read_bytes()


def test_every_edit_gives_the_report_a_lint_without_the_cache_gives(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert rules(same_as_without_cache(repo, cache)) == set()
    deploy = sorted((repo / "profiles/deploy").glob("*.toml"))[0]

    edit(deploy, "max_num_seqs = ", "max_num_seq = ")  # a typo: the file's and its stack's findings
    assert "unknown-option" in rules(same_as_without_cache(repo, cache))
    edit(deploy, "max_num_seq = ", "max_num_seqs = ")
    assert rules(same_as_without_cache(repo, cache)) == set()

    edit(repo / "profiles/base.toml", "[serve]", '[serve]\nkv_transfer_config = "not json"')  # every stack
    broken = same_as_without_cache(repo, cache)
    assert rules(broken) - {"invalid-value"} == set() and rules(broken)
    edit(repo / "profiles/base.toml", '[serve]\nkv_transfer_config = "not json"', "[serve]")

    extends = deploy.read_text(encoding="utf-8").split("extends = ")[1].split("\n")[0]
    edit(deploy, f"extends = {extends}", 'extends = ["models/nosuch"]')  # names a layer that is not there
    assert "unknown-layer" in rules(same_as_without_cache(repo, cache))
    (repo / "profiles/models/nosuch.toml").write_text('[layer]\ngroup = "model"\n', encoding="utf-8")
    os.utime(repo / "profiles/models/nosuch.toml", (time.time() - 60,) * 2)
    assert "unknown-layer" not in rules(same_as_without_cache(repo, cache))


def test_an_extends_cycle_made_and_mended_gives_the_report_a_lint_without_the_cache_gives(
    repo: Path, tmp_path: Path
) -> None:
    """Stack keys are built from each layer's closure key: a cycle has none, and mending it keys them again."""
    cache = tmp_path / "cache"
    assert rules(same_as_without_cache(repo, cache)) == set()
    deploy = sorted((repo / "profiles/deploy").glob("*.toml"))[0]
    name = deploy.relative_to(repo / "profiles").with_suffix("").as_posix()
    extends = deploy.read_text(encoding="utf-8").split("extends = ")[1].split("\n")[0]
    edit(deploy, f"extends = {extends}", f'extends = ["{name}"]')
    assert rules(same_as_without_cache(repo, cache)) == {"extends-cycle"}
    edit(deploy, f'extends = ["{name}"]', f"extends = {extends}")
    assert rules(same_as_without_cache(repo, cache)) == set()


def test_a_capability_provided_elsewhere_changes_another_files_findings(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    user = repo / "profiles/features/uses-fast-disk.toml"
    user.write_text('[layer]\nabstract = true\nrequires = ["@fast-disk"]\n', encoding="utf-8")
    os.utime(user, (time.time() - 60,) * 2)
    assert "unknown-capability" in rules(same_as_without_cache(repo, cache))
    edit(repo / "profiles/base.toml", "[layer]", '[layer]\nprovides = ["fast-disk"]')
    assert "unknown-capability" not in rules(same_as_without_cache(repo, cache))


def test_a_models_config_json_is_an_input_of_the_lint(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    config = repo / "models/tiny/config.json"
    config.parent.mkdir(parents=True)
    facts = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "max_position_embeddings": 8192}
    config.write_text(json.dumps(facts), encoding="utf-8")
    local = repo / "profiles/deploy/local.toml"
    local.write_text('[layer]\nextends = ["base"]\n\n[serve]\nmodel = "models/tiny"\nmax_model_len = 4096\n')
    for path in (config, local):
        os.utime(path, (time.time() - 60,) * 2)
    assert "max-model-len-positions" not in rules(same_as_without_cache(repo, cache))
    facts["max_position_embeddings"] = 1024
    config.write_text(json.dumps(facts), encoding="utf-8")
    assert "max-model-len-positions" in rules(same_as_without_cache(repo, cache))


def test_the_config_json_of_a_models_entry_is_an_input_of_the_lint(repo: Path, tmp_path: Path) -> None:
    """`[models."ORG/NAME"]` names a file no layer reads: the pack is keyed on it (there, changed, gone, back)."""
    cache = tmp_path / "cache"
    config = repo / "models/tiny.json"
    config.parent.mkdir(parents=True)
    facts = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "max_position_embeddings": 8192}
    config.write_text(json.dumps(facts), encoding="utf-8")
    with (repo / "profilekit.toml").open("a", encoding="utf-8") as toml:
        toml.write('\n[models."acme/tiny"]\nconfig = "models/tiny.json"\n')
    local = repo / "profiles/deploy/tiny.toml"
    local.write_text('[layer]\nextends = ["base"]\n\n[serve]\nmodel = "acme/tiny"\nmax_model_len = 4096\n')
    for path in (config, local, repo / "profilekit.toml"):
        os.utime(path, (time.time() - 60,) * 2)
    assert rules(same_as_without_cache(repo, cache)) == set()
    facts["max_position_embeddings"] = 1024
    config.write_text(json.dumps(facts), encoding="utf-8")
    os.utime(config, (time.time() - 60,) * 2)
    assert rules(same_as_without_cache(repo, cache)) == {"max-model-len-positions"}
    config.unlink()
    assert rules(same_as_without_cache(repo, cache)) == {"model-config", "model-facts-missing"}
    config.write_text(json.dumps(facts), encoding="utf-8")
    os.utime(config, (time.time() - 60,) * 2)
    assert rules(same_as_without_cache(repo, cache)) == {"max-model-len-positions"}


def test_a_lint_with_another_selection_reuses_every_unit(repo: Path, tmp_path: Path) -> None:
    """The units hold every finding: `--ignore` chooses among them, so it reads no layer again and reports what a
    lint without the cache reports."""
    cache = tmp_path / "cache"
    local = repo / "profiles/deploy/unknown.toml"
    local.write_text('[layer]\nextends = ["base"]\n\n[serve]\nmodel = "acme/unknown"\nmax_model_len = 4096\n')
    os.utime(local, (time.time() - 60,) * 2)
    assert rules(same_as_without_cache(repo, cache)) == {"model-facts-missing"}
    ignored = same_as_without_cache(repo, cache, "--ignore", "model-facts-missing")
    assert (rules(ignored), ignored["summary"]) == (
        set(),
        {"errors": 0, "warnings": 0, "ignored": 1, "ignored_by_rule": {"model-facts-missing": 1}},
    )
    assert rules(same_as_without_cache(repo, cache)) == {"model-facts-missing"}
    assert loaded_by_lint(repo, cache, "--select", "undeclared-conflict") == []


def loaded_by_lint(repo: Path, cache: Path, *args: str) -> list[str]:
    """The layers a lint in a process of its own loads (parses and validates)."""
    env = {**os.environ, "PROFILEKIT_CACHE_DIR": str(cache)}
    probe = (
        "import sys, profilekit.load.layers as l\n"
        "real = l.load_layer\n"
        "loaded = []\n"
        "def spy(root, name, *a, **k):\n"
        "    loaded.append(name); return real(root, name, *a, **k)\n"
        "l.load_layer = spy\n"
        "import profilekit.compose as c; c.load_layer = spy\n"
        "from profilekit.cli.run import run\n"
        f"code = run(['lint', *{list(args)!r}])\n"
        "print('LOADED', sorted(loaded), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=repo, env=env, capture_output=True, text=True, check=False)
    found: list[str] = ast.literal_eval(done.stderr.split("LOADED ")[1].strip())
    return found


def test_an_unchanged_repository_reads_no_layer_again(repo: Path, tmp_path: Path) -> None:
    """What did not change is not parsed again: a layer made unreadable after the lint is not noticed."""
    cache = tmp_path / "cache"
    lint(repo, cache)
    deploy = sorted((repo / "profiles/deploy").glob("*.toml"))[0]
    edit(deploy, "max_num_seqs = ", "max_num_seqs = 1")
    loaded = loaded_by_lint(repo, cache)
    # the edited deployment and its `extends` closure (site, hardware, model, base), not the other 55 files
    assert "deploy/" + deploy.stem in loaded and "base" in loaded and len(loaded) == 5, loaded


def test_no_secret_reaches_the_lint_cache(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    token = "sk-live-" + "Q8zR2mK5tW9xV3nB"
    edit(repo / "profiles/base.toml", "[serve]", f'[serve]\napi_key = "{token}"')
    found = same_as_without_cache(repo, cache)
    assert "literal-secret" in rules(found)
    assert token.encode() not in pack(cache)
