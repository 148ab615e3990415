"""profilekit's verdict equals vLLM's on declared GPUs, judged by vLLM's own CUDA/ROCm platform (issue 27, item 4).

The oracle's GPU mode (tools/oracle/gpu_platform.py) runs the release's `NvmlCudaPlatform` or `RocmPlatform` with
only the device queries answering as the declared GPU. Proven here:

- the worker really is that GPU: vLLM's `current_platform` inside it answers the GPU's name, capability, memory
  and platform kind, and vLLM's batch defaults on it refuse or accept `--max-num-seqs` as on that GPU;
- live, a deterministic slice of the corpora of tools/gpu_report.py per release: each GPU judges a different
  residue of every corpus (a 1/24 slice, offset by release: the supported releases together cover every residue),
  and profilekit must equal vLLM on every decided case (no false reject, no false accept, no other rule);
- the committed tests/oracle/results/gpu-X.json (the whole corpora, `python3 tools/gpu_report.py`) shows 100 %
  agreement for every release and GPU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from profilekit.hardware import CATALOGUE
from tests.oracle.conftest import GpuOraclePool, selected_versions
from tests.oracle.models import config_json
from tests.oracle.oracle_client import SUPPORTED_VERSIONS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import gpu_report

RESULTS = Path(__file__).parent / "results"
PARTS = 24  # each GPU of a release judges one residue of 24: the six GPUs cover a quarter of every corpus
pytestmark = pytest.mark.oracle


def _cases() -> list[tuple[str, str, int]]:
    return [
        (version, gpu, (6 * SUPPORTED_VERSIONS.index(version) + index) % PARTS)
        for version in selected_versions()
        for index, gpu in enumerate(gpu_report.GPUS)
    ]


@pytest.mark.parametrize("version", selected_versions())
@pytest.mark.parametrize("gpu", ["H100-SXM-80GB", "MI300X"])
def test_gpu_mode_answers_as_the_declared_gpu(gpu_oracle_pool: GpuOraclePool, version: str, gpu: str) -> None:
    worker = gpu_oracle_pool.get(version, gpu)
    declared = CATALOGUE[gpu]
    answers = worker.request({"op": "info"})["platform_answers"]
    rocm = declared.platform == "rocm"
    assert answers["class"] == ("OracleRocmPlatform" if rocm else "OracleNvmlCudaPlatform")
    assert answers["bases"][0] == (
        "vllm.platforms.rocm.RocmPlatform" if rocm else "vllm.platforms.cuda.NvmlCudaPlatform"
    )
    assert (answers["is_cuda"], answers["is_rocm"], answers["is_cpu"]) == (not rocm, rocm, False)
    assert answers["capability"] == list(declared.capability)
    assert answers["total_memory"] == declared.memory_bytes
    # vLLM's ROCm platform names an MI300X by its asic id (_ROCM_DEVICE_ID_NAME_MAP), with underscores
    assert answers["device_name"] == (declared.device_name.replace(" ", "_") if rocm else declared.device_name)
    assert answers["device_count"] == answers["torch_cuda_device_count"] == 8
    assert answers["supports_bfloat16"] is True


def _refused_with(worker: object, argv: list[str], message: str | None) -> None:
    answer = worker.validate(argv, config_json=config_json("LlamaForCausalLM"))  # type: ignore[attr-defined]
    assert not answer.get("undecidable"), answer
    if message is None:
        assert answer["ok"] is True, answer
    else:
        assert answer["ok"] is False and answer["error"] == message, answer


@pytest.mark.parametrize("version", selected_versions())
def test_batch_defaults_are_the_gpus_own(gpu_oracle_pool: GpuOraclePool, version: str) -> None:
    """vLLM's get_batch_defaults on its own platform: 2048 tokens on an L40S (45 GiB), 8192 on an H100 (79.6 GiB),
    from 0.28.0 16384 on a B200 (179 GiB; 8192 in 0.27.x)."""
    seqs_5000 = ["dummy/bare", "--max-num-seqs", "5000"]
    seqs_10000 = ["dummy/bare", "--max-num-seqs", "10000"]
    _refused_with(
        gpu_oracle_pool.get(version, "L40S"),
        seqs_5000,
        "max_num_batched_tokens (2048) must be greater than or equal to max_num_seqs (5000).",
    )
    h100 = gpu_oracle_pool.get(version, "H100-SXM-80GB")
    _refused_with(h100, seqs_5000, None)
    _refused_with(
        h100, seqs_10000, "max_num_batched_tokens (8192) must be greater than or equal to max_num_seqs (10000)."
    )
    b200_refuses = version < "0.28.0"
    _refused_with(
        gpu_oracle_pool.get(version, "B200"),
        seqs_10000,
        "max_num_batched_tokens (8192) must be greater than or equal to max_num_seqs (10000)."
        if b200_refuses
        else None,
    )


@pytest.mark.parametrize("version", selected_versions())
def test_the_worker_start_dtype_check_is_vllms(gpu_oracle_pool: GpuOraclePool, version: str) -> None:
    """After the engine config the GPU worker checks the dtype (gpu_worker.py init_device,
    `check_if_supports_dtype`): bf16 stops a T4 (capability 7.5), an A100 starts it."""
    argv = ["dummy/bare", "--dtype", "bfloat16"]
    _refused_with(
        gpu_oracle_pool.get(version, "T4"),
        argv,
        "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute "
        "capability 7.5. You can use float16 instead by explicitly setting the `dtype` flag in CLI, for example: "
        "--dtype=half.",
    )
    _refused_with(gpu_oracle_pool.get(version, "A100-SXM4-80GB"), argv, None)


@pytest.mark.parametrize(("version", "gpu", "part"), _cases(), ids=[f"vllm-{v}-{g}-{p}" for v, g, p in _cases()])
def test_profilekit_gives_vllms_verdict_on_a_slice_of_the_corpora(
    gpu_oracle_pool: GpuOraclePool, version: str, gpu: str, part: int
) -> None:
    outcomes = gpu_report.run(version, gpu, gpu_oracle_pool.get(version, gpu), part=part, parts=PARTS)
    for corpus, outcome in outcomes.items():
        assert outcome.unexplained == [], (corpus, outcome.unexplained[:5])
        assert gpu_report.false_rejects(outcome) == [], (corpus, gpu_report.false_rejects(outcome)[:5])
        assert gpu_report.false_accepts(outcome) == [], (corpus, gpu_report.false_accepts(outcome)[:5])
        assert outcome.disagreements == [], (corpus, [(d["case"], d["reason"]) for d in outcome.disagreements[:10]])
        assert outcome.decided > 0 or corpus == "launches", corpus


@pytest.mark.parametrize("version", selected_versions())
def test_the_committed_results_agree_on_every_gpu(version: str) -> None:
    path = RESULTS / f"gpu-{version}.json"
    assert path.is_file(), f"run `python3 tools/gpu_report.py --versions {version}`"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert sorted(data["gpus"]) == sorted(gpu_report.GPUS)
    # every decided case of every GPU: vLLM's verdict, by the same rule (the undecidable ones say why)
    for gpu, row in data["gpus"].items():
        assert row["decided"] > 0, gpu
        assert row["agreements"] == row["decided"], (gpu, row["false_rejects"], row["false_accepts"], row["wrong_rule"])
        assert row["false_rejects"] == row["false_accepts"] == row["wrong_rule"] == 0, (gpu, row)
