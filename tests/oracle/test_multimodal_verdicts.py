"""profilekit gives vLLM's verdict on the multimodal options (rules/multimodal.py), for a multimodal model and a
text-only one (which ignores them), on the dummy PaliGemma model of tests/oracle/models.py; and on sampling replay
for a diffusion model (a config.json with canvas_length, rules/outputs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import LLAMA, Case
from tests.oracle.test_parallel_verdicts import _verdicts

PALIGEMMA = "PaliGemmaForConditionalGeneration"
SPAWN = {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
FP8 = {"mm_encoder_attn_dtype": "fp8"}

CASES = [
    Case("mm-plain", None, PALIGEMMA, {}),
    # MultiModalConfig's field validator (rules/options.py, for a multimodal config.json)
    Case("xformers", "invalid-value", PALIGEMMA, {"mm_encoder_attn_backend": "XFORMERS"}),
    Case("xformers-text-only", None, LLAMA, {"mm_encoder_attn_backend": "XFORMERS"}),
    # MultiModalConfig._validate_multimodal_config
    Case("shm-size-lru", "mm-shm-cache-object-size", PALIGEMMA, {"mm_shm_cache_max_object_size_mb": 64}),
    Case(
        "shm-size-shm",
        None,
        PALIGEMMA,
        {"mm_shm_cache_max_object_size_mb": 64, "mm_processor_cache_type": "shm"},
    ),
    Case("shm-size-default", None, PALIGEMMA, {"mm_shm_cache_max_object_size_mb": 128}),
    Case("shm-size-text-only", None, LLAMA, {"mm_shm_cache_max_object_size_mb": 64}),
    Case("fp8-path-no-dtype", "mm-encoder-fp8-scale", PALIGEMMA, {"mm_encoder_fp8_scale_path": "/scales.json"}),
    Case("fp8-save-no-dtype", "mm-encoder-fp8-scale", PALIGEMMA, {"mm_encoder_fp8_scale_save_path": "/tmp/s.json"}),
    Case(
        "fp8-both",
        "mm-encoder-fp8-scale",
        PALIGEMMA,
        {**FP8, "mm_encoder_fp8_scale_path": "/scales.json", "mm_encoder_fp8_scale_save_path": "/tmp/s.json"},
    ),
    Case("fp8-save", None, PALIGEMMA, {**FP8, "mm_encoder_fp8_scale_save_path": "/tmp/s.json"}),
    Case("fp8-path-text-only", None, LLAMA, {"mm_encoder_fp8_scale_path": "/scales.json"}),
    # MultiModalConfig.get_mm_processor_device_type
    Case(
        "device-bogus",
        "mm-processor-device-invalid",
        PALIGEMMA,
        {"mm_processor_kwargs": {"device": "gpu:0"}},
        releases=">=0.28.0",
    ),
    Case("device-cpu", None, PALIGEMMA, {"mm_processor_kwargs": {"device": "cpu"}}),
    Case("device-bogus-0.27", None, PALIGEMMA, {"mm_processor_kwargs": {"device": "gpu:0"}}, releases="<0.28.0"),
    Case("device-text-only", None, LLAMA, {"mm_processor_kwargs": {"device": "gpu:0"}}),
    # ModelConfig.__post_init__: renderer workers against a pooling model's processor cache
    Case(
        "renderer-pooling",
        "renderer-workers-mm-cache-pooling",
        PALIGEMMA,
        {"runner": "pooling", "renderer_num_workers": 4},
    ),
    Case(
        "renderer-pooling-no-cache",
        None,
        PALIGEMMA,
        {"runner": "pooling", "renderer_num_workers": 4, "mm_processor_cache_gb": 0},
    ),
    Case("renderer-generate", None, PALIGEMMA, {"renderer_num_workers": 4}),
    # ModelConfig.verify_with_parallel_config, VllmConfig.__post_init__
    Case(
        "torch-shm-tp2",
        "mm-tensor-ipc-torch-shm-parallel",
        PALIGEMMA,
        {"mm_tensor_ipc": "torch_shm", "tensor_parallel_size": 2},
        env=SPAWN,
    ),
    Case("torch-shm-fork", "mm-tensor-ipc-torch-shm-spawn", PALIGEMMA, {"mm_tensor_ipc": "torch_shm"}),
    Case("torch-shm-spawn", None, PALIGEMMA, {"mm_tensor_ipc": "torch_shm"}, env=SPAWN),
    Case("torch-shm-text-only", None, LLAMA, {"mm_tensor_ipc": "torch_shm", "tensor_parallel_size": 2}),
    Case(
        "lm-only-graphs",
        "language-model-only-mm-encoder-graphs",
        PALIGEMMA,
        {"language_model_only": True, "compilation_config": {"cudagraph_mm_encoder": True}},
        releases=">=0.29.0",
    ),
    Case("lm-only", None, PALIGEMMA, {"language_model_only": True}),
    Case("graphs", None, PALIGEMMA, {"compilation_config": {"cudagraph_mm_encoder": True}}, releases=">=0.29.0"),
    # VllmConfig._verify_sampling_replay_config: a diffusion model (config.json canvas_length)
    Case(
        "replay-diffusion",
        "sampling-replay",
        LLAMA,
        {"return_sampling_mask": True, "logprobs_mode": "processed_logprobs"},
        config={"canvas_length": 32},
        releases=">=0.28.0",
    ),
    Case("diffusion", None, LLAMA, {"logprobs_mode": "processed_logprobs"}, config={"canvas_length": 32}),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message


# validate_mm_processor_device returns early on a CPU-only platform: the oracle accepts what a GPU host refuses
LIMITED = [
    Case("device-cuda", "mm-processor-device-accelerator", PALIGEMMA, {"mm_processor_kwargs": {"device": "cuda"}}),
    Case("device-cuda-0", "mm-processor-device-accelerator", PALIGEMMA, {"mm_processor_kwargs": {"device": "cuda:0"}}),
]
LIMITED_FROM_028 = [
    Case(c.id, c.expect, c.arch, c.serve, env=c.env, config=c.config, releases=">=0.28.0") for c in LIMITED
]


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("version", "case"),
    applicable(LIMITED_FROM_028),
    ids=[f"vllm-{v}-{c.id}" for v, c in applicable(LIMITED_FROM_028)],
)
def test_the_cpu_oracle_skips_the_processor_device_check(
    oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path
) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    assert (predicted, actual) == (case.expected(version), None), message
