"""The oracle's verdict does not depend on the CPU it runs on.

vLLM's CPU platform rewrites the configuration it is given, partly by CPU
feature: without AMX it turns prefix caching and chunked prefill off for MLA
models, with AVX-512 BF16 it resets the Mamba SSM cache dtype, on RISC-V it
turns both off for every model. The worker replaces those hooks by a GPU
host's (tools/oracle/README.md, "Judging as a GPU host"). Here every
known-answer case runs on workers whose CPU-feature probes are forced to
opposite answers, and must get the answers a GPU host gives; a control run
with the CPU platform's own hooks shows that the forced probes do change
vLLM's verdict, so the equality above is the neutralisation's doing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.oracle.conftest import oracle_disabled, selected_versions
from tests.oracle.oracle_client import OracleWorker
from tests.oracle.test_oracle_worker import CASES_0_27_0, CASES_0_33_0, Case, check, run

pytestmark = pytest.mark.oracle

CASES = {"0.27.0": CASES_0_27_0, "0.33.0": CASES_0_33_0}

# Two CPUs as far apart as the probes go: a many-core Xeon with AMX and AVX-512
# BF16, and a small RISC-V part with neither.
FORCED_CPUS = {
    "xeon-amx": "amx=1,avx512_bf16=1,avx512=1,arch=x86_64,cores=96",
    "riscv-plain": "amx=0,avx512_bf16=0,avx512=0,arch=riscv64,cores=2",
}
FORCE = "PROFILEKIT_ORACLE_FORCE_CPU"
RAW = "PROFILEKIT_ORACLE_RAW_CPU_HOOKS"


def _versions() -> list[str]:
    return [v for v in selected_versions() if v in CASES]


@pytest.fixture(
    scope="module", params=[(v, cpu) for v in _versions() for cpu in FORCED_CPUS], ids=lambda p: f"{p[0]}-{p[1]}"
)
def forced_worker(request: pytest.FixtureRequest) -> Iterator[tuple[str, OracleWorker]]:
    if oracle_disabled():
        pytest.skip("PROFILEKIT_ORACLE=off")
    version, cpu = request.param
    with OracleWorker(version, extra_env={FORCE: FORCED_CPUS[cpu]}) as worker:
        yield FORCED_CPUS[cpu], worker


def test_forced_probes_are_in_effect_and_hooks_neutralised(forced_worker: tuple[str, OracleWorker]) -> None:
    probes, worker = forced_worker
    hello = worker.hello
    assert hello["forced_cpu"] == dict(item.split("=") for item in probes.split(","))
    assert [entry.split(" ->")[0] for entry in hello["neutralised"]] == [
        "CpuPlatform.check_and_update_config",
        "CpuPlatform.get_cpu_architecture",
        "CpuPlatform.supported_dtypes",
        "vllm/config/parallel.py current_platform.is_cuda_alike",
        "vllm/engine/arg_utils.py current_platform.is_cuda",
        "EngineArgs.get_batch_defaults",
    ]


def test_every_known_answer_is_the_gpu_hosts(forced_worker: tuple[str, OracleWorker]) -> None:
    _probes, worker = forced_worker
    version = worker.version
    wrong: dict[str, str] = {}
    for case in CASES[version]:
        try:
            check(run(worker, case), case)
        except AssertionError as exc:
            wrong[case.id] = str(exc)[:400]
    assert wrong == {}


KIMI_MLA = next(c for c in CASES_0_33_0 if c.id == "kimi-spec-v1-runner")
PREFIX_CACHING_LOST = "--mamba-block-size can only be set with --enable-prefix-caching"


def _raw(case: Case, probes: str) -> dict[str, object]:
    with OracleWorker("0.33.0", extra_env={FORCE: probes, RAW: "1"}) as worker:
        assert worker.hello["neutralised"] == []
        return run(worker, case)


@pytest.mark.skipif("0.33.0" not in selected_versions(), reason="the control case is a 0.33.0 Kimi (MLA) case")
def test_control_cpu_hooks_make_the_verdict_depend_on_amx() -> None:
    """Without the neutralisation, the AMX probe alone flips vLLM's answer for a Kimi (MLA) model."""
    if oracle_disabled():
        pytest.skip("PROFILEKIT_ORACLE=off")
    with_amx = _raw(KIMI_MLA, "amx=1")
    without_amx = _raw(KIMI_MLA, "amx=0")
    check(with_amx, KIMI_MLA)
    assert without_amx["ok"] is False
    assert PREFIX_CACHING_LOST in str(without_amx["error"])
