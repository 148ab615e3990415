"""Tensor, pipeline and context parallelism against each other and against the model (rules/parallel.py)."""

from __future__ import annotations

import pytest

from tests.rules.conftest import Check, messages, no_config, not_checked
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES, at_least

KIMI = "KimiLinearForCausalLM"
ZAMBA2 = "Zamba2ForCausalLM"


@pytest.mark.parametrize("version", RELEASES)
def test_attention_heads_must_divide_by_tensor_parallel_size(check: Check, version: str) -> None:
    found = check(files(tensor_parallel_size=3), version=version)
    assert messages(found) == [
        refuses(
            version,
            "tensor_parallel_size = 3 with a model of 4 attention heads (config.json)",
            "Total number of attention heads (4) must be divisible by tensor parallel size (3).",
        )
    ]
    assert found[0].rule == "attention-heads-tensor-parallel"
    assert found[0].fix == "set tensor_parallel_size to a divisor of 4: 1, 2, 4"
    assert [loc.key for loc in found[0].locations] == ["serve.tensor_parallel_size", "model.config"]
    assert check(files(tensor_parallel_size=4), version=version) == []


def test_heads_come_from_the_text_config_of_a_multimodal_model(check: Check) -> None:
    config = {"text_config": {"num_attention_heads": 6}}
    found = check(files(config=config, tensor_parallel_size=4), rule="attention-heads-tensor-parallel")
    assert found[0].message.startswith("tensor_parallel_size = 4 with a model of 6 attention heads")
    assert check(files(config=config, tensor_parallel_size=3)) == []


@pytest.mark.parametrize("version", RELEASES)
def test_decode_context_parallel_size_must_divide_tensor_parallel_size(check: Check, version: str) -> None:
    found = check(files(decode_context_parallel_size=3), version=version, rule="context-parallel-size")
    assert messages(found) == [
        refuses(
            version,
            "decode_context_parallel_size = 3 does not divide tensor_parallel_size unset (1)",
            "tp_size=1 must be divisible by dcp_size=3.",
        )
    ]
    assert check(files(tensor_parallel_size=4, decode_context_parallel_size=2), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_prefill_context_parallelism_with_data_parallelism_before_0_30(check: Check, version: str) -> None:
    serve = {"prefill_context_parallel_size": 2, "data_parallel_size": 2}
    found = check(files(**serve), version=version, rule="context-parallel-size")
    if at_least(version, "0.31.0"):
        assert found == []
    else:
        on_cuda = " on CUDA" if version == "0.30.0" else ""  # 0.30.0 moved the check into the CUDA platform hook
        assert messages(found) == [
            refuses(
                version,
                "prefill_context_parallel_size = 2 with data_parallel_size = 2",
                f"PCP does not support data parallelism{on_cuda} yet.",
            )
        ]


def test_decode_context_parallelism_with_prefill_context_parallelism(check: Check) -> None:
    serve = {"tensor_parallel_size": 2, "prefill_context_parallel_size": 2, "decode_context_parallel_size": 3}
    found = check(files(**serve), rule="context-parallel-size")
    assert messages(found) == [
        refuses(
            "0.33.0",
            "decode_context_parallel_size = 3 with prefill_context_parallel_size = 2 and tensor_parallel_size = 2",
            "When PCP is enabled, DCP must be disabled, span the PCP axis, or span the full TP x PCP axis. "
            "Got TP=2, PCP=2, DCP=3; valid DCP sizes are [1, 2, 4].",
        )
    ]
    serve["decode_context_parallel_size"] = 4
    assert check(files(**serve), rule="context-parallel-size") == []


@pytest.mark.parametrize("version", RELEASES)
def test_all_to_all_decode_context_backend_needs_decode_context_parallelism(check: Check, version: str) -> None:
    found = check(files(dcp_comm_backend="a2a"), version=version, rule="context-parallel-size")
    if at_least(version, "0.29.0"):
        assert found == []
    else:
        assert messages(found) == [
            refuses(
                version,
                'dcp_comm_backend = "a2a" with decode_context_parallel_size unset (1)',
                "dcp_comm_backend='a2a' requires decode_context_parallel_size > 1.",
            )
        ]


@pytest.mark.parametrize(
    ("tp", "dcp", "what", "message"),
    [
        (
            2,
            2,
            "decode_context_parallel_size = 2 with tensor_parallel_size = 2 and a model of 2 KV heads (config.json)",
            "Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` (2) to be greater than the "
            "model's total number of KV heads (2). Increase `--tensor-parallel-size` or set "
            "`--decode-context-parallel-size 1`.",
        ),
        (
            4,
            4,
            "decode_context_parallel_size = 4 with tensor_parallel_size = 4 and a model of 2 KV heads (config.json)",
            "`--decode-context-parallel-size` (4) exceeds the maximum supported value (2) for "
            "`--tensor-parallel-size` (4) and 2 model KV heads.",
        ),
    ],
)
def test_decode_context_parallelism_against_kv_heads(check: Check, tp: int, dcp: int, what: str, message: str) -> None:
    found = check(files(tensor_parallel_size=tp, decode_context_parallel_size=dcp))
    assert messages(found) == [refuses("0.33.0", what, message)]
    assert found[0].rule == "context-parallel-kv-heads"


def test_query_heads_per_kv_head_must_divide_by_decode_context_parallel_size(check: Check) -> None:
    config = {"num_attention_heads": 12, "num_key_value_heads": 3}
    found = check(files(config=config, tensor_parallel_size=12, decode_context_parallel_size=3))
    assert messages(found) == [
        refuses(
            "0.33.0",
            "decode_context_parallel_size = 3 with a model of 4 query heads per KV head (config.json)",
            "The model's number of query heads per KV head (4) must be divisible by `--decode-context-parallel-size` "
            "(3) for GQA/MQA.",
        )
    ]
    assert check(files(config=config, tensor_parallel_size=12, decode_context_parallel_size=2)) == []


def test_mla_models_skip_the_kv_head_checks(check: Check) -> None:
    assert check(files(KIMI, tensor_parallel_size=2, decode_context_parallel_size=2)) == []


@pytest.mark.parametrize("version", RELEASES)
def test_pipeline_parallelism_needs_supports_pp(check: Check, version: str) -> None:
    found = check(files(ZAMBA2, pipeline_parallel_size=2), version=version)
    assert messages(found) == [
        refuses(
            version,
            "pipeline_parallel_size = 2 with a Zamba2ForCausalLM model",
            "Pipeline parallelism is not supported for this model. Supported models implement the `SupportsPP` "
            "interface.",
        )
    ]
    assert found[0].rule == "pipeline-parallel-unsupported"
    assert check(files(pipeline_parallel_size=2), version=version) == []


def test_more_pipeline_stages_than_layers_is_a_warning(check: Check) -> None:
    found = check(files(pipeline_parallel_size=3))
    assert [(f.rule, f.severity.value) for f in found] == [("pipeline-parallel-layers", "warning")]
    assert found[0].message == (
        "pipeline_parallel_size = 3 with a model of 2 hidden layers (config.json): 1 pipeline stage(s) would hold "
        "no layer; vLLM 0.33.0 accepts the configuration but cannot partition the model when it loads it"
    )
    assert check(files(pipeline_parallel_size=2)) == []


@pytest.mark.parametrize(
    ("serve", "what", "message"),
    [
        (
            {"enable_eplb": True, "tensor_parallel_size": 2},
            "enable_eplb = true without enable_expert_parallel",
            "enable_expert_parallel must be True to use EPLB.",
        ),
        (
            {"enable_eplb": True, "enable_expert_parallel": True},
            "enable_eplb = true with no tensor, prefill-context or data parallelism",
            "EPLB requires tensor, prefill-context, or data parallelism, but got TP=1, PCP=1, DP=1.",
        ),
        (
            {"eplb_config": {"num_redundant_experts": 2}},
            "eplb_config.num_redundant_experts = 2 without enable_eplb",
            "num_redundant_experts is set to 2 but EPLB is not enabled. Either enable EPLB or unset "
            "num_redundant_experts.",
        ),
    ],
)
def test_expert_parallel_load_balancing(check: Check, serve: dict[str, object], what: str, message: str) -> None:
    found = check(files(KIMI, **serve), rule="expert-parallel-load-balancing")
    assert messages(found) == [refuses("0.33.0", what, message)]
    fine = {"enable_eplb": True, "enable_expert_parallel": True, "tensor_parallel_size": 2}
    assert check(files(KIMI, **fine), rule="expert-parallel-load-balancing") == []


def test_heads_without_a_config_json_are_named_as_not_checked(check: Check) -> None:
    found = check(files(with_config=False, tensor_parallel_size=3))
    assert [(f.rule, f.severity.value) for f in found] == [("model-facts-missing", "warning")]
    assert [f.message for f in found] == [no_config("dummy/LlamaForCausalLM")]
    assert not_checked(found) == ["tensor_parallel_size = 3 against the attention heads"]
    assert found[0].fix == (
        'give profilekit the model\'s config.json once, in profilekit.toml: [models."dummy/LlamaForCausalLM"] '
        'config = "path/to/config.json" (relative to the repository root); or in a layer, [model] config = "...", '
        "or serve a local model folder"
    )
    assert check(files(with_config=False, tensor_parallel_size=1)) == []


@pytest.mark.parametrize("version", RELEASES)
def test_numa_bind_lists_need_numa_bind(check: Check, version: str) -> None:
    found = check(files(numa_bind_nodes=[0]), version=version)
    assert messages(found) == [
        refuses(
            version,
            "numa_bind_nodes without numa_bind = true",
            "numa_bind_nodes and numa_bind_cpus require numa_bind=True.",
        )
    ]
    assert found[0].rule == "numa-bind"
    assert check(files(numa_bind=True, numa_bind_nodes=[0]), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_elastic_expert_parallelism(check: Check, version: str) -> None:
    found = check(files(KIMI, enable_elastic_ep=True), version=version)
    assert messages(found) == [
        refuses(
            version,
            "enable_elastic_ep = true without enable_eplb",
            "Elastic EP is only supported with enable_eplb=True.",
        )
    ]
    assert found[0].rule == "elastic-expert-parallel"
    staged = check(
        files(KIMI, enable_elastic_ep=True, enable_eplb=True, pipeline_parallel_size=2),
        version=version,
        rule="elastic-expert-parallel",
    )
    assert messages(staged) == [
        refuses(
            version,
            "enable_elastic_ep = true with pipeline_parallel_size = 2",
            "Elastic EP is not supported with pipeline parallelism (pipeline_parallel_size=2).",
        )
    ]
    external = {"enable_elastic_ep": True, "enable_eplb": True, "data_parallel_size": 2, "data_parallel_rank": 0}
    found = check(files(KIMI, **external), version=version, rule="elastic-expert-parallel")
    if at_least(version, "0.33.0"):
        assert found == []  # 0.33.0 supports an external load balancer
    else:
        assert messages(found) == [
            refuses(
                version,
                "enable_elastic_ep = true with an external or hybrid data-parallel load balancer",
                "Elastic EP is not compatible with data_parallel_external_lb or data_parallel_hybrid_lb. Elastic EP "
                "relies on a single API server and core client to coordinate scale up/down.",
            )
        ]


def test_nsight_profiling_needs_ray_workers(check: Check) -> None:
    found = check(files(ray_workers_use_nsight=True))
    assert messages(found) == [
        refuses(
            "0.33.0",
            "ray_workers_use_nsight = true with no Ray executor",
            "Unable to use nsight profiling unless workers run with Ray.",
        )
    ]
    assert found[0].rule == "ray-nsight"
    assert check(files(ray_workers_use_nsight=True, distributed_executor_backend="ray")) == []


@pytest.mark.parametrize("version", RELEASES)
def test_expert_parallelism_needs_experts(check: Check, version: str) -> None:
    found = check(files(enable_expert_parallel=True), version=version)
    assert messages(found) == [
        refuses(
            version,
            "enable_expert_parallel = true with a model that has no experts (config.json)",
            "Number of experts in the model must be greater than 0 when expert parallelism is enabled.",
        )
    ]
    assert found[0].rule == "expert-parallel-dense-model"
    assert check(files(KIMI, enable_expert_parallel=True), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_nnodes_needs_an_mp_uni_or_external_launcher_executor(check: Check, version: str) -> None:
    found = check(files(nnodes=2, tensor_parallel_size=2, distributed_executor_backend="ray"), version=version)
    assert messages(found) == [
        refuses(
            version,
            'nnodes = 2 with distributed_executor_backend = "ray"',
            "nnodes > 1 can only be set when distributed executor backend is mp, uni or external_launcher.",
        )
    ]
    assert found[0].rule == "nnodes-executor-backend"
    for fine in ({"distributed_executor_backend": "mp"}, {}):
        assert check(files(nnodes=2, tensor_parallel_size=2, **fine), version=version) == []
    assert check(files(distributed_executor_backend="ray"), version=version, rule="nnodes-executor-backend") == []


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_passthrough_all2all_is_not_an_option(check: Check, version: str) -> None:
    # vLLM binds passthrough itself for a FlashInfer MoE-EP backend; the command line does not offer it, so
    # bind_passthrough_all2all_backend's "only valid with a moe_backend" is unreachable (docs/vllm-raises.md)
    found = check(files(all2all_backend="passthrough"), version=version)
    assert [f.rule for f in found] == ["invalid-value"]
    assert "passthrough" in found[0].message
