"""Known-answer tests of the vLLM oracle worker (tools/oracle/worker.py).

The expected messages come from reference/vllm-facts.md section 1.4 (0.33.0)
and section 1.3a (0.27.0 wording). The oracle judges as a GPU host with
Triton would (facts section 8): with ``VLLM_USE_V2_MODEL_RUNNER`` unset such a
host picks the V2 model runner, so the section 1.4 rows, observed on a CPU
that falls back to V1, pin ``VLLM_USE_V2_MODEL_RUNNER=0`` here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.oracle import models

if TYPE_CHECKING:
    from tests.oracle.conftest import OraclePool
    from tests.oracle.oracle_client import OracleWorker

pytestmark = pytest.mark.oracle

REPO_ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = REPO_ROOT / "src" / "profilekit" / "vllm" / "catalogues"

NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
LMCACHE_V1 = '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'
NGRAM = '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}'
REPLAY = ["--use-replayssm"]
V1_RUNNER = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
V2_RUNNER = {"VLLM_USE_V2_MODEL_RUNNER": "1"}
KV_CONNECTOR_ERROR = "--use-replayssm is incompatible with KV connectors (P/D disaggregation, KV cache offload)"
TRITON_NEEDS_V1 = "Triton ReplaySSM requires Model Runner V1; use --mamba-backend flashinfer or Model Runner V1"


@dataclass(frozen=True)
class Case:
    """One command line and vLLM's verdict: ``error`` None means accepted."""

    id: str
    args: list[str]
    error: str | None = None
    env: dict[str, str | None] = field(default_factory=lambda: dict(V1_RUNNER))
    model: str = "NemotronHForCausalLM"
    exit_code: int | None = None  # 2 when argparse itself rejects the line
    undecidable: bool = False  # no CPU verdict (facts 5.1a, 8)


def run(oracle: OracleWorker, case: Case) -> dict[str, Any]:
    return oracle.validate(["dummy-model", *case.args], env=case.env, config_json=models.config_json(case.model))


def check(answer: dict[str, Any], case: Case) -> None:
    shown = json.dumps(answer, indent=1)
    if case.error is None:
        assert answer == {"ok": True}, shown
        return
    assert answer["ok"] is False, shown
    assert case.error in answer["error"], shown
    if case.exit_code is not None:
        assert answer.get("exit_code") == case.exit_code, shown
    assert ("undecidable" in answer) is case.undecidable, shown


# vllm-facts.md section 1.4, one row each, in the table's order.
CASES_0_33_0 = [
    Case("replayssm-alone", REPLAY),
    Case("nixl-json", [*REPLAY, "--kv-transfer-config", NIXL], KV_CONNECTOR_ERROR),
    Case(
        "nixl-dotted-consumer",
        [
            *REPLAY,
            "--kv-transfer-config.kv_connector",
            "NixlConnector",
            "--kv-transfer-config.kv_role",
            "kv_consumer",
        ],
        KV_CONNECTOR_ERROR,
    ),
    Case("offloading-size", [*REPLAY, "--kv-offloading-size", "8"], KV_CONNECTOR_ERROR),
    Case("lmcache-connector-v1", [*REPLAY, "--kv-transfer-config", LMCACHE_V1], KV_CONNECTOR_ERROR),
    Case(
        "offloading-lmcache",
        [*REPLAY, "--kv-offloading-size", "8", "--kv-offloading-backend", "lmcache"],
        "No module named 'lmcache'",
        undecidable=True,
    ),
    Case(
        "flashinfer-prefix-caching",
        [*REPLAY, "--mamba-backend", "flashinfer"],
        "FlashInfer ReplaySSM does not support prefix caching yet; use --disable-prefix-caching",
    ),
    Case("flashinfer-no-prefix-caching", [*REPLAY, "--mamba-backend", "flashinfer", "--no-enable-prefix-caching"]),
    Case("backend-cpu", [*REPLAY, "--mamba-backend", "cpu"], "requires --mamba-backend triton or flashinfer"),
    Case(
        "backend-bogus",
        [*REPLAY, "--mamba-backend", "bogus"],
        "Unknown Mamba SSU backend: 'BOGUS'. Valid options are: TRITON, FLASHINFER, CPU",
    ),
    Case(
        "flashinfer-buffer-32",
        [*REPLAY, "--replayssm-buffer-len", "32", "--mamba-backend", "flashinfer", "--no-enable-prefix-caching"],
        "requires --replayssm-buffer-len <= 16",
    ),
    Case(
        "spec-prefix-caching",
        [*REPLAY, "--speculative-config", NGRAM],
        "speculative decoding does not support prefix caching; use --disable-prefix-caching",
    ),
    Case(
        "spec-triton",
        [*REPLAY, "--speculative-config", NGRAM, "--no-enable-prefix-caching"],
        "Mamba2 ReplaySSM speculative decoding requires --mamba-backend flashinfer",
    ),
    Case(
        "spec-flashinfer",
        [*REPLAY, "--speculative-config", NGRAM, "--no-enable-prefix-caching", "--mamba-backend", "flashinfer"],
    ),
    Case(
        "spec-flashinfer-buffer-2",
        [
            *REPLAY,
            "--speculative-config",
            NGRAM,
            "--no-enable-prefix-caching",
            "--mamba-backend",
            "flashinfer",
            "--replayssm-buffer-len",
            "2",
        ],
        "requires --replayssm-buffer-len >= 1 + num_speculative_tokens (4); got 2",
    ),
    Case("v2-runner", REPLAY, TRITON_NEEDS_V1, env=dict(V2_RUNNER)),
    Case(
        "llama",
        REPLAY,
        "--use-replayssm is not supported for architecture 'LlamaForCausalLM'",
        model="LlamaForCausalLM",
    ),
    Case(
        "mamba-cache-mode-all",
        [*REPLAY, "--mamba-cache-mode", "all"],
        "invalid choice: 'all' (choose from 'align', 'none')",
        exit_code=2,
    ),
    # Beyond the table: the GPU-host judgement (facts 1.2 rule 7 and section 8) ...
    Case("gpu-host-default-runner", REPLAY, TRITON_NEEDS_V1, env={}),
    # ... --disable-prefix-caching exists from 0.33.0 on (facts 1.3a notes) ...
    Case("disable-prefix-caching", [*REPLAY, "--mamba-backend", "flashinfer", "--disable-prefix-caching"]),
    # ... an unregistered connector (facts section 8) ...
    Case(
        "shared-storage-connector",
        ["--kv-transfer-config", '{"kv_connector":"SharedStorageConnector","kv_role":"kv_both"}'],
        "Unsupported connector type: SharedStorageConnector",
    ),
    # ... and the Kimi KDA path, the only one exempt from the KV-connector rule in 0.33.0.
    Case("qwen3", REPLAY, "not supported for architecture 'Qwen3ForCausalLM'", model="Qwen3ForCausalLM"),
    Case(
        "kimi-spec-v1-runner",
        [*REPLAY, "--speculative-config", NGRAM],
        "RecoverSSM with prefix caching requires VLLM_USE_V2_MODEL_RUNNER=1",
        model="KimiLinearForCausalLM",
    ),
    Case(
        "kimi-spec-nixl",
        [*REPLAY, "--speculative-config", NGRAM, "--kv-transfer-config", NIXL],
        env=dict(V2_RUNNER),
        model="KimiLinearForCausalLM",
    ),
    Case(
        "kimi-spec-flashinfer",
        [*REPLAY, "--speculative-config", NGRAM, "--no-enable-prefix-caching", "--mamba-backend", "flashinfer"],
        "RecoverSSM requires --mamba-backend triton",
        model="KimiLinearForCausalLM",
    ),
]

# 0.27.0: the reported error record's wording (facts 1.3 and 1.3a).
CASES_0_27_0 = [
    Case("replayssm-alone", REPLAY),
    Case(
        "llama",
        REPLAY,
        "--use-replayssm is only supported for Nemotron-H models (got architecture 'LlamaForCausalLM')",
        model="LlamaForCausalLM",
    ),
    Case(
        "kimi",
        REPLAY,
        "only supported for Nemotron-H models (got architecture 'KimiLinearForCausalLM')",
        model="KimiLinearForCausalLM",
    ),
    Case("flashinfer", [*REPLAY, "--mamba-backend", "flashinfer"], "--use-replayssm requires --mamba-backend triton"),
    Case("cpu-backend", [*REPLAY, "--mamba-backend", "cpu"], "--use-replayssm requires --mamba-backend triton"),
    Case(
        "spec",
        [*REPLAY, "--speculative-config", NGRAM],
        "--use-replayssm does not support speculative decoding",
    ),
    Case("nixl-json", [*REPLAY, "--kv-transfer-config", NIXL], KV_CONNECTOR_ERROR),
    Case("offloading-size", [*REPLAY, "--kv-offloading-size", "8"], KV_CONNECTOR_ERROR),
    Case(
        "offloading-lmcache",
        [*REPLAY, "--kv-offloading-size", "8", "--kv-offloading-backend", "lmcache"],
        "No module named 'lmcache'",
        undecidable=True,
    ),
    # Prefix caching is off by default for hybrid models in 0.27.x; turned on it means mode "all".
    Case(
        "prefix-caching-mode-all",
        [*REPLAY, "--enable-prefix-caching"],
        "--use-replayssm supports prefix caching only in align mode; pass --mamba-cache-mode align",
    ),
    Case("prefix-caching-align", [*REPLAY, "--enable-prefix-caching", "--mamba-cache-mode", "align"]),
    Case(
        "disable-prefix-caching-unknown",
        [*REPLAY, "--disable-prefix-caching"],
        "unrecognized arguments: --disable-prefix-caching",
        exit_code=2,
    ),
    # With HAS_TRITON set, 0.27.0 accepts the V2 runner as a GPU host would (facts 5.1a, 8).
    Case("v2-runner", REPLAY, env=dict(V2_RUNNER)),
]


@pytest.mark.parametrize("case", CASES_0_33_0, ids=lambda c: c.id)
def test_known_answers_0_33_0(oracle_pool: OraclePool, case: Case) -> None:
    check(run(oracle_pool.get("0.33.0"), case), case)


@pytest.mark.parametrize("case", CASES_0_27_0, ids=lambda c: c.id)
def test_known_answers_0_27_0(oracle_pool: OraclePool, case: Case) -> None:
    check(run(oracle_pool.get("0.27.0"), case), case)


ENV_NAMES = ["VLLM_USE_V2_MODEL_RUNNER", "VLLM_USE_SIMPLE_KV_OFFLOAD"]


def test_case_env_does_not_leak(oracle: OracleWorker) -> None:
    nemotron = models.nemotron_h()
    before = oracle.envs(ENV_NAMES)
    assert before["environ"] == dict.fromkeys(ENV_NAMES), before

    oracle.validate(
        ["dummy-model", *REPLAY], env={**V2_RUNNER, "VLLM_USE_SIMPLE_KV_OFFLOAD": "1"}, config_json=nemotron
    )
    assert oracle.envs(ENV_NAMES) == before

    oracle.validate(["dummy-model", *REPLAY], env={}, config_json=nemotron)
    assert oracle.envs(ENV_NAMES) == before


def test_case_env_verdicts_in_sequence_0_33_0(oracle_pool: OraclePool) -> None:
    """V2 runner set, then unset, then V1, then unset again: each verdict is its own."""
    oracle = oracle_pool.get("0.33.0")
    nemotron = models.nemotron_h()
    verdicts = []
    for env in (V2_RUNNER, {}, V1_RUNNER, {}, V1_RUNNER, V2_RUNNER, V1_RUNNER):
        answer = oracle.validate(["dummy-model", *REPLAY], env=dict(env), config_json=nemotron)
        verdicts.append("ok" if answer["ok"] else answer["error"])
    needs_v1 = TRITON_NEEDS_V1
    assert verdicts == [needs_v1, needs_v1, "ok", needs_v1, "ok", needs_v1, "ok"]


def test_parse_returns_the_namespace(oracle: OracleWorker) -> None:
    answer = oracle.parse(["some/model", *REPLAY, "--kv-transfer-config", NIXL, "--replayssm-buffer-len", "8"])
    assert answer["ok"] is True, answer
    namespace = answer["namespace"]
    assert namespace["model_tag"] == "some/model"
    assert namespace["use_replayssm"] is True
    assert namespace["replayssm_buffer_len"] == 8
    assert namespace["kv_transfer_config"] == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    assert namespace["speculative_config"] is None
    json.dumps(namespace)  # everything is JSON


def test_parse_dotted_keys_equal_json(oracle: OracleWorker) -> None:
    dotted = oracle.parse(
        ["m", "--kv-transfer-config.kv_connector", "NixlConnector", "--kv-transfer-config.kv_role", "kv_both"]
    )
    assert dotted["namespace"]["kv_transfer_config"] == json.loads(NIXL)


def test_parse_error_is_argparse_exit_2(oracle: OracleWorker) -> None:
    answer = oracle.parse(["m", "--no-such-flag"])
    assert answer["ok"] is False
    assert answer["exit_code"] == 2
    assert answer["error"] == "unrecognized arguments: --no-such-flag"


def test_worker_survives_bad_requests(oracle: OracleWorker) -> None:
    for payload in ({"op": "nope"}, {"op": "parse", "argv": "not a list"}, {"op": "validate", "argv": [1]}):
        answer = oracle.request(payload)
        assert answer["ok"] is False
        assert answer.get("internal") is True
    assert oracle.parse(["m"])["ok"] is True


def test_catalogue_matches_committed_file(oracle: OracleWorker) -> None:
    committed = json.loads((CATALOGUES / f"vllm-{oracle.version}.json").read_text(encoding="utf-8"))
    assert oracle.catalogue() == committed, (
        f"src/profilekit/vllm/catalogues/vllm-{oracle.version}.json is stale: "
        f"run python3 tools/gen_catalogue.py --versions {oracle.version}"
    )


EPLB_PLATFORM = "Expert parallelism load balancing is only supported on CUDA devices"


def test_eplb_is_judged_as_a_cuda_host_judges_it(oracle: OracleWorker) -> None:
    """ParallelConfig refuses EPLB on the CPU platform before its own checks; the worker answers as CUDA there."""
    kimi = models.config_json("KimiLinearForCausalLM")
    without_ep = oracle.validate(["dummy/KimiLinearForCausalLM", "--enable-eplb"], config_json=kimi)
    assert (without_ep["ok"], without_ep["error"]) == (False, "enable_expert_parallel must be True to use EPLB.")
    assert "undecidable" not in without_ep
    with_tp = ["--enable-eplb", "--enable-expert-parallel", "--tensor-parallel-size", "2"]
    assert oracle.validate(["dummy/KimiLinearForCausalLM", *with_tp], config_json=kimi) == {"ok": True}
    assert any(entry.startswith("vllm/config/parallel.py current_platform") for entry in oracle.hello["neutralised"])
    assert EPLB_PLATFORM not in json.dumps(without_ep)


def test_flashkda_is_judged_as_a_cuda_host_judges_it(oracle: OracleWorker) -> None:
    """`--kda-prefill-backend=flashkda` (0.30.0+) asks `current_platform.is_cuda()`; the worker answers as CUDA there,
    and `fused` (ROCm only) stays refused, as on CUDA."""
    argv = ["dummy/KimiLinearForCausalLM", "--kda-prefill-backend"]
    kimi = models.config_json("KimiLinearForCausalLM")
    flashkda = oracle.validate([*argv, "flashkda"], config_json=kimi)
    fused = oracle.validate([*argv, "fused"], config_json=kimi)
    assert any(entry.startswith("vllm/engine/arg_utils.py current_platform") for entry in oracle.hello["neutralised"])
    assert flashkda == {"ok": True}
    if oracle.version in ("0.27.0", "0.27.1", "0.28.0", "0.29.0"):
        return  # no platform check on the KDA backends before 0.30.0
    assert (fused["ok"], fused["error"]) == (False, "--kda-prefill-backend=fused is only available on ROCm.")
