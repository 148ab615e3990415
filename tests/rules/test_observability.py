"""Observability and structured-output validators (rules/observability.py) and sampling outputs, metrics and
kernel selections (rules/outputs.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import NEMOTRON, RELEASES, at_least

TRACES = "collect_detailed_traces requires `--otlp-traces-endpoint` to be set."
SSU = (
    "Mamba SSU algorithm selection is only supported with the FlashInfer backend. Please set `--mamba-backend "
    "flashinfer`, or omit `--mamba-ssu-algorithm`."
)
SPEC_METRICS = (
    "--per-request-spec-decode-metrics requires speculative decoding to be enabled (via --speculative-config)."
)
REPLAY = (
    "sampling distribution replay requires logprobs_mode='processed_logprobs' so that returned logprobs are "
    "normalized over the same nucleus as the sampling mask"
)
SHARDED = (
    "Batch-sharded sampling was explicitly enabled via the --enable-batch-sharded-sampling flag, but is not "
    "supported in this configuration for the following reason(s): "
)


@pytest.mark.parametrize("version", RELEASES)
def test_detailed_traces_need_an_endpoint(check: Check, version: str) -> None:
    found = check(files(collect_detailed_traces=["worker"]), version=version)
    assert messages(found) == [
        refuses(version, 'collect_detailed_traces = ["worker"] without otlp_traces_endpoint', TRACES)
    ]
    assert found[0].rule == "detailed-traces-endpoint"
    combined = files(collect_detailed_traces=["model,worker"])  # the field's Literal refuses it first
    assert check(combined, version=version, rule="detailed-traces-endpoint") == []
    ok = files(collect_detailed_traces=["worker"], otlp_traces_endpoint="http://collector:4317")
    assert check(ok, version=version, rule="detailed-traces-endpoint") == []


@pytest.mark.parametrize("version", RELEASES)
def test_hidden_metrics_version_must_parse(check: Check, version: str) -> None:
    found = check(files(show_hidden_metrics_for_version="bogus"), version=version)
    assert messages(found) == [
        refuses(version, 'show_hidden_metrics_for_version = "bogus" is not a version', "Invalid version: 'bogus'")
    ]
    assert check(files(show_hidden_metrics_for_version="0.26"), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_structured_outputs_options_need_their_backend(check: Check, version: str) -> None:
    found = check(files(structured_outputs_config={"disable_any_whitespace": True}), version=version)
    assert messages(found) == [
        refuses(
            version,
            'structured_outputs_config.disable_any_whitespace = true with backend "auto"',
            "1 validation error for StructuredOutputsConfig / disable_any_whitespace is only supported for xgrammar "
            "and guidance backends.",
        )
    ]
    extra = check(
        files(structured_outputs_config={"backend": "xgrammar", "disable_additional_properties": True}),
        version=version,
    )
    assert messages(extra) == [
        refuses(
            version,
            'structured_outputs_config.disable_additional_properties = true with backend "xgrammar"',
            "1 validation error for StructuredOutputsConfig / disable_additional_properties is only supported for "
            "the guidance backend.",
        )
    ]
    fine = files(structured_outputs_config={"backend": "guidance", "disable_any_whitespace": True})
    assert check(fine, version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_mamba_ssu_algorithm_needs_flashinfer(check: Check, version: str) -> None:
    found = check(files(NEMOTRON, mamba_ssu_algorithm="auto"), version=version)
    assert messages(found) == [
        refuses(version, 'mamba_ssu_algorithm = "auto" with mamba_backend (default triton)', SSU)
    ]
    fine = files(NEMOTRON, mamba_ssu_algorithm="auto", mamba_backend="flashinfer")
    assert check(fine, version=version, rule="mamba-ssu-algorithm-backend") == []


@pytest.mark.parametrize("version", ["0.30.0", "0.33.0"])
def test_fused_kda_prefill_is_rocm_only(check: Check, version: str) -> None:
    found = check(files(kda_prefill_backend="fused"), version=version)
    assert messages(found) == [
        refuses(
            version,
            'kda_prefill_backend = "fused" on a CUDA GPU host',
            "--kda-prefill-backend=fused is only available on ROCm.",
        )
    ]
    assert check(files(kda_prefill_backend="flashkda"), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_spec_decode_metrics_need_speculative_decoding(check: Check, version: str) -> None:
    if not at_least(version, "0.29.0"):
        assert check(files(), version=version) == []
        return
    found = check(files(per_request_spec_decode_metrics="summary"), version=version)
    assert messages(found) == [
        refuses(version, 'per_request_spec_decode_metrics = "summary" without speculative decoding', SPEC_METRICS)
    ]
    assert check(files(per_request_spec_decode_metrics="none"), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_sampling_replay_needs_processed_logprobs(check: Check, version: str) -> None:
    if not at_least(version, "0.28.0"):
        assert check(files(return_sampling_mask=True), version=version, rule="sampling-replay") == []
        return
    found = check(files(return_sampling_mask=True), version=version)
    assert messages(found) == [
        refuses(version, 'return_sampling_mask = true with logprobs_mode "raw_logprobs" (default)', REPLAY)
    ]
    fine = files(return_sampling_mask=True, logprobs_mode="processed_logprobs")
    assert check(fine, version=version) == []
    on_v1 = files(return_sampling_mask=True, logprobs_mode="processed_logprobs", env={"VLLM_USE_V2_MODEL_RUNNER": "0"})
    assert messages(check(on_v1, version=version)) == [
        refuses(
            version,
            "return_sampling_mask = true on Model Runner V1",
            "sampling distribution replay requires Model Runner V2",
        )
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_sampling_replay_refuses_a_diffusion_model(check: Check, version: str) -> None:
    """ModelConfig.is_diffusion: the config.json sets canvas_length."""
    replay = {"return_sampling_mask": True, "logprobs_mode": "processed_logprobs"}
    found = check(files(config={"canvas_length": 32}, **replay), version=version, rule="sampling-replay")
    if not at_least(version, "0.28.0"):
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            "return_sampling_mask = true for the diffusion model LlamaForCausalLM (config.json canvas_length)",
            "sampling distribution replay does not support diffusion models",
        )
    ]
    assert check(files(config={"canvas_length": 32}), version=version, rule="sampling-replay") == []


@pytest.mark.parametrize("version", RELEASES)
def test_batch_sharded_sampling_needs_tensor_parallelism(check: Check, version: str) -> None:
    if not at_least(version, "0.29.0"):
        assert check(files(enable_batch_sharded_sampling=True), version=version, rule="batch-sharded-sampling") == []
        return
    found = check(files(enable_batch_sharded_sampling=True), version=version, rule="batch-sharded-sampling")
    assert messages(found) == [
        refuses(
            version,
            "enable_batch_sharded_sampling = true",
            SHARDED + "tensor_parallel_size is 1, so there is nothing to shard.",
        )
    ]
    fine = files(enable_batch_sharded_sampling=True, tensor_parallel_size=2)
    assert check(fine, version=version, rule="batch-sharded-sampling") == []


@pytest.mark.parametrize("version", RELEASES)
def test_engram_needs_a_model_with_engram_embeddings(check: Check, version: str) -> None:
    found = check(files(engram_config={}), version=version, rule="engram-model")
    if not at_least(version, "0.30.0"):
        assert found == []
        return
    wording = {
        "0.30.0": ", non-empty n-gram layer ids, and CUDA.",
        "0.31.0": ", non-empty n-gram layer ids, and a CUDA-alike device (CUDA or ROCm).",
    }.get(version, " and non-empty n-gram layer ids.")
    assert messages(found) == [
        refuses(
            version,
            "engram_config for a LlamaForCausalLM model",
            "EngramConfig requires a model with supported Engram embeddings" + wording,
        )
    ]
    assert check(files(), version=version, rule="engram-model") == []
