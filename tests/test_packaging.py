"""A built wheel (not the editable checkout) carries its templates and catalogues and renders."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import REPO_ROOT


def test_wheel_ships_templates_and_catalogues_and_renders(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(REPO_ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("profilekit-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "profilekit/templates/launch.sh.j2" in names
    assert "profilekit/templates/role.env.j2" in names
    assert "profilekit/templates/up.sh.j2" in names
    assert "profilekit/vllm/catalogues/vllm-0.33.0.json" in names

    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = (
        "import profilekit, sys; assert profilekit.__file__.startswith(sys.argv[1]), profilekit.__file__; "
        "from profilekit.cli import main; raise SystemExit(main(sys.argv[2:]))"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(target),
            "--repo",
            str(REPO_ROOT),
            "render",
            "nemotron-replayssm",
            "--out",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "serve.env", "serve.sh"]
    assert "exec vllm serve nvidia/Nemotron-H-8B-Base-8K" in (out / "serve.sh").read_text(encoding="utf-8")
    assert "profilekit/templates/init/dot-gitignore" in names  # the scaffold of `profilekit init`
    assert "profilekit/templates/init/profiles/base.toml" in names

    scaffold = subprocess.run(
        [sys.executable, "-c", code, str(target), "init", str(tmp_path / "new-repo")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert scaffold.returncode == 0, scaffold.stderr
    assert (tmp_path / "new-repo" / ".gitignore").read_text(encoding="utf-8").endswith("build/\n")
    assert len(scaffold.stdout.splitlines()) == 15
