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
    """`check(files, stack="s", version="0.33.0", rule=None)`: the findings (of `rule`, when given)."""

    def run(files: dict[str, str], stack: str = "s", version: str = "0.33.0", rule: str | None = None) -> list[Finding]:
        root: Path = make_repo(files, config=f'[vllm]\nversion = "{version}"\n')
        session = Session.open(repo=root, vllm_version=None)
        findings = session.check(session.stack(stack))
        return [f for f in findings if rule is None or f.rule == rule]

    return run


def messages(findings: list[Finding]) -> list[str]:
    return [f.message for f in findings]
