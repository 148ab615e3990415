"""Fixtures for the vLLM oracle suite: one long-lived worker per selected release.

``PROFILEKIT_ORACLE_VERSIONS`` (default ``0.27.0,0.33.0``) selects the
releases. An oracle that cannot be built or started FAILS the tests that need
it; only ``PROFILEKIT_ORACLE=off`` skips them.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from tests.oracle.oracle_client import SUPPORTED_VERSIONS, BuildError, OracleError, OracleWorker

DEFAULT_VERSIONS = "0.27.0,0.33.0"


def selected_versions() -> list[str]:
    raw = os.environ.get("PROFILEKIT_ORACLE_VERSIONS", DEFAULT_VERSIONS)
    versions = [v.strip() for v in raw.replace(" ", ",").split(",") if v.strip()]
    if raw.strip().lower() == "all":
        return list(SUPPORTED_VERSIONS)
    unknown = [v for v in versions if v not in SUPPORTED_VERSIONS]
    if unknown:
        raise pytest.UsageError(
            f"PROFILEKIT_ORACLE_VERSIONS names unsupported vLLM release(s) {', '.join(unknown)}; "
            f"supported: {', '.join(SUPPORTED_VERSIONS)} (or 'all')"
        )
    return versions


class _ForReleases(Protocol):
    @property
    def releases(self) -> str: ...


CaseT = TypeVar("CaseT", bound=_ForReleases)


def applicable(cases: Sequence[CaseT]) -> list[tuple[str, CaseT]]:
    """Each selected release with the cases that apply to it (a case for other releases is not generated)."""
    from packaging.specifiers import SpecifierSet

    return [
        (version, case)
        for version in selected_versions()
        for case in cases
        if not case.releases or SpecifierSet(case.releases).contains(version)
    ]


def oracle_disabled() -> bool:
    return os.environ.get("PROFILEKIT_ORACLE", "").strip().lower() == "off"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "oracle: runs vLLM's real parser and validators (needs an oracle environment)")
    selected_versions()  # a bad PROFILEKIT_ORACLE_VERSIONS is a usage error up front


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not oracle_disabled():
        return
    skip = pytest.mark.skip(reason="PROFILEKIT_ORACLE=off: the vLLM oracle suite is switched off")
    for item in items:
        if item.get_closest_marker("oracle") is not None:
            item.add_marker(skip)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "oracle_version" in metafunc.fixturenames:
        versions = selected_versions()
        metafunc.parametrize("oracle_version", versions, ids=[f"vllm-{v}" for v in versions])


class OraclePool:
    """Starts each release's worker on first use and keeps it for the session."""

    def __init__(self) -> None:
        self._workers: dict[str, OracleWorker] = {}
        self._failures: dict[str, str] = {}

    def get(self, version: str) -> OracleWorker:
        if oracle_disabled():
            pytest.skip("PROFILEKIT_ORACLE=off")
        if version not in selected_versions():
            pytest.skip(f"vLLM {version} is not in PROFILEKIT_ORACLE_VERSIONS")
        if version in self._failures:
            pytest.fail(self._failures[version], pytrace=False)
        worker = self._workers.get(version)
        if worker is None:
            try:
                worker = OracleWorker(version)
            except (BuildError, OracleError, OSError) as exc:
                self._failures[version] = (
                    f"the vLLM {version} oracle could not be built or started: {exc}\n"
                    "Build it with `python3 tools/oracle/build_env.py --versions "
                    f"{version}` (cache: $PROFILEKIT_ORACLE_CACHE or ~/.cache/profilekit-oracle), "
                    "or set PROFILEKIT_ORACLE=off to skip the oracle tests."
                )
                pytest.fail(self._failures[version], pytrace=False)
            self._workers[version] = worker
        return worker

    def close(self) -> None:
        for worker in self._workers.values():
            worker.close()
        self._workers.clear()


@pytest.fixture(scope="session")
def oracle_pool() -> Iterator[OraclePool]:
    pool = OraclePool()
    yield pool
    pool.close()


@pytest.fixture
def oracle(oracle_pool: OraclePool, oracle_version: str) -> OracleWorker:
    """The worker of the release this test instance runs for."""
    return oracle_pool.get(oracle_version)


def verdicts(
    oracle: OracleWorker,
    version: str,
    root: Path,
    *,
    arch: str,
    serve: dict[str, Any],
    env: dict[str, str] | None = None,
) -> tuple[str | None, str | None, str]:
    """(profilekit's verdict, vLLM's verdict, vLLM's message) for one layer serving the dummy `arch` model.

    The layer's `[model] config` is the model's config.json (tests/oracle/models.py), which vLLM gets too;
    vLLM's answer is mapped to a rule id by tools/verdict_common.py `vllm_rule` (None: accepted).
    """
    import json

    import tomlkit

    from profilekit.compose.index import LayerIndex
    from profilekit.compose.merge import compose
    from profilekit.rules import vllm_verdict
    from profilekit.vllm.argv import render_argv
    from profilekit.vllm.catalogue import load_catalogue
    from tests.oracle.models import config_json

    tools = str(Path(__file__).resolve().parents[2] / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    from verdict_common import vllm_rule

    doc = tomlkit.document()
    doc["model"] = {"config": "models/dummy/config.json"}
    doc["serve"] = {"model": f"dummy/{arch}", **serve}
    if env:
        doc["env"] = env
    (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
    (root / "profiles").mkdir(exist_ok=True)
    (root / "profiles" / "s.toml").write_text(tomlkit.dumps(doc), encoding="utf-8")
    config = config_json(arch)
    (root / "models" / "dummy").mkdir(parents=True, exist_ok=True)
    (root / "models" / "dummy" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    catalogue = load_catalogue(version)
    stack = compose(LayerIndex(root, catalogue), "s")
    predicted = vllm_verdict(stack, "serve", version=version, catalogue=catalogue, root=root)
    answer = oracle.validate(
        render_argv(stack.roles["serve"].serve, catalogue), env=dict(env or {}), config_json=config
    )
    assert not answer.get("undecidable"), answer
    message = str(answer.get("error", ""))
    return (None if predicted.accepted else predicted.rule), vllm_rule(answer), message


class GpuOraclePool:
    """GPU-mode workers (vLLM's own CUDA/ROCm platform answering as one declared GPU), keyed by (release, GPU name).

    Each starts once per session on first use; at most `alive` run at once (each holds about 0.5 GB resident; the
    machine has 24 GiB): starting one more closes the least recently used. Six: the GPUs of one release stay up
    while its tests run, and the previous release's are closed as the next one's start.
    """

    def __init__(self, alive: int = 6) -> None:
        self.alive = alive
        self._workers: dict[tuple[str, str], OracleWorker] = {}
        self._failures: dict[tuple[str, str], str] = {}
        # one model-inspection cache per release, shared by its GPU workers and removed at the end of the session
        self._caches: dict[str, str] = {}

    def get(self, version: str, gpu: str) -> OracleWorker:
        from profilekit.hardware import CATALOGUE

        if oracle_disabled():
            pytest.skip("PROFILEKIT_ORACLE=off")
        if version not in selected_versions():
            pytest.skip(f"vLLM {version} is not in PROFILEKIT_ORACLE_VERSIONS")
        key = (version, gpu)
        if key in self._failures:
            pytest.fail(self._failures[key], pytrace=False)
        worker = self._workers.pop(key, None)
        if worker is None:
            while len(self._workers) >= self.alive:
                oldest = next(iter(self._workers))
                self._workers.pop(oldest).close()
            try:
                if version not in self._caches:
                    self._caches[version] = tempfile.mkdtemp(prefix=f"profilekit-oracle-cache-{version}-")
                worker = OracleWorker(version, gpu=CATALOGUE[gpu], vllm_cache=self._caches[version])
            except (BuildError, OracleError, OSError) as exc:
                self._failures[key] = f"the vLLM {version} oracle on {gpu} could not be built or started: {exc}"
                pytest.fail(self._failures[key], pytrace=False)
        self._workers[key] = worker  # most recently used last
        return worker

    def close(self) -> None:
        for worker in self._workers.values():
            worker.close()
        self._workers.clear()
        for folder in self._caches.values():
            shutil.rmtree(folder, ignore_errors=True)
        self._caches.clear()


@pytest.fixture(scope="session")
def gpu_oracle_pool() -> Iterator[GpuOraclePool]:
    pool = GpuOraclePool()
    yield pool
    pool.close()
