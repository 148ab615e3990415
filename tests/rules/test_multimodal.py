"""Multimodal options vLLM refuses for a multimodal model and ignores for a text-only one (rules/multimodal.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least

MM = "PaliGemmaForConditionalGeneration"
SPAWN = {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}


def _mm(version: str, what: str, message: str) -> str:
    return refuses(version, f"{what} for the multimodal {MM} model", message)


@pytest.mark.parametrize("version", RELEASES)
def test_the_removed_xformers_encoder_backend_in_vllms_words(check: Check, version: str) -> None:
    found = check(files(MM, mm_encoder_attn_backend="XFORMERS"), version=version)
    assert [(f.rule, f.message) for f in found] == [
        (
            "invalid-value",
            f"serve.mm_encoder_attn_backend: vLLM {version} refuses 'XFORMERS': \"Attention backend 'XFORMERS' has "
            'been removed (See PR #29262 for details). Please select a supported attention backend."',
        )
    ]
    assert found[0].fix.startswith("remove mm_encoder_attn_backend for vLLM's choice, or choose one of: flash_attn, ")
    assert check(files(mm_encoder_attn_backend="XFORMERS"), version=version) == []  # a text-only model ignores it


@pytest.mark.parametrize("version", RELEASES)
def test_a_shm_object_size_needs_the_shm_cache(check: Check, version: str) -> None:
    found = check(files(MM, mm_shm_cache_max_object_size_mb=64), version=version)
    assert messages(found) == [
        _mm(
            version,
            'mm_shm_cache_max_object_size_mb = 64 with mm_processor_cache_type = "lru"',
            "'mm_shm_cache_max_object_size_mb' should only be set when 'mm_processor_cache_type' is 'shm'.",
        )
    ]
    assert found[0].fix == 'set mm_processor_cache_type = "shm", or remove mm_shm_cache_max_object_size_mb'
    shm = files(MM, mm_shm_cache_max_object_size_mb=64, mm_processor_cache_type="shm")
    assert check(shm, version=version) == []
    assert check(files(MM, mm_shm_cache_max_object_size_mb=128), version=version) == []  # the default
    assert check(files(mm_shm_cache_max_object_size_mb=64), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_fp8_scale_paths_need_fp8_encoder_attention_and_only_one_of_them(check: Check, version: str) -> None:
    found = check(files(MM, mm_encoder_fp8_scale_path="/scales.json"), version=version)
    assert messages(found) == [
        _mm(
            version,
            'mm_encoder_fp8_scale_path without mm_encoder_attn_dtype = "fp8"',
            "'mm_encoder_fp8_scale_path' and 'mm_encoder_fp8_scale_save_path' require 'mm_encoder_attn_dtype' to be "
            "'fp8'.",
        )
    ]
    both = files(
        MM,
        mm_encoder_attn_dtype="fp8",
        mm_encoder_fp8_scale_path="/scales.json",
        mm_encoder_fp8_scale_save_path="/tmp/s.json",
    )
    assert messages(check(both, version=version)) == [
        _mm(
            version,
            "both mm_encoder_fp8_scale_path and mm_encoder_fp8_scale_save_path",
            "'mm_encoder_fp8_scale_save_path' cannot be used with 'mm_encoder_fp8_scale_path' (saving requires "
            "dynamic scaling).",
        )
    ]
    # the file itself is the serving host's: left to vLLM
    assert (
        check(files(MM, mm_encoder_attn_dtype="fp8", mm_encoder_fp8_scale_path="/scales.json"), version=version) == []
    )
    assert check(files(mm_encoder_fp8_scale_path="/scales.json"), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_a_processor_device_torch_does_not_know(check: Check, version: str) -> None:
    found = check(files(MM, mm_processor_kwargs={"device": "gpu:0"}), version=version)
    if not at_least(version, "0.28.0"):
        assert found == []  # 0.27.x does not read the device at start-up
        return
    assert messages(found) == [
        _mm(
            version,
            'mm_processor_kwargs.device = "gpu:0"',
            'Invalid "device" in mm_processor_kwargs: \'gpu:0\'. Expected a torch device such as "cpu", "cuda" '
            'or "cuda:0".',
        )
    ]
    for device in ("cpu", "cuda", "cuda:1"):
        assert (
            check(
                files(MM, mm_processor_kwargs={"device": device}), version=version, rule="mm-processor-device-invalid"
            )
            == []
        )
    assert check(files(mm_processor_kwargs={"device": "gpu:0"}), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_torch_shm_tensor_ipc_needs_one_process_and_spawn(check: Check, version: str) -> None:
    parallel = files(MM, env=SPAWN, mm_tensor_ipc="torch_shm", tensor_parallel_size=2)
    assert messages(check(parallel, version=version, rule="mm-tensor-ipc-torch-shm-parallel")) == [
        _mm(
            version,
            'mm_tensor_ipc = "torch_shm" with 2 processes across parallelism',
            "mm_tensor_ipc='torch_shm' is not supported with data_parallel_size > 1 or tensor_parallel_size > 1 or "
            "pipeline_parallel_size > 1.",
        )
    ]
    assert messages(check(files(MM, mm_tensor_ipc="torch_shm"), version=version)) == [
        _mm(
            version,
            'mm_tensor_ipc = "torch_shm" with VLLM_WORKER_MULTIPROC_METHOD unset',
            "torch_shm is known to fail without VLLM_WORKER_MULTIPROC_METHOD set to spawn",
        )
    ]
    assert check(files(MM, env=SPAWN, mm_tensor_ipc="torch_shm"), version=version) == []
    assert (
        check(
            files(mm_tensor_ipc="torch_shm", tensor_parallel_size=2),
            version=version,
            rule="mm-tensor-ipc-torch-shm-parallel",
        )
        == []
    )
    assert check(files(mm_tensor_ipc="torch_shm"), version=version, rule="mm-tensor-ipc-torch-shm-spawn") == []


@pytest.mark.parametrize("version", RELEASES)
def test_language_model_only_with_encoder_graphs(check: Check, version: str) -> None:
    both = files(MM, language_model_only=True, compilation_config={"cudagraph_mm_encoder": True})
    found = check(both, version=version, rule="language-model-only-mm-encoder-graphs")
    if not at_least(version, "0.29.0"):
        assert found == []
        return
    assert messages(found) == [
        _mm(
            version,
            "language_model_only = true with compilation_config.cudagraph_mm_encoder = true",
            "--language-model-only is incompatible with cudagraph_mm_encoder=True, since it disables all multimodal "
            "inputs and the multimodal encoder is never run. Please disable one of them.",
        )
    ]
    assert check(files(MM, language_model_only=True), version=version) == []


ACCELERATOR = (
    "Cannot run the multi-modal processor on 'cuda': this instance also runs the language model. The processor would "
    "share the device with the model's forward pass, so its transform kernels contend with that compute, and because "
    "it runs in the API-server process its allocations are outside the memory the engine profiled for its KV cache "
    "-- risking OOM or a silently shrunken cache. Accelerator preprocessing is only supported on an encode-only "
    "instance of an encode/prefill/decode deployment (an EC producer that is not also a consumer), which runs no "
    'forward pass and allocates no KV cache. Use --mm-processor-device=cpu, or drop "device" from '
    "--mm-processor-kwargs."
)


@pytest.mark.parametrize("version", RELEASES)
def test_the_processor_on_the_gpu_only_on_an_encoder_instance(check: Check, version: str) -> None:
    rule = "mm-processor-device-accelerator"
    on_gpu = files(MM, mm_processor_kwargs={"device": "cuda:0"})
    found = check(on_gpu, version=version, rule=rule)
    if not at_least(version, "0.28.0"):
        assert found == []
        return
    assert messages(found) == [_mm(version, 'mm_processor_kwargs.device = "cuda:0" on a GPU host', ACCELERATOR)]
    assert found[0].fix == (
        'drop "device" from mm_processor_kwargs (or set it to "cpu"), or serve this role as an encoder: '
        'ec_transfer_config.ec_role = "ec_producer"'
    )
    gpu = {"device": "cuda"}
    encoder = {"ec_connector": "ECExampleConnector", "ec_role": "ec_producer"}
    assert check(files(MM, mm_processor_kwargs=gpu, ec_transfer_config=encoder), version=version, rule=rule) == []
    both = {"ec_connector": "ECExampleConnector", "ec_role": "ec_both"}
    assert len(check(files(MM, mm_processor_kwargs=gpu, ec_transfer_config=both), version=version, rule=rule)) == 1
    for cpu in (files(MM, mm_processor_device="cpu"), files(MM, mm_processor_kwargs={"device": "cpu"})):
        assert check(cpu, version=version, rule=rule) == []
    assert check(files(MM, mm_processor_device="auto"), version=version, rule=rule) == []
    assert check(files(mm_processor_kwargs={"device": "cuda"}), version=version, rule=rule) == []  # text-only


QWEN25_VL = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl"}
QWEN3_VL = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl"}


@pytest.mark.parametrize("version", RELEASES)
def test_a_video_pruning_method_the_models_class_does_not_list(check: Check, version: str) -> None:
    found = check(files(config=QWEN25_VL, video_pruning_rate=0.5, video_pruning_method="vidcom2"), version=version)
    found = [f for f in found if f.rule == "video-pruning-method-unsupported"]
    assert messages(found) == [
        refuses(
            version,
            'video_pruning_method = "vidcom2" with video_pruning_rate = 0.5 for the multimodal '
            "Qwen2_5_VLForConditionalGeneration model",
            "Video pruning method 'vidcom2' is not supported by Qwen2_5_VLForConditionalGeneration (supported "
            "methods: ('evs',)).",
        )
    ]
    assert found[0].fix == 'set video_pruning_method to one of "evs", or remove video_pruning_rate'
    assert [loc.key for loc in found[0].locations] == [
        "serve.video_pruning_method",
        "serve.video_pruning_rate",
        "model.config",
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_video_pruning_that_the_model_supports_or_does_not_run(check: Check, version: str) -> None:
    rule = "video-pruning-method-unsupported"
    assert check(files(config=QWEN25_VL, video_pruning_rate=0.5), version=version, rule=rule) == []  # evs
    assert (
        check(
            files(config=QWEN3_VL, video_pruning_rate=0.5, video_pruning_method="vidcom2"), version=version, rule=rule
        )
        == []
    )
    assert (
        check(
            files(config=QWEN25_VL, video_pruning_rate=0.0, video_pruning_method="vidcom2"), version=version, rule=rule
        )
        == []
    )
    # a text-only model builds no multimodal config; a multimodal class that lists no methods skips the check
    assert check(files(video_pruning_rate=0.5, video_pruning_method="vidcom2"), version=version, rule=rule) == []
    pali = {"architectures": [MM], "model_type": "paligemma"}
    assert (
        check(files(config=pali, video_pruning_rate=0.5, video_pruning_method="vidcom2"), version=version, rule=rule)
        == []
    )


RENDERER = (
    "Cannot use --renderer-num-workers > 1 with the multimodal processor cache enabled for pooling models. Pooling "
    "preprocessing runs on the renderer workers, and the cache is not thread-safe. Please set --renderer-num-workers 1 "
    "(the default), or disable the cache with --mm-processor-cache-gb 0."
)


@pytest.mark.parametrize("version", RELEASES)
def test_renderer_workers_with_the_processor_cache_for_a_multimodal_pooling_model(check: Check, version: str) -> None:
    found = check(files(MM, runner="pooling", renderer_num_workers=4), version=version)
    assert messages(found) == [
        _mm(version, "renderer_num_workers = 4 with mm_processor_cache_gb = 4 (pooling)", RENDERER)
    ]
    assert found[0].rule == "renderer-workers-mm-cache-pooling"
    assert found[0].fix == "set renderer_num_workers = 1, or mm_processor_cache_gb = 0"
    assert [loc.key for loc in found[0].locations] == ["serve.renderer_num_workers", "serve.runner"]
    converted = check(files(MM, convert="embed", renderer_num_workers=2), version=version)
    assert [f.rule for f in converted] == ["renderer-workers-mm-cache-pooling"]  # --convert makes runner auto pooling


@pytest.mark.parametrize("version", RELEASES)
def test_renderer_workers_where_vllm_allows_them(check: Check, version: str) -> None:
    rule = "renderer-workers-mm-cache-pooling"
    assert check(files(MM, runner="pooling", renderer_num_workers=4, mm_processor_cache_gb=0), version=version) == []
    assert check(files(MM, runner="pooling", renderer_num_workers=1), version=version) == []
    assert check(files(MM, renderer_num_workers=4), version=version, rule=rule) == []  # generates
    assert check(files(runner="pooling", renderer_num_workers=4), version=version, rule=rule) == []  # text-only
    enc_dec = {"is_encoder_decoder": True}
    assert check(files(MM, config=enc_dec, runner="pooling", renderer_num_workers=4), version=version, rule=rule) == []
