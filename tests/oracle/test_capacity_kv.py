"""profilekit's KV cache (src/profilekit/capacity/kv.py) against vLLM's own objects, per release.

For real models' config.json files (tests/data/capacity/kv-configs.json: dense GQA, MHA, MQA, MoE, MLA, sliding
window global and per layer, multimodal) and option sets (tensor and pipeline parallelism, decode context
parallelism, kv_cache_dtype, block_size, max_model_len, disable_sliding_window, disable_hybrid_kv_cache_manager,
async scheduling), tools/oracle/kv_probe.py builds vLLM's VllmConfig from EngineArgs, the KV-cache specs with
vLLM's own spec classes and ModelConfig answers, and runs the release's own planning on several amounts of
memory. Every figure must be equal: the layers by kind (block size, page bytes, window), the bytes one request of
max_model_len needs, the fit verdict (with the null-block reserve from 0.29.0), the estimated maximum length
vLLM's refusal names, the number of blocks, the "GPU KV cache size" tokens and the maximum concurrency.

`PROFILEKIT_KV_RESULTS=write` rewrites tests/oracle/results/capacity-kv-<release>.json (the per-model comparison).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from profilekit.capacity.kv import KvLayout, kv_layout
from profilekit.capacity.mamba import FAMILIES as HYBRID_FAMILIES
from profilekit.capacity.mamba import GDN as GDN_FAMILIES
from profilekit.hardware import CATALOGUE
from profilekit.rules.facts import prefix_caching_and_mamba_mode
from profilekit.rules.models import ModelFacts
from tests.oracle.conftest import oracle_disabled
from tests.oracle.probes import run_probe

pytestmark = pytest.mark.oracle

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CONFIGS = json.loads((ROOT / "tests" / "data" / "capacity" / "kv-configs.json").read_text())["models"]
RESULTS = HERE / "results"
GIB = 1 << 30

BASE = {"max_num_batched_tokens": 8192}
# every model runs four of these (a different four for the next model), so each set meets many models
COMMON: tuple[dict[str, Any], ...] = (
    {"tensor_parallel_size": 1, "max_model_len": 4096},
    {"tensor_parallel_size": 2, "block_size": 32, "kv_cache_dtype": "fp8", "max_model_len": 8192},
    {"tensor_parallel_size": 4, "block_size": 64, "max_model_len": 2048, "max_num_batched_tokens": 2048},
    {"tensor_parallel_size": 8, "block_size": 16, "max_model_len": 32768, "kv_cache_dtype": "fp8_e5m2"},
    {"tensor_parallel_size": 2, "pipeline_parallel_size": 3, "block_size": 16, "max_model_len": 4096},
    {"tensor_parallel_size": 8, "decode_context_parallel_size": 2, "block_size": 16, "max_model_len": 8192},
)
# and a model with sliding-window layers these too
SLIDING: tuple[dict[str, Any], ...] = (
    {"tensor_parallel_size": 1, "block_size": 32, "max_model_len": 4096, "disable_hybrid_kv_cache_manager": True},
    {"tensor_parallel_size": 2, "block_size": 16, "max_model_len": 8192, "async_scheduling": False},
    {"tensor_parallel_size": 1, "pipeline_parallel_size": 2, "max_model_len": 4096, "async_scheduling": False},
    {"tensor_parallel_size": 1, "block_size": 16, "max_model_len": 2048, "disable_sliding_window": True},
)


# and a hybrid (Mamba) model these: prefix caching on and off (Mamba cache modes align and none), the state dtypes
HYBRID: tuple[dict[str, Any], ...] = (
    {"tensor_parallel_size": 1, "max_model_len": 4096, "enable_prefix_caching": False},
    {"tensor_parallel_size": 2, "max_model_len": 8192, "enable_prefix_caching": True},
    {"tensor_parallel_size": 1, "block_size": 64, "max_model_len": 2048, "enable_prefix_caching": True},
    {"tensor_parallel_size": 4, "max_model_len": 2048, "mamba_ssm_cache_dtype": "float16", "kv_cache_dtype": "fp8"},
    {"tensor_parallel_size": 1, "pipeline_parallel_size": 2, "max_model_len": 2048, "mamba_cache_dtype": "float32"},
)
# and Nemotron-H these: the ReplaySSM rings (Triton and FlashInfer Mamba backends)
REPLAYSSM: tuple[dict[str, Any], ...] = (
    {"tensor_parallel_size": 1, "max_model_len": 4096, "use_replayssm": True, "enable_prefix_caching": False},
    {
        "tensor_parallel_size": 2,
        "max_model_len": 4096,
        "use_replayssm": True,
        "replayssm_buffer_len": 8,
        "mamba_backend": "flashinfer",
        "enable_prefix_caching": False,
    },
    {"tensor_parallel_size": 4, "max_model_len": 2048, "use_replayssm": True},
)
# config.json files without `architectures` (a trimmed copy): the class transformers maps the model type to
ARCHITECTURE = {"granitemoehybrid": "GraniteMoeHybridForCausalLM", "qwen3_next": "Qwen3NextForCausalLM"}


# the one place the layout reads the GPU: whether 0.33.0's gated delta nets export prefill checkpoints (FlashInfer's
# GDN prefill, Hopper and Blackwell); vLLM's CPU platform resolves the GDN prefill backend to Triton, as an A100 does
_GPU_LIKE_THE_ORACLE = CATALOGUE["A100-SXM4-80GB"]


def _mamba_mode(version: str, config: dict[str, Any], serve: dict[str, Any]) -> str | None:
    """The Mamba cache mode profilekit's role facts give the role (prefix caching's default, then the mode)."""
    arch = (config.get("architectures") or [ARCHITECTURE.get(str(config.get("model_type")))])[0]
    return prefix_caching_and_mamba_mode(
        version, ModelFacts(model=None, architecture=arch, source="config.json"), serve
    )[2]


def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for n, (name, entry) in enumerate(CONFIGS.items()):
        if entry.get("oracle") is False:
            continue
        config = entry["config"]
        text = config.get("text_config", config)
        sets = [COMMON[(n + k) % len(COMMON)] for k in range(4)]
        if text.get("model_type") in HYBRID_FAMILIES:
            sets = [*HYBRID, *sets[:2], *(REPLAYSSM if text.get("model_type") == "nemotron_h" else ())]
        elif text.get("sliding_window"):
            sets += SLIDING
        for options in sets:
            serve = {**BASE, **options}
            if text["num_attention_heads"] % serve["tensor_parallel_size"]:
                continue
            # within the model's positions (and its window where the window caps them)
            serve["max_model_len"] = min(serve["max_model_len"], text.get("max_position_embeddings", 2048))
            if serve.get("disable_sliding_window"):
                serve["max_model_len"] = min(serve["max_model_len"], text["sliding_window"])
            cases.append({"model": name, "config": config, "serve": serve})
            if text.get("model_type") in GDN_FAMILIES and options.get("enable_prefix_caching"):
                # and on a Hopper GPU, where vLLM's GDN prefill is FlashInfer's (0.33.0: prefill checkpoints)
                cases.append({"model": name, "config": config, "serve": serve, "gpu": "H100-SXM-80GB"})
    return cases


CASES = _cases()


def _amounts(layout: KvLayout, max_model_len: int) -> list[int]:
    """Memory around the verdict's edges and far from them."""
    needed = layout.needed_bytes(max_model_len)
    edge = needed + (layout.block_bytes() if layout.null_block else 0)
    return sorted({edge, edge - 1, needed // 3, 24 * GIB, 3 * GIB + 12345, 1000})


@pytest.fixture
def probed(oracle_version: str) -> Iterator[tuple[str, list[dict[str, Any]], list[Any]]]:
    if oracle_disabled():
        pytest.skip("PROFILEKIT_ORACLE=off")
    layouts: list[Any] = []
    requests: list[dict[str, Any]] = []
    for case in CASES:
        serve = case["serve"]
        mode = _mamba_mode(oracle_version, case["config"], serve)
        gpu = CATALOGUE[case["gpu"]] if "gpu" in case else _GPU_LIKE_THE_ORACLE
        layout = kv_layout(
            case["config"],
            version=oracle_version,
            serve=serve,
            gpu=gpu,
            mamba_mode=mode,
            max_model_len=serve["max_model_len"],
        )
        layouts.append(layout)
        amounts = _amounts(layout, case["serve"]["max_model_len"]) if isinstance(layout, KvLayout) else [GIB]
        case_request = {"config": case["config"], "serve": case["serve"], "available": amounts}
        if gpu.platform == "cuda" and gpu.capability[0] == 9:
            # vLLM's `_resolve_gdn_prefill_backend` picks FlashInfer on Hopper (auto or asked for); on the CPU it
            # answers Triton, so the probe has it answer as on this GPU
            case_request["gdn_prefill"] = "flashinfer"
        requests.append(case_request)
    answers = run_probe(oracle_version, "kv_probe.py", requests, timeout=900)
    yield oracle_version, answers, layouts


def _shape(layout: KvLayout) -> list[list[Any]]:
    return sorted([s.kind, s.layers, s.block_size, s.page_bytes, s.window] for s in layout.specs)


def _compare(layout: Any, answer: dict[str, Any], mml: int) -> list[str]:
    """What differs between profilekit and vLLM for one case ([] when everything is equal)."""
    if not answer["ok"]:
        return []  # vLLM refuses the options themselves: other rules' business
    if isinstance(layout, str):
        return [f"profilekit: {layout}"]
    wrong: list[str] = []
    vllm_layers = sorted(answer["layers"])
    if _shape(layout) != vllm_layers:
        wrong.append(f"layers {_shape(layout)} != vLLM {vllm_layers}")
    for r in answer["results"]:
        a = r["available"]
        ours = {
            "fits": layout.fits(a, mml),
            "needed": layout.needed_bytes(mml),
            "estimate": layout.estimate_max_model_len(a, mml),
        }
        theirs = {"fits": r["fits"], "needed": r["needed"], "estimate": mml if r["fits"] else r["error_estimate"]}
        if r["fits"]:
            ours.update(
                num_blocks=layout.num_blocks(a),
                tokens=layout.tokens(a, mml),
                concurrency=layout.max_concurrency(a, mml),
            )
            theirs.update(num_blocks=r["num_blocks"], tokens=r["tokens"], concurrency=r["concurrency"])
        if ours != theirs:
            wrong.append(f"available {a}: profilekit {ours} != vLLM {theirs}")
    return wrong


def test_kv_cache_equals_vllm(probed: tuple[str, list[dict[str, Any]], list[Any]]) -> None:
    version, answers, layouts = probed
    report: dict[str, Any] = {}
    failures: list[str] = []
    for case, answer, layout in zip(CASES, answers, layouts, strict=True):
        mml = case["serve"]["max_model_len"]
        wrong = _compare(layout, answer, mml)
        mode = _mamba_mode(version, case["config"], case["serve"])
        if answer["ok"] and mode is not None and mode != answer["mamba_cache_mode"]:
            wrong.append(f"Mamba cache mode {mode} != vLLM {answer['mamba_cache_mode']}")
        entry = report.setdefault(
            case["model"], {"source": CONFIGS[case["model"]]["source"], "cases": 0, "equal": 0, "refused_by_vllm": 0}
        )
        entry["cases"] += 1
        if not answer["ok"] and answer["error"].startswith("probe failure"):
            failures.append(f"{case['model']} {case['serve']}: the probe itself failed: {answer['error'][-600:]}")
            continue
        if not answer["ok"]:
            entry["refused_by_vllm"] += 1
            entry.setdefault("refusals", []).append({"serve": case["serve"], "error": answer["error"][:300]})
            continue
        if isinstance(layout, str) and layout.startswith("not modelled yet"):
            # said, not guessed: counted, never compared (the module docstring of kv.py lists these)
            entry["not_modelled"] = entry.get("not_modelled", 0) + 1
            entry.setdefault("not_modelled_cases", []).append({"serve": case["serve"], "profilekit": layout})
            continue
        if wrong:
            failures.append(f"{case['model']} {case['serve']}: " + "; ".join(wrong))
            entry.setdefault("differences", []).append({"serve": case["serve"], "wrong": wrong})
        else:
            entry["equal"] += 1
        first = answer["results"][-1]
        entry.setdefault("figures", []).append(
            {
                "serve": case["serve"],
                "layers": answer["layers"],
                "needed_bytes": first["needed"],
                "available": first["available"],
                "fits": first["fits"],
                "tokens": first["tokens"],
                "concurrency": first["concurrency"],
            }
        )
    if os.environ.get("PROFILEKIT_KV_RESULTS") == "write":
        total = sum(e["cases"] - e["refused_by_vllm"] - e.get("not_modelled", 0) for e in report.values())
        equal = sum(e["equal"] for e in report.values())
        document = {
            "release": version,
            "about": "profilekit's KV cache against vLLM's own (tests/oracle/test_capacity_kv.py); figures: the "
            "last amount of memory of each case",
            "compared": total,
            "equal": equal,
            "models": report,
        }
        (RESULTS / f"capacity-kv-{version}.json").write_text(json.dumps(document, indent=1) + "\n")
    assert not failures, f"{len(failures)} cases differ from vLLM {version}:\n" + "\n".join(failures[:40])
