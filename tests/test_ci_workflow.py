"""The GitHub Actions workflow the README documents: the same bytes as docs/github-workflow.yml, valid against
GitHub's workflow schema (check-jsonschema's built-in copy, no network), and running commands that work."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT, Run

WORKFLOW = REPO_ROOT / "docs" / "github-workflow.yml"


def _section(title: str) -> str:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _check_jsonschema(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_readme_shows_the_workflow_file_byte_for_byte() -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", _section("Use in CI"), flags=re.DOTALL)
    workflows = [block for block in blocks if block.startswith("# .github/workflows/")]
    assert workflows == [WORKFLOW.read_text(encoding="utf-8")]


def test_the_workflow_is_valid_against_githubs_schema(tmp_path: Path) -> None:
    result = _check_jsonschema(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "ok -- validation done"
    # the same validator rejects a workflow GitHub would reject
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text(encoding="utf-8").replace("runs-on:", "runs_on:"), encoding="utf-8")
    rejected = _check_jsonschema(broken)
    assert rejected.returncode == 1
    assert "Schema validation errors were encountered." in rejected.stdout


def test_the_workflow_lints_with_annotations_sarif_and_a_markdown_summary(run: Run) -> None:
    """Each `profilekit` command of the workflow runs on the example repository as written there."""
    text = WORKFLOW.read_text(encoding="utf-8")
    commands = re.findall(r"^\s+run: (profilekit .*)$", text, flags=re.MULTILINE)
    assert [c.split(" >")[0] for c in commands] == [
        "profilekit lint --format markdown",
        "profilekit lint --format sarif",
        "profilekit lint --format github",
    ]
    assert "uses: github/codeql-action/upload-sarif@" in text and "sarif_file: profilekit.sarif" in text
    assert '>> "$GITHUB_STEP_SUMMARY"' in text
    for command in commands:
        args = shlex.split(command.split(" >")[0])[1:]
        result = run(*args, cwd=REPO_ROOT)
        assert result.code == 0, (command, result)
        assert result.err == ""


def test_the_readme_hook_is_the_one_this_repository_provides() -> None:
    hooks = (REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert re.findall(r"^- id: (\S+)$", hooks, flags=re.MULTILINE) == ["profilekit-lint"]
    assert "      - id: profilekit-lint\n" in _section("Use in CI")
