"""Shared fixtures: throwaway profile repositories and an in-process CLI runner."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from profilekit.cli import main

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The `profilekit` processes tests start keep their cache in a folder of the test session, not the user's."""
    import os

    os.environ["PROFILEKIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("profilekit-cache"))


@dataclass
class Result:
    code: int
    out: str
    err: str

    def __str__(self) -> str:  # shown by pytest when an assertion on the result fails
        return f"exit {self.code}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


MakeRepo = Callable[..., Path]


@pytest.fixture
def make_repo(tmp_path: Path) -> MakeRepo:
    """Write `profilekit.toml` and layer files (dedented) into a fresh folder and return it."""

    def make(files: dict[str, str], *, config: str = '[vllm]\nversion = "0.33.0"\n') -> Path:
        root = tmp_path / "repo"
        root.mkdir(exist_ok=True)
        (root / "profilekit.toml").write_text(config, encoding="utf-8")
        (root / "profiles").mkdir(exist_ok=True)
        for name, text in files.items():
            path = root / name if "/" in name and name.startswith(("profiles/", "team")) else root / "profiles" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return root

    return make


Run = Callable[..., Result]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """Run the CLI in-process with a working directory; return exit code and captured output."""

    def invoke(*args: str | Path, cwd: Path | None = None) -> Result:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def stub_bin(tmp_path: Path) -> Path:
    """A `vllm` and a `vllm-router` on PATH that record their argv and environment as JSON."""
    folder = tmp_path / "bin"
    folder.mkdir()
    recorder = (
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "with open(os.environ['STUB_RECORD'], 'w', encoding='utf-8') as f:\n"
        "    json.dump({'argv': sys.argv, 'env': dict(os.environ)}, f)\n"
    )
    for name in ("vllm", "vllm-router"):
        path = folder / name
        path.write_text(recorder, encoding="utf-8")
        path.chmod(0o755)
    return folder
