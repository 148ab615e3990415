"""The attention, encoder-cache-manager, watermark, LoRA and histogram-bucket validators
(rules/subconfigs.py, rules/configs.py, rules/observability.py), in vLLM's words."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check
from tests.rules.crossfield import files
from tests.rules.layers import RELEASES, at_least

KINDS = (
    "chunked_local_attention, cross_attention, encoder_only_attention, full_attention, mamba, mla_attention, "
    "sink_full_attention, sliding_window, sliding_window_mla, unknown"
)


def _found(check: Check, version: str, rule: str, **serve: object) -> list[tuple[str, str]]:
    return [(f.message, f.fix) for f in check(files(**serve), version=version, rule=rule)]


@pytest.mark.parametrize("version", RELEASES)
def test_an_unknown_kv_cache_group_kind(check: Check, version: str) -> None:
    found = _found(check, version, "attention-config", attention_config={"backend_per_kind": {"bogus": "FLASH_ATTN"}})
    assert found == [
        (
            f'attention_config.backend_per_kind: vLLM {version} refuses to start: "1 validation error for '
            f"AttentionConfig / Unknown KV cache group kind 'bogus' in backend_per_kind. Valid kinds are: {KINDS}.\"",
            f"name one of the KV cache group kinds: {KINDS}",
        )
    ]
    fine = {"backend_per_kind": {"sliding_window": "FLASH_ATTN"}}
    assert _found(check, version, "attention-config", attention_config=fine) == []


@pytest.mark.parametrize("version", RELEASES)
def test_minimax_context_parallel_indexer_needs_a_bf16_or_fp8_cache(check: Check, version: str) -> None:
    cfg = {"minimax_m3_indexer_cp": True, "indexer_kv_dtype": "nvfp4"}
    found = _found(check, version, "attention-config", attention_config=cfg)
    if version != "0.33.0":
        assert found == []
        return
    assert found == [
        (
            'attention_config.minimax_m3_indexer_cp: vLLM 0.33.0 refuses to start: "1 validation error for '
            "AttentionConfig / minimax_m3_indexer_cp requires a bf16 or fp8 e4m3 index cache (indexer_kv_dtype "
            "'auto', 'bf16', 'fp8' or 'fp8_e4m3'), got 'nvfp4'\"",
            'set indexer_kv_dtype to "bf16" or "fp8", or drop minimax_m3_indexer_cp',
        )
    ]
    ok = {"minimax_m3_indexer_cp": True, "indexer_kv_dtype": "fp8"}
    assert _found(check, version, "attention-config", attention_config=ok) == []


@pytest.mark.parametrize("version", ["0.27.1", "0.28.0", "0.29.0", "0.30.0"])
def test_the_fp4_indexer_flag_conflicts_with_another_indexer_dtype(check: Check, version: str) -> None:
    cfg = {"use_fp4_indexer_cache": True, "indexer_kv_dtype": "fp8"}
    found = _found(check, version, "attention-config", attention_config=cfg)
    if version not in ("0.28.0", "0.29.0"):
        assert found == []
        return
    assert found == [
        (
            f'attention_config.use_fp4_indexer_cache: vLLM {version} refuses to start: "1 validation error for '
            "AttentionConfig / use_fp4_indexer_cache=True conflicts with indexer_kv_dtype='fp8'. Set only "
            'indexer_kv_dtype."',
            'remove use_fp4_indexer_cache (it means indexer_kv_dtype = "mxfp4")',
        )
    ]
    ok = {"use_fp4_indexer_cache": True, "indexer_kv_dtype": "mxfp4"}
    assert _found(check, version, "attention-config", attention_config=ok) == []


@pytest.mark.parametrize("version", RELEASES)
def test_manager_config_needs_a_manager_class(check: Check, version: str) -> None:
    found = _found(check, version, "ec-manager-config", ec_manager_config={"manager_config": {"size": 1}})
    if not at_least(version, "0.28.0"):
        assert found == []
        return
    assert found == [
        (
            f"ec_manager_config.manager_config without encoder_cache_manager_cls; vLLM {version} refuses to start: "
            '"1 validation error for EncoderCacheManagerConfig / manager_config requires encoder_cache_manager_cls '
            'to be set."',
            "set ec_manager_config.encoder_cache_manager_cls to the class that reads manager_config, or remove it",
        )
    ]
    ok = {"manager_config": {"size": 1}, "encoder_cache_manager_cls": "my_pkg.Manager"}
    assert _found(check, version, "ec-manager-config", ec_manager_config=ok) == []


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.33.0"])
def test_a_watermark_key_wider_than_64_bits(check: Check, version: str) -> None:
    found = _found(check, version, "watermark-key", watermark_config={"key": 2**64})
    if not at_least(version, "0.30.0"):
        assert found == []
        return
    assert found == [
        (
            f'watermark_config.key = 18446744073709551616; vLLM {version} refuses to start: "philox keys must fit '
            'in 64 bits"',
            "choose a key between 0 and 18446744073709551615",
        )
    ]
    assert _found(check, version, "watermark-key", watermark_config={"key": 2**64 - 1}) == []


@pytest.mark.parametrize("version", RELEASES)
def test_max_cpu_loras_below_max_loras(check: Check, version: str) -> None:
    found = _found(check, version, "lora-max-cpu-loras", enable_lora=True, max_loras=4, max_cpu_loras=2)
    assert found == [
        (
            f'max_cpu_loras = 2 with max_loras = 4; vLLM {version} refuses to start: "max_cpu_loras (2) must be >= '
            'max_loras (4)."',
            "raise max_cpu_loras to at least 4, or leave it out (it defaults to max_loras)",
        )
    ]
    assert _found(check, version, "lora-max-cpu-loras", enable_lora=True, max_loras=4, max_cpu_loras=4) == []
    # without LoRA vLLM builds no LoRAConfig
    assert _found(check, version, "lora-max-cpu-loras", max_loras=4, max_cpu_loras=2) == []


HISTOGRAMS = [
    (
        {"bogus": [1.0]},
        "bogus",
        "custom_histogram_buckets: unknown bucket family 'bogus'; known families: ['inter_token_latency', "
        "'iteration_tokens', 'kv_cache_residency', 'request_latency', 'request_num_preemptions', 'request_params_n', "
        "'request_tokens', 'time_to_first_token']",
    ),
    (
        {"request_latency": [1, True]},
        "request_latency",
        "custom_histogram_buckets['request_latency']: bound True must be a number, not a boolean",
    ),
    (
        {"request_latency": []},
        "request_latency",
        "custom_histogram_buckets['request_latency']: bucket list must not be empty",
    ),
    (
        {"request_latency": [0, 1]},
        "request_latency",
        "custom_histogram_buckets['request_latency']: bound 0.0 must be finite and greater than 0",
    ),
    (
        {"request_latency": [1, 1]},
        "request_latency",
        "custom_histogram_buckets['request_latency']: bounds [1.0, 1.0] must be strictly increasing",
    ),
]


@pytest.mark.parametrize(("buckets", "family", "message"), HISTOGRAMS)
def test_custom_histogram_buckets(check: Check, buckets: object, family: str, message: str) -> None:
    found = _found(check, "0.33.0", "histogram-buckets", custom_histogram_buckets=buckets)
    assert [m for m, _ in found] == [f'custom_histogram_buckets.{family}: vLLM 0.33.0 refuses to start: "{message}"']


@pytest.mark.parametrize("version", ["0.31.0", "0.32.0", "0.33.0"])
def test_custom_histogram_buckets_that_vllm_accepts(check: Check, version: str) -> None:
    ok = {"request_latency": [0.5, 1, 2.5], "time_to_first_token": [0.1]}
    assert _found(check, version, "histogram-buckets", custom_histogram_buckets=ok) == []
    if version == "0.31.0":  # no such option yet: unknown-option reports it
        assert _found(check, version, "histogram-buckets", custom_histogram_buckets={"bogus": [1.0]}) == []


@pytest.mark.parametrize("version", RELEASES)
def test_the_removed_pooler_normalize_in_vllms_words(check: Check, version: str) -> None:
    found = [(f.rule, f.message, f.fix) for f in check(files(pooler_config={"normalize": True}), version=version)]
    assert found == [
        (
            "unknown-option",
            f"serve.pooler_config.normalize: vLLM {version}'s PoolerConfig has no key 'normalize'; vLLM says \"1 "
            'validation error for PoolerConfig / Parameter `normalize` was removed; use `use_activation` instead."',
            "write use_activation instead of normalize",
        )
    ]
    assert check(files(pooler_config={"use_activation": True}), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_a_deprecated_quantization_method(check: Check, version: str) -> None:
    found = _found(check, version, "quantization-deprecated", quantization="FBGEMM_FP8")
    assert found == [
        (
            f'quantization = "fbgemm_fp8" is deprecated; vLLM {version} refuses to start: "(\'The quantization method '
            "%s is deprecated and will be removed in future versions of vLLM. To bypass, set "
            "`--allow-deprecated-quantization`.', 'fbgemm_fp8')\"",
            "set allow_deprecated_quantization = true to use it anyway, or choose another quantization method",
        )
    ]
    allowed = _found(
        check, version, "quantization-deprecated", quantization="fp_quant", allow_deprecated_quantization=True
    )
    assert allowed == []
    assert _found(check, version, "quantization-deprecated", quantization="fp8") == []


PP_FEATURE = "Pipeline Parallelism without Ray distributed executor or multiprocessing executor or external launcher"


@pytest.mark.parametrize("version", RELEASES)
def test_pipeline_parallelism_needs_a_pipeline_capable_executor(check: Check, version: str) -> None:
    found = _found(
        check, version, "pipeline-parallel-executor", pipeline_parallel_size=2, distributed_executor_backend="uni"
    )
    assert found == [
        (
            f'pipeline_parallel_size = 2 with distributed_executor_backend = "uni"; vLLM {version} refuses to start: '
            f'"{PP_FEATURE} is not supported. We recommend to remove {PP_FEATURE} from your config."',
            'set distributed_executor_backend to "mp" or "ray" (or leave it out), or pipeline_parallel_size = 1',
        )
    ]
    for backend in ("mp", "ray", "external_launcher"):
        assert (
            _found(
                check,
                version,
                "pipeline-parallel-executor",
                pipeline_parallel_size=2,
                distributed_executor_backend=backend,
            )
            == []
        )
    assert _found(check, version, "pipeline-parallel-executor", distributed_executor_backend="uni") == []


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_lora_with_a_mega_moe_backend(check: Check, version: str) -> None:
    found = _found(check, version, "lora-moe-backend", enable_lora=True, moe_backend="deep_gemm_mega_moe")
    if version != "0.33.0":
        assert found == []
        return
    assert found == [
        (
            'enable_lora = true with moe_backend = "deep_gemm_mega_moe"; vLLM 0.33.0 refuses to start: "LoRA is not '
            "supported with moe_backend='deep_gemm_mega_moe'. Disable LoRA or select a MoE backend that supports "
            'LoRA."',
            'set enable_lora = false, or leave moe_backend unset ("auto")',
        )
    ]
    assert _found(check, version, "lora-moe-backend", enable_lora=True, moe_backend="triton") == []
    assert _found(check, version, "lora-moe-backend", moe_backend="deep_gemm_mega_moe") == []


def _keys(version: str) -> str:
    names = [
        "fp8_per_block_dynamic",
        "fp8_per_block_static",
        "fp8_per_channel_static",
        "fp8_per_tensor_dynamic",
        "fp8_per_tensor_static",
        "fp8_per_token",
        "int8_per_channel_static",
        "mxfp4",
        "mxfp8",
    ]
    if at_least(version, "0.32.0"):
        names += ["int4_per_group_32", "nvfp4_per_token"]
    if at_least(version, "0.33.0"):
        names.append("int8_per_group_32")
    return repr(sorted(names))


@pytest.mark.parametrize("version", RELEASES)
def test_a_quantization_spec_vllm_cannot_read(check: Check, version: str) -> None:
    found = _found(check, version, "quantization-spec", quantization_config={"linear": "bogus"})
    assert [m for m, _ in found] == [
        f'serve.quantization_config.linear: vLLM {version} refuses it: "1 validation error for QuantizationConfigArgs '
        f"/ linear / Value error, unknown quantization name 'bogus'; expected one of {_keys(version)}\""
    ]
    found = _found(check, version, "quantization-spec", quantization_config={"linear": "nvfp4_per_token"})
    assert [m for m, _ in found] == [
        f'serve.quantization_config.linear: vLLM {version} refuses it: "1 validation error for QuantizationConfigArgs '
        "/ linear / Value error, online shorthand 'nvfp4_per_token' does not define a linear spec\""
    ]
    found = _found(check, version, "quantization-spec", quantization_config={"moe": {"weight": 5}})
    assert [m for m, _ in found] == [
        f'serve.quantization_config.moe.weight: vLLM {version} refuses it: "argument --quantization-config: invalid '
        '_optional_type value" (expected str or QuantKey, got int)'
    ]
    fine = {"linear": "fp8_per_tensor", "moe": {"weight": "mxfp8"}}
    assert _found(check, version, "quantization-spec", quantization_config=fine) == []
    assert check(files(quantization_config=fine), version=version, rule="invalid-value") == []


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.33.0"])
def test_quantization_targets_that_are_no_table(check: Check, version: str) -> None:
    found = _found(check, version, "quantization-spec", quantization_config={"targets": "x"})
    if not at_least(version, "0.30.0"):
        assert found == []
        return
    assert found == [
        (
            f'serve.quantization_config.targets: vLLM {version} refuses it: "argument --quantization-config: invalid '
            '_optional_type value" (targets must be a dict, got str)',
            "write targets as a table of layer patterns to online shorthands",
        )
    ]


def test_an_unknown_ssu_algorithm_is_refused_once_by_the_parsers_choices(check: Check) -> None:
    found = [(f.rule, f.message) for f in check(files(mamba_ssu_algorithm="bad"), version="0.33.0")]
    assert found == [
        (
            "invalid-value",
            "serve.mamba_ssu_algorithm: vLLM 0.33.0 refuses 'bad' for mamba_ssu_algorithm: \"argument "
            "--mamba-ssu-algorithm: invalid choice: 'bad' (choose from 'auto', 'horizontal', 'simple', 'vertical', "
            'None)"',
        )
    ]
    assert [f.rule for f in check(files(mamba_ssu_algorithm="simple"), version="0.33.0")] == [
        "mamba-ssu-algorithm-backend"
    ]
