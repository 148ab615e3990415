"""Helpers for the rule tests: check one stack of a throwaway repository for a given vLLM release."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from profilekit.errors import Finding
from profilekit.session import Session
from tests.conftest import MakeRepo

Check = Callable[..., list[Finding]]


@pytest.fixture
def check(make_repo: MakeRepo) -> Check:
    """`check(files, stack="s", version="0.33.0", rule=None)`: the findings (of `rule`, when given).

    These tests judge a role on a CUDA GPU host, as profilekit does where no GPU is declared; the `hardware-unknown`
    warning of the platform checks (rules/platforms.py: another GPU of the catalogue would refuse or start the role)
    is left out unless `rule="hardware-unknown"` asks for it (tests/test_platform_checks.py tests it).
    """

    def run(files: dict[str, str], stack: str = "s", version: str = "0.33.0", rule: str | None = None) -> list[Finding]:
        root: Path = make_repo(files, config=f'[vllm]\nversion = "{version}"\n')
        session = Session.open(repo=root, vllm_version=None)
        findings = session.check(session.stack(stack))
        if rule is None:
            findings = [f for f in findings if not _platform_unknown(f)]
        return [f for f in findings if rule is None or f.rule == rule]

    return run


def _platform_unknown(finding: Finding) -> bool:
    return finding.rule == "hardware-unknown" and "'s verdict depends on it" in finding.message


def messages(findings: list[Finding]) -> list[str]:
    return [f.message for f in findings]


def no_config(model: str, version: str = "0.33.0") -> str:
    """`model-facts-missing`'s message for a model whose config.json profilekit does not have."""
    return f"vLLM {version}'s checks against the config.json of model {model!r} did not run: profilekit does not have that file"


def not_checked(findings: list[Finding]) -> list[str]:
    """The checks `model-facts-missing` findings name as not run (their notes, without the `not checked: `)."""
    return [note.removeprefix("not checked: ") for f in findings if f.rule == "model-facts-missing" for note in f.notes]
