"""HiSparse with the options vLLM refuses beside it (rules/hisparse.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from profilekit.rules import vllm_verdict
from profilekit.session import Session
from tests.conftest import MakeRepo
from tests.rules.conftest import Check, messages, no_config, not_checked
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES

EXPLICIT = {"attention_config": {"hisparse_config": {"device_buffer_size": 4096}}}
CONNECTOR = {"kv_transfer_config": {"kv_connector": "HiSparseConnector", "kv_role": "kv_both"}}
MULTI = {
    "kv_transfer_config": {
        "kv_connector": "MultiConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"connectors": [{"kv_connector": "HiSparseConnector", "kv_role": "kv_both"}]},
    }
}
DSA = {"index_topk": 2048}  # HiSparse also needs a DSA model (vLLM checks index_topk after these)
V1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
MSG_V2 = "HiSparse requires Model Runner V2; remove VLLM_USE_V2_MODEL_RUNNER=0."
MSG_PP = "HiSparse does not support pipeline parallelism."
MSG_DCP = "HiSparse does not support decode context parallelism."
MSG_FULL = (
    "HiSparse does not support cudagraph_mode=FULL; use FULL_AND_PIECEWISE (the default), which captures FULL "
    "graphs for decode batches."
)
MSG_RESERVE = "HiSparse requires --scheduler-reserve-full-isl; remove --no-scheduler-reserve-full-isl."
MSG_DSA = "HiSparse is only supported for DSA models with index_topk."
MSG_HMA = (
    "HiSparse requires the hybrid KV cache manager; remove --disable-hybrid-kv-cache-manager or use connectors "
    "that support HMA."
)


def layer(hisparse: dict[str, Any], env: dict[str, str] | None = None, **serve: Any) -> dict[str, str]:
    return files(config=DSA, env=env, **hisparse, **serve)


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize(
    ("how", "hisparse"),
    [
        ("attention_config.hisparse_config", EXPLICIT),
        ('kv_connector "HiSparseConnector"', CONNECTOR),
        ('kv_connector "HiSparseConnector"', MULTI),
    ],
)
def test_hisparse_refuses_model_runner_v1(check: Check, version: str, how: str, hisparse: dict[str, Any]) -> None:
    found = check(layer(hisparse, env=V1), version=version, rule="hisparse-model-runner-v1")
    if version < "0.30.0":
        assert found == []
        return
    assert messages(found) == [refuses(version, f'{how} with VLLM_USE_V2_MODEL_RUNNER = "0"', MSG_V2)]
    assert check(layer(hisparse), version=version) == []
    assert check(layer(hisparse, env={"VLLM_USE_V2_MODEL_RUNNER": "1"}), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_hisparse_refuses_pipeline_and_decode_context_parallelism(check: Check, version: str) -> None:
    both = layer(EXPLICIT, pipeline_parallel_size=2, decode_context_parallel_size=2, tensor_parallel_size=4)
    found = check(both, version=version, rule="hisparse-unsupported")
    if version < "0.30.0":
        assert found == []
        return
    what = "attention_config.hisparse_config with"
    assert messages(found) == [
        refuses(version, f"{what} pipeline_parallel_size = 2", MSG_PP),
        refuses(version, f"{what} decode_context_parallel_size = 2", MSG_DCP),
    ]
    assert check(layer(EXPLICIT, tensor_parallel_size=4), version=version) == []
    # without HiSparse the same parallel layout is accepted
    assert check(files(config=DSA, pipeline_parallel_size=2), version=version, rule="hisparse-unsupported") == []


@pytest.mark.parametrize("version", RELEASES)
def test_hisparse_refuses_full_cuda_graphs(check: Check, version: str) -> None:
    full = layer(CONNECTOR, compilation_config={"cudagraph_mode": "FULL"})
    found = check(full, version=version, rule="hisparse-unsupported")
    if version < "0.32.0":
        assert found == []
        return
    assert messages(found) == [
        refuses(version, 'kv_connector "HiSparseConnector" with compilation_config.cudagraph_mode = "FULL"', MSG_FULL)
    ]
    assert check(layer(CONNECTOR, compilation_config={"cudagraph_mode": "FULL_AND_PIECEWISE"}), version=version) == []
    # enforce_eager turns CUDA graphs off before vLLM looks
    eager = layer(CONNECTOR, enforce_eager=True, compilation_config={"cudagraph_mode": "FULL"})
    assert check(eager, version=version, rule="hisparse-unsupported") == []


@pytest.mark.parametrize("version", RELEASES)
def test_hisparse_needs_the_full_input_reserved(check: Check, version: str) -> None:
    found = check(layer(EXPLICIT, scheduler_reserve_full_isl=False), version=version, rule="hisparse-unsupported")
    if version < "0.31.0":
        assert found == []
        return
    assert messages(found) == [
        refuses(version, "attention_config.hisparse_config with scheduler_reserve_full_isl = false", MSG_RESERVE)
    ]
    assert check(layer(EXPLICIT, scheduler_reserve_full_isl=True), version=version) == []


@pytest.mark.parametrize("version", RELEASES)
def test_hisparse_needs_a_dsa_model(check: Check, version: str) -> None:
    found = check(files(**EXPLICIT), version=version, rule="hisparse-unsupported")
    if version < "0.30.0":
        assert found == []
        return
    assert messages(found) == [
        refuses(
            version,
            "attention_config.hisparse_config with a model whose config.json has no index_topk (not a DSA model)",
            MSG_DSA,
        )
    ]
    assert [loc.key for loc in found[0].locations][-1] == "model.config"
    assert found[0].fix == "serve a DSA model (its config.json has index_topk), or drop HiSparse"
    assert check(files(config=DSA, **CONNECTOR), version=version, rule="hisparse-unsupported") == []
    # a model type whose config class gives index_topk a default: vLLM sees the attribute
    default = files(config={"model_type": "deepseek_v32"}, **EXPLICIT)
    assert check(default, version=version, rule="hisparse-unsupported") == []


def test_vllm_names_pipeline_parallelism_before_the_missing_index_topk(make_repo: MakeRepo) -> None:
    root: Path = make_repo(files(pipeline_parallel_size=2, **EXPLICIT), config='[vllm]\nversion = "0.33.0"\n')
    session = Session.open(repo=root, vllm_version=None)
    found = session.check(session.stack("s"))
    assert sorted(f.message.rsplit("start: ", 1)[1] for f in found if f.rule == "hisparse-unsupported") == [
        f'"{MSG_PP}"',
        f'"{MSG_DSA}"',
    ]
    verdict = vllm_verdict(session.stack("s"), "serve", version="0.33.0", catalogue=session.catalogue, root=root)
    assert verdict.rule == "hisparse-unsupported"
    assert verdict.message is not None and verdict.message.endswith(f'"{MSG_PP}"')


def test_hisparse_without_the_config_json_says_the_check_could_not_run(check: Check) -> None:
    found = check(files(with_config=False, **EXPLICIT), rule="model-facts-missing")
    assert [f.message for f in found] == [no_config("dummy/LlamaForCausalLM")]
    assert not_checked(found) == ["HiSparse against the model's index_topk (a DSA model or not)"]


@pytest.mark.parametrize("version", RELEASES)
def test_hisparse_needs_the_hybrid_kv_cache_manager(check: Check, version: str) -> None:
    off = layer(EXPLICIT, disable_hybrid_kv_cache_manager=True)
    found = check(off, version=version, rule="hisparse-hybrid-kv-cache-manager")
    if version < "0.30.0":
        assert found == []
        return
    assert messages(found) == [
        refuses(version, "attention_config.hisparse_config with disable_hybrid_kv_cache_manager = true", MSG_HMA)
    ]
    assert check(layer(EXPLICIT, disable_hybrid_kv_cache_manager=False), version=version) == []
    plain = files(config=DSA, disable_hybrid_kv_cache_manager=True)
    assert check(plain, version=version, rule="hisparse-hybrid-kv-cache-manager") == []


@pytest.mark.parametrize(
    ("version", "first"), [("0.30.0", "hisparse-unsupported"), ("0.33.0", "hisparse-model-runner-v1")]
)
def test_vllm_names_the_first_hisparse_failure(make_repo: MakeRepo, version: str, first: str) -> None:
    """0.33.0 asks which runner it uses before the HiSparse block, 0.30.0 only after it."""
    root: Path = make_repo(layer(EXPLICIT, env=V1, pipeline_parallel_size=2), config=f'[vllm]\nversion = "{version}"\n')
    session = Session.open(repo=root, vllm_version=None)
    verdict = vllm_verdict(session.stack("s"), "serve", version=version, catalogue=session.catalogue, root=root)
    assert verdict.rule == first


def test_hisparse_picks_model_runner_v2_even_for_what_v2_lacks(check: Check) -> None:
    """`use_v2_model_runner` answers V2 for HiSparse before it looks at the features V2 lacks."""
    found = check(layer(EXPLICIT, logits_processors=["pkg.Processor"]), version="0.30.0")
    assert messages(found) == [
        refuses(
            "0.30.0",
            "attention_config.hisparse_config makes vLLM 0.30.0 pick Model Runner V2 with custom logits processors",
            "Model Runner V2 does not yet support: custom logits processors",
        )
    ]
    assert check(files(config=DSA, logits_processors=["pkg.Processor"]), version="0.30.0") == []
