"""`profilekit init`: the scaffold it writes (golden list), its refusals, and that the result lints and renders
clean for every supported vLLM release, passes Taplo through its own `.taplo.toml`, and wires the lint hook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from profilekit import __version__
from profilekit.vllm.versions import SUPPORTED
from tests.conftest import REPO_ROOT, Run

TAPLO = shutil.which("taplo", path=str(Path(sys.executable).parent)) or shutil.which("taplo")
FILES = [
    ".gitignore",
    ".pre-commit-config.yaml",
    ".taplo.toml",
    "README.md",
    "profilekit.schema.json",
    "profilekit.toml",
    "profiles/base.toml",
    "profiles/disaggregated.toml",
    "profiles/models/nemotron-h-8b.toml",
    "profiles/nemotron-offload.toml",
    "profiles/nemotron-pd.toml",
    "profiles/nemotron-replayssm.toml",
    "profiles/offload.toml",
    "profiles/replayssm.toml",
    "profiles/site/example.toml",
]
DEPLOYABLE = ["models/nemotron-h-8b", "nemotron-replayssm", "nemotron-pd", "nemotron-offload"]


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_init_creates_the_folder_and_writes_exactly_the_scaffold(run: Run, tmp_path: Path) -> None:
    result = run("init", "team/profiles-repo", cwd=tmp_path)
    assert result.code == 0, result
    assert result.out == "".join(f"team/profiles-repo/{name}\n" for name in FILES)
    assert result.err == (
        "a profile repository for vLLM 0.33.0 is in team/profiles-repo; next: profilekit --repo team/profiles-repo lint\n"
    )
    root = tmp_path / "team" / "profiles-repo"
    assert _tree(root) == FILES
    config = tomllib.loads((root / "profilekit.toml").read_text(encoding="utf-8"))
    assert config["vllm"] == {"version": SUPPORTED[-1]}  # the newest supported release
    assert config["lint"]["combinations"] == "pairs"
    assert all(oct((root / name).stat().st_mode & 0o777) == "0o644" for name in FILES)


def test_init_defaults_to_the_working_folder(run: Run, tmp_path: Path) -> None:
    result = run("init", cwd=tmp_path)
    assert result.code == 0, result
    assert result.out == "".join(f"{name}\n" for name in FILES)
    assert _tree(tmp_path) == FILES


def test_init_refuses_to_overwrite_listing_every_existing_file_and_writes_nothing(run: Run, tmp_path: Path) -> None:
    (tmp_path / "profiles" / "site").mkdir(parents=True)
    (tmp_path / "profilekit.toml").write_text("# ours\n", encoding="utf-8")
    (tmp_path / "profiles" / "site" / "example.toml").write_text("# ours too\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("unrelated\n", encoding="utf-8")
    result = run("init", ".", cwd=tmp_path)
    assert result.code == 2
    assert result.out == ""
    assert result.err == (
        "profilekit: error: init never overwrites a file, and . already holds 2 files it would write: "
        "profilekit.toml, profiles/site/example.toml; nothing was written\n"
        "  hint: run profilekit init in a new or empty folder, or move those files away\n"
    )
    assert _tree(tmp_path) == ["notes.txt", "profilekit.toml", "profiles/site/example.toml"]
    assert (tmp_path / "profilekit.toml").read_text(encoding="utf-8") == "# ours\n"


def test_init_refuses_a_second_run_in_the_same_folder(run: Run, tmp_path: Path) -> None:
    assert run("init", "repo", cwd=tmp_path).code == 0
    before = {name: (tmp_path / "repo" / name).read_bytes() for name in FILES}
    again = run("init", "repo", cwd=tmp_path)
    assert again.code == 2
    assert f"already holds {len(FILES)} files it would write: {', '.join(FILES)}; nothing was written" in again.err
    assert {name: (tmp_path / "repo" / name).read_bytes() for name in FILES} == before


def test_a_failed_write_removes_every_file_and_folder_init_had_made(run: Run, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "profiles").write_text("a file where init makes a folder\n", encoding="utf-8")
    result = run("init", "repo", cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: cannot write repo/profiles/base.toml: Not a directory; nothing was written\n"
        "  hint: remove what is in the way, or choose another folder\n"
    )
    assert _tree(root) == ["profiles"]


def test_init_into_a_file_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("", encoding="utf-8")
    result = run("init", "taken", cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: taken is a file, not a folder\n  hint: name a new or empty folder: profilekit init DIR\n"
    )


def test_init_refuses_an_unknown_release_and_creates_nothing(run: Run, tmp_path: Path) -> None:
    result = run("init", "repo", "--vllm-version", "0.99.0", cwd=tmp_path)
    assert result.code == 2
    assert result.out == ""
    assert result.err == (
        "profilekit: error: unsupported vLLM version '0.99.0' (from --vllm-version)\n"
        "  hint: supported releases: 0.27.0, 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0\n"
    )
    assert not (tmp_path / "repo").exists()


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_scaffold_lints_clean_and_renders_for_every_release(run: Run, tmp_path: Path, version: str) -> None:
    assert run("--vllm-version", version, "init", "repo", cwd=tmp_path).code == 0
    root = tmp_path / "repo"
    assert tomllib.loads((root / "profilekit.toml").read_text(encoding="utf-8"))["vllm"]["version"] == version
    lint = run("lint", cwd=root)
    assert lint.code == 0, lint
    assert lint.out == f"lint: 9 files, 7 stacks, 6 combinations checked, no problems found (vLLM {version})\n"
    lint_stacks = tomllib.loads((root / "profilekit.toml").read_text(encoding="utf-8"))["lint"]["stacks"]
    for stack in [*DEPLOYABLE, *lint_stacks]:
        rendered = run("render", stack, cwd=root)
        assert rendered.code == 0, (stack, rendered)
    folder = root / "build" / "nemotron-pd+site_example"
    assert sorted(p.name for p in folder.iterdir()) == [
        "decode.env",
        "decode.sh",
        "manifest.json",
        "prefill.env",
        "prefill.sh",
        "proxy.env",
        "proxy.sh",
        "up.sh",
    ]
    assert json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["vllm_version"] == version
    assert "HF_TOKEN=" not in (folder / "prefill.env").read_text(encoding="utf-8")  # a secret is never written


def test_replayssm_is_declared_exclusive_with_both_kv_connector_layers(run: Run, tmp_path: Path) -> None:
    assert run("init", "repo", cwd=tmp_path).code == 0
    root = tmp_path / "repo"
    for other in ("nemotron-pd", "nemotron-offload"):
        result = run("check", f"nemotron-replayssm+{other}", cwd=root)
        assert result.code == 1, result
        assert " error declared-conflict " in result.out
        assert "replayssm-kv-connector" in result.out


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_every_file_init_writes_passes_taplo_through_its_own_taplo_toml(run: Run, tmp_path: Path, version: str) -> None:
    """`.taplo.toml` maps profiles/**/*.toml to the written schema: an editor opening the folder validates layers."""
    assert TAPLO is not None, "taplo is a test dependency (pip install -e '.[test]')"
    assert run("--vllm-version", version, "init", "repo", cwd=tmp_path).code == 0
    root = tmp_path / "repo"
    taplo = [TAPLO, "check", "--colors", "never"]  # no --default-schema-catalogs: nothing is fetched
    clean = subprocess.run([*taplo], cwd=root, capture_output=True, text=True, check=False, timeout=120)
    assert clean.returncode == 0, clean.stderr
    assert "found files total=11" in clean.stderr  # the 9 layers, profilekit.toml and .taplo.toml itself
    layers = sorted(str(p) for p in (root / "profiles").rglob("*.toml"))
    schema = (root / "profilekit.schema.json").as_uri()
    explicit = [*taplo, "--no-auto-config", "--schema", schema, *layers]
    given = subprocess.run(explicit, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120)
    assert given.returncode == 0, given.stderr
    assert "found files total=9" in given.stderr
    layer = root / "profiles" / "base.toml"
    layer.write_text(layer.read_text(encoding="utf-8").replace("port = 8000", "prot = 8000"), encoding="utf-8")
    broken = subprocess.run([*taplo], cwd=root, capture_output=True, text=True, check=False, timeout=120)
    assert broken.returncode == 1
    assert "error: Additional properties are not allowed ('prot' was unexpected)" in broken.stderr


def test_every_layer_init_writes_passes_jsonschema_and_the_schema_is_the_releases(run: Run, tmp_path: Path) -> None:
    assert run("--vllm-version", "0.29.0", "init", "repo", cwd=tmp_path).code == 0
    root = tmp_path / "repo"
    written = (root / "profilekit.schema.json").read_text(encoding="utf-8")
    assert written == run("schema", cwd=root).out  # `profilekit schema` in the repository writes it again
    validator = Draft202012Validator(json.loads(written))
    for path in sorted((root / "profiles").rglob("*.toml")):
        errors = [e.message for e in validator.iter_errors(tomllib.loads(path.read_text(encoding="utf-8")))]
        assert errors == [], path


def test_the_pre_commit_config_uses_the_lint_hook_this_repository_ships(run: Run, tmp_path: Path) -> None:
    assert run("init", "repo", cwd=tmp_path).code == 0
    config = tmp_path / "repo" / ".pre-commit-config.yaml"
    text = config.read_text(encoding="utf-8")
    assert f"    rev: v{__version__}\n    hooks:\n      - id: profilekit-lint\n" in text
    assert "- id: profilekit-lint\n" in (REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-config", str(config)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")},
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_gitignore_keeps_rendered_output_out_of_git(run: Run, tmp_path: Path) -> None:
    assert run("init", "repo", cwd=tmp_path).code == 0
    root = tmp_path / "repo"
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True, timeout=60)
    ignored = subprocess.run(
        [*git, "check-ignore", "build/nemotron-pd/prefill.sh", "profiles/base.toml"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert ignored.stdout == "build/nemotron-pd/prefill.sh\n"
