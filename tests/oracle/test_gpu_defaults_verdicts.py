"""vLLM's batch defaults on the declared GPU give vLLM's verdict (issue 27, item 2; rules/scheduler.py).

`EngineArgs.get_batch_defaults` picks `max_num_batched_tokens` / `max_num_seqs` by the device's total memory, name
and (0.33.0) capability. The oracle's `validate` takes the declared GPU's figures from profilekit's catalogue and
makes vLLM's platform answer those three queries with them inside `get_batch_defaults` (tools/oracle/worker.py);
everything else is judged as before. For every selected release, each GPU below and each case, profilekit's
`vllm_verdict` on a stack with `[hardware] gpu = NAME` must equal vLLM's, and both the verdict written here by hand
from vLLM's source (not from profilekit's function): the tiers are 2048 below 70 GiB or on an A100, 8192 from 70
GiB, and from 0.28.0 16384 from 160 GiB; a GB10 (capability 12.1) stays small from 0.33.0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import tomlkit

from profilekit.compose.index import LayerIndex
from profilekit.compose.merge import compose
from profilekit.hardware import CATALOGUE
from profilekit.rules import check_stack, vllm_verdict
from profilekit.vllm.argv import render_argv
from profilekit.vllm.catalogue import load_catalogue
from tests.oracle.conftest import OraclePool, selected_versions
from tests.oracle.test_crossfield import LLAMA, Case, _config

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from verdict_corpus import rule_for_message

SEQS = "max-num-batched-tokens-seqs"
GPUS = ("T4", "L40S", "A100-SXM4-80GB", "H100-SXM-80GB", "H200", "B200", "MI300X", "RTX-5090")
# the default token budget of `vllm serve` on each GPU, by hand from get_batch_defaults: (0.27.x, 0.28.0 on)
TOKENS = {
    "T4": (2048, 2048),  # 15 GiB
    "L40S": (2048, 2048),  # 45 GiB
    "A100-SXM4-80GB": (2048, 2048),  # 80 GiB, but "a100" is in its name
    "H100-SXM-80GB": (8192, 8192),  # 79.6 GiB
    "H200": (8192, 8192),  # 140.4 GiB: below 160
    "B200": (8192, 16384),  # 179.1 GiB
    "MI300X": (8192, 16384),  # 192 GiB
    "RTX-5090": (2048, 2048),  # 31.8 GiB
}
SEQ_DEFAULT = {name: 256 if TOKENS[name][0] == 2048 else 1024 for name in TOKENS}
CASES = [
    Case("seqs-1024", None, LLAMA, {"max_num_seqs": 1024}),
    Case("seqs-5000", None, LLAMA, {"max_num_seqs": 5000}),
    Case("seqs-10000", None, LLAMA, {"max_num_seqs": 10000}),
    Case("seqs-20000", None, LLAMA, {"max_num_seqs": 20000}),
    Case("tokens-512", None, LLAMA, {"max_num_batched_tokens": 512}),  # the default max_num_seqs is capped at it
    Case("active-300", None, LLAMA, {"max_num_active_seqs": 300}, releases=">=0.31.0"),
]


def _expected(case: Case, version: str, gpu: str) -> str | None:
    tokens = TOKENS[gpu][0 if version < "0.28.0" else 1]
    seqs = case.serve.get("max_num_seqs")
    if seqs is not None and "max_num_batched_tokens" not in case.serve and seqs > tokens:
        return SEQS
    active = case.serve.get("max_num_active_seqs")
    if active is not None and active > SEQ_DEFAULT[gpu]:
        return "max-num-active-seqs"
    return None


def _gpu_payload(name: str) -> dict[str, object]:
    gpu = CATALOGUE[name]
    return {"device_name": gpu.device_name, "memory_bytes": gpu.memory_bytes, "capability": list(gpu.capability)}


def _repo(root: Path, version: str, case: Case, gpu: str | None) -> Path:
    (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
    (root / "profiles").mkdir(parents=True)
    doc = tomlkit.document()
    doc["model"] = {"config": "models/dummy/config.json"}
    doc["serve"] = {"model": f"dummy/{case.arch}", **case.serve}
    if gpu is not None:
        doc["hardware"] = {"gpu": gpu}
    (root / "profiles" / "s.toml").write_text(tomlkit.dumps(doc), encoding="utf-8")
    (root / "models" / "dummy").mkdir(parents=True)
    (root / "models" / "dummy" / "config.json").write_text(json.dumps(_config(case)), encoding="utf-8")
    return root


def _applicable() -> list[tuple[str, str, Case]]:
    from packaging.specifiers import SpecifierSet

    return [
        (version, gpu, case)
        for version in selected_versions()
        for gpu in GPUS
        for case in CASES
        if not case.releases or SpecifierSet(case.releases).contains(version)
    ]


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("version", "gpu", "case"), _applicable(), ids=[f"vllm-{v}-{g}-{c.id}" for v, g, c in _applicable()]
)
def test_profilekit_gives_vllms_verdict_on_the_declared_gpu(
    oracle_pool: OraclePool, version: str, gpu: str, case: Case, tmp_path: Path
) -> None:
    root = _repo(tmp_path, version, case, gpu)
    catalogue = load_catalogue(version)
    stack = compose(LayerIndex(root, catalogue), "s")
    verdict = vllm_verdict(stack, "serve", version=version, catalogue=catalogue, root=root)
    predicted = None if verdict.accepted else verdict.rule
    answer = oracle_pool.get(version).validate(
        render_argv(stack.roles["serve"].serve, catalogue), config_json=_config(case), gpu=_gpu_payload(gpu)
    )
    assert not answer.get("undecidable"), answer
    message = "\n".join(str(answer.get(k, "")) for k in ("error", "stderr", "raw_error"))
    actual = None if answer.get("ok") else (rule_for_message(message) or f"unmapped: {message[:300]}")
    expected = _expected(case, version, gpu)
    assert (predicted, actual) == (expected, expected), message
    if expected is not None:  # the message says whose default it judged with
        assert verdict.message is not None and f"(vLLM's default on {gpu})" in verdict.message, verdict.message


@pytest.mark.oracle
@pytest.mark.parametrize("version", selected_versions())
def test_with_no_gpu_declared_the_verdict_is_vllms_fallback_and_hardware_unknown_says_which_gpus_differ(
    oracle_pool: OraclePool, version: str, tmp_path: Path
) -> None:
    """`max_num_seqs = 5000` and no `[hardware]`: vLLM where the device cannot be queried refuses (2048), and so
    does profilekit, with `hardware-unknown` naming the GPUs that would start it."""
    case = CASES[1]
    root = _repo(tmp_path, version, case, None)
    catalogue = load_catalogue(version)
    stack = compose(LayerIndex(root, catalogue), "s")
    verdict = vllm_verdict(stack, "serve", version=version, catalogue=catalogue, root=root)
    answer = oracle_pool.get(version).validate(
        render_argv(stack.roles["serve"].serve, catalogue), config_json=_config(case)
    )
    message = "\n".join(str(answer.get(k, "")) for k in ("error", "stderr", "raw_error"))
    assert (verdict.rule, rule_for_message(message)) == (SEQS, SEQS), message
    findings = check_stack(stack, version=version, catalogue=catalogue, root=root)
    unknown = [f for f in findings if f.rule == "hardware-unknown"]
    assert len(unknown) == 1 and unknown[0].severity.value == "warning"
    assert "starts on H100-PCIe-80GB, H100-SXM-80GB" in unknown[0].message
    assert "refuses to start (max-num-batched-tokens-seqs) on V100-SXM2-32GB, T4" in unknown[0].message
