"""The README's two set-up commands are the ones CI runs, word for word."""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    head = text.split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", head)


def test_readme_has_exactly_two_setup_commands_near_the_top() -> None:
    commands = readme_commands()
    assert commands == [
        "pip install -e . && profilekit render nemotron-replayssm",
        'pip install -e ".[test]" && python -m pytest',
    ]


def test_ci_runs_both_readme_commands_verbatim() -> None:
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    first, second = readme_commands()
    assert f"readme_first_command() {{ {first}; }}" in ci
    assert f"readme_test_command() {{ {second}; }}" in ci
    assert 'phase "README command 2 (test deps, pytest)" readme_test_command' in ci
