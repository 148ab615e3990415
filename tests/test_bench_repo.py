"""The lint benchmark's generated repositories (bench/lint_repo.py) are what the benchmark claims to time:
real layers that lint clean alone, `extends` chains four deep, and a few real undeclared conflicts that
`--combinations pairs` must find."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT, Run

sys.path.insert(0, str(REPO_ROOT / "bench"))
from lint_repo import generate


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.toml"))}


def test_the_same_seed_gives_the_same_repository(tmp_path: Path) -> None:
    assert generate(tmp_path / "a", 80) == 80
    generate(tmp_path / "b", 80)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert len(list((tmp_path / "a" / "profiles").rglob("*.toml"))) == 80


def test_a_generated_repository_lints_clean_alone_and_its_real_conflicts_show_in_pairs(
    tmp_path: Path, run: Run
) -> None:
    root = tmp_path / "repo"
    generate(root, 50)
    alone = run("lint", cwd=root)
    assert alone.code == 0, alone
    assert alone.out.startswith("lint: 50 files, 31 stacks checked, no problems found"), alone.out
    deploy = (root / "profiles" / "deploy" / "fast-first-hybrid-0.toml").read_text(encoding="utf-8")
    assert 'extends = ["models/m0", "site/dc0", "features/replayssm-2"]' in deploy
    pairs = run("lint", "--combinations", "pairs", cwd=root)
    assert pairs.code == 0, pairs  # warnings only
    warned = [line for line in pairs.out.splitlines() if " warning undeclared-conflict " in line]
    assert len(warned) == 5, pairs.out
    assert any("'deploy/fast-first-hybrid-0'" in line and "replayssm-kv-connector" in line for line in warned), warned


def test_extends_chains_run_four_deep(tmp_path: Path, run: Run) -> None:
    root = tmp_path / "repo"
    generate(root, 50)
    shown = run("show", "deploy/d1", "--format", "json", cwd=root)
    assert shown.code == 0, shown
    layers = json.loads(shown.out)["layers"]
    # deploy -> site -> hw -> base, plus the model and the feature
    assert layers == ["base", "models/m1", "hw/h200", "site/dc1", "features/disagg-1", "deploy/d1"]
