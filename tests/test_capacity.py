"""`profilekit capacity` and the rules weights-exceed-gpu and kv-cache-too-small (issue 32, items 2 and 3).

The figures vLLM computes (weights sharding, KV bytes, the fit check, the estimated length) are proven elsewhere
(tests/test_capacity_weights.py, tests/oracle/test_capacity_kv.py); here: that a user sees them, with their
inputs, that estimates say so, that a verdict needing the estimated reserve is a warning and one that holds
without it an error, and that a stack missing a GPU or model facts gets no guess.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, MakeRepo, Run
from tests.rules.layers import RELEASES

LLAMA = '[serve]\nmodel = "meta-llama/Llama-3.1-8B-Instruct"\n'
GPU = '[layer]\nabstract = true\n\n[hardware]\ngpu = "{gpu}"\n'


def _repo(make_repo: MakeRepo, app: str, **sites: str) -> Path:
    return make_repo({"app.toml": app, **{f"{name}.toml": GPU.format(gpu=gpu) for name, gpu in sites.items()}})


def test_the_example_stack_fits_and_every_figure_says_where_it_comes_from(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "capacity", "qwen-disaggregated+site/h100", "--role", "decode")
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert (
        lines[0] == "capacity of qwen-disaggregated+site/h100 on vLLM 0.33.0 (~: an estimate; docs/CAPACITY.md has "
        "the formulas)"
    )
    assert lines[2] == "role decode on H100-SXM-80GB (79.65 GiB), 1 GPU (tensor x pipeline parallel)"
    assert lines[3] == "  weights: 1.11 GiB per GPU (1.11 GiB in all)"
    assert "  KV cache: 112.00 KiB per token on one GPU, blocks of 16 tokens" in lines  # 28 x 8 x 128 x 2 x 2 bytes
    assert "    gpu_memory_utilization 0.92 of 79.6 GiB: 73.28 GiB requested" in lines  # site/h100 sets 0.92
    assert any(line.startswith("  Available KV cache memory: ~") for line in lines)
    assert any(line.startswith("  GPU KV cache size: ~") for line in lines)
    assert lines[-1] == "  verdict: fits: one max_model_len request fits, with the reserve's uncertainty to spare"


def test_json_carries_the_same_figures(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "capacity", "qwen-disaggregated+site/h100", "--format", "json")
    assert result.code == 0, result
    data = json.loads(result.out)
    assert [r["role"] for r in data["roles"]] == ["prefill", "decode"]  # the proxy runs no model
    decode = data["roles"][1]
    assert decode["gpu"] == "H100-SXM-80GB"
    assert decode["kv_cache"]["bytes_per_token"] == 28 * 8 * 128 * 2 * 2
    memory = decode["memory"]
    assert memory["estimate"] is True
    assert memory["available_kv_cache_bytes"] == (
        memory["requested_bytes"] - memory["weights_bytes"] - memory["reserve_bytes"]
    )
    assert memory["kv_cache_tokens"] > 0


def test_a_request_that_fits_only_without_the_reserve_is_a_warning(make_repo: MakeRepo, run: Run) -> None:
    # Llama-3.1-8B on an A10G: 20.24 GiB requested, 14.96 GiB of weights, so 5.28 GiB at most for the KV cache;
    # 32,000 tokens need 3.91 GiB: it fits with no reserve, not with the estimated ~2 GiB one
    repo = _repo(make_repo, LLAMA + "max_model_len = 32000\n", a10g="A10G")
    result = run("--repo", repo, "check", "app+a10g")
    assert result.code == 0, result  # a warning
    assert (
        "warning kv-cache-too-small one request of max_model_len 32000 needs 3.91 GiB of KV cache on A10G; "
        "vLLM would have about " in result.out
    )
    assert "so it likely refuses" in result.out
    capacity = run("--repo", repo, "capacity", "app+a10g")
    assert capacity.code == 0
    assert capacity.out.splitlines()[-1].startswith("  verdict: tight: ")


def test_a_request_that_cannot_fit_is_an_error_with_vllms_message_and_a_length_that_fits(
    make_repo: MakeRepo, run: Run
) -> None:
    repo = _repo(make_repo, LLAMA + "max_model_len = 131072\n", a10g="A10G")
    result = run("--repo", repo, "check", "app+a10g")
    assert result.code == 1
    assert (
        "error kv-cache-too-small one request of max_model_len 131072 needs 16.00 GiB of KV cache on A10G, "
        "more than the 5.28 GiB left after the weights even with no activations" in result.out
    )
    assert (
        "\"To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is needed"
        in result.out
    )
    capacity = run("--repo", repo, "capacity", "app+a10g")
    assert capacity.code == 1
    assert capacity.out.splitlines()[-1] == (
        "  verdict: refused: one max_model_len request does not fit even with no activations (kv-cache-too-small)"
    )


def test_weights_larger_than_the_gpu_are_an_error_with_the_tensor_parallel_size_that_fits(
    make_repo: MakeRepo, run: Run
) -> None:
    repo = _repo(make_repo, LLAMA, t4="T4")
    result = run("--repo", repo, "check", "app+t4")
    assert result.code == 1
    assert (
        "error weights-exceed-gpu the weights take 14.96 GiB on each GPU (config.json (counted)), more than "
        "the 13.50 GiB vLLM may use of T4" in result.out
    )
    assert "fix: spread the weights over more GPUs (tensor_parallel_size = 2)" in result.out
    assert "kv-cache-too-small" not in result.out  # one finding for one cause


def test_kv_cache_memory_bytes_is_taken_as_given(make_repo: MakeRepo, run: Run) -> None:
    app = LLAMA + "max_model_len = 131072\nkv_cache_memory_bytes = 8589934592\n"  # 8 GiB: half of what it needs
    repo = _repo(make_repo, app, h100="H100-SXM-80GB")
    result = run("--repo", repo, "check", "app+h100")
    assert result.code == 1
    assert (
        "more than the 8.00 GiB left after the weights even with no activations; vLLM refuses to start: "
        "\"To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is needed, "
        "which is larger than the available KV cache memory (8.00 GiB)." in result.out
    )
    capacity = run("--repo", repo, "capacity", "app+h100")
    assert "  Available KV cache memory: 8.00 GiB" in capacity.out.splitlines()  # no ~: not an estimate


def test_the_checkpoint_size_or_its_index_replaces_the_count(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo(
        {
            "app.toml": LLAMA + 'tensor_parallel_size = 2\n\n[model]\nweights_index = "ckpt/index.json"\n',
            "sized.toml": "[model]\nweights_gib = 30.0\n",
            "h100.toml": GPU.format(gpu="H100-SXM-80GB"),
        }
    )
    (repo / "ckpt").mkdir()
    (repo / "ckpt" / "index.json").write_text('{"metadata": {"total_size": 16060522496}}', encoding="utf-8")
    data = json.loads(run("--repo", repo, "capacity", "app+h100", "--format", "json").out)
    weights = data["roles"][0]["weights"]
    assert (weights["total_bytes"], weights["per_gpu_bytes"]) == (16060522496, 8030261248)
    assert weights["source"] == "ckpt/index.json (metadata.total_size)"
    data = json.loads(run("--repo", repo, "capacity", "app+h100+sized", "--format", "json").out)
    assert data["roles"][0]["weights"]["total_bytes"] == 30 * 2**30
    (repo / "ckpt" / "index.json").unlink()
    text = run("--repo", repo, "capacity", "app+h100").out
    assert "  weights: unknown: [model] weights_index: " in text
    assert "ckpt/index.json does not exist" in text


def test_without_a_gpu_or_model_facts_nothing_is_guessed(make_repo: MakeRepo, run: Run) -> None:
    repo = make_repo({"app.toml": LLAMA, "odd.toml": '[serve]\nmodel = "org/unknown"\n'})
    result = run("--repo", repo, "capacity", "app")
    assert result.code == 0
    assert "  memory: unknown: no GPU declared ([hardware] gpu): its memory is unknown" in result.out
    assert result.out.splitlines()[-1].startswith("  verdict: unknown: no GPU declared")
    assert run("--repo", repo, "check", "app").out == "app: no problems found (vLLM 0.33.0)\n"
    odd = run("--repo", repo, "capacity", "odd").out
    assert "  weights: unknown: no config.json, [model] weights_gib or [model] weights_index for the model" in odd
    assert "  KV cache: unknown: no config.json for the model" in odd


def test_a_role_that_names_nothing_is_refused_with_the_closest(run: Run) -> None:
    result = run("--repo", REPO_ROOT, "capacity", "qwen-disaggregated+site/h100", "--role", "decod")
    assert result.code == 2
    assert "has no role 'decod'" in result.err
    assert "did you mean 'decode'?" in result.err


def test_parallel_sizes_vllm_never_builds_are_not_estimated_and_never_crash_or_hang(
    make_repo: MakeRepo, run: Run
) -> None:
    # found crossing the verdict corpora with GPUs: `--pipeline-parallel-size -1` crashed check with an IndexError,
    # and 2147483647 stages would have been split one by one; vLLM refuses both before any KV cache exists
    cases = {
        "pipeline_parallel_size = -1": "pipeline_parallel_size -1 is not a size: not estimated",
        "pipeline_parallel_size = 2147483647": "pipeline_parallel_size 2147483647 is more than the model's 32 layers",
        "block_size = 0": "block_size 0 is not a size: not estimated",
    }
    for written, said in cases.items():
        repo = _repo(make_repo, LLAMA + written + "\n", h100="H100-SXM-80GB")
        result = run("--repo", repo, "capacity", "app+h100")
        assert result.code == 0, result
        assert said in result.out, result.out
        assert "Traceback" not in result.err
        checked = run("--repo", repo, "check", "app+h100")
        assert checked.code in (0, 1), checked
        assert "Traceback" not in checked.err


def test_a_hybrid_model_shows_its_mamba_state_and_the_block_vllm_aligns_to_it(make_repo: MakeRepo, run: Run) -> None:
    # Nemotron-H 8B with ReplaySSM: 24 Mamba layers whose state (conv, float32 SSM, the ReplaySSM rings) one
    # attention page must hold, so vLLM grows the attention block from 16 to 1120 tokens and pads the Mamba page
    # (the figures are vLLM's own: tests/oracle/test_capacity_kv.py)
    result = run("--repo", REPO_ROOT, "capacity", "nemotron-replayssm+site/h100")
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert "  KV cache: 16.00 KiB per token on one GPU, blocks of 1120 tokens" in lines  # 4 attention layers
    assert "    24 Mamba and 4 attention layers of 52 (nemotron_h)" in lines
    assert "    Mamba conv state bfloat16, SSM state float32 (serve.mamba_ssm_cache_dtype)" in lines
    assert "    ReplaySSM rings of 16 steps (replayssm_buffer_len 16, mamba_backend triton): 303104 bytes" in lines
    assert (
        "    attention block size 1120: one attention page of 4587520 bytes holds a Mamba state (vLLM's page "
        "alignment; padding 0.63 %)" in lines
    )
    assert "    Mamba cache mode align: 3 state pages per request and Mamba layer" in lines  # prefix caching on
    nemotron = '[serve]\nmodel = "nvidia/Nemotron-H-8B-Base-8K"\nenable_prefix_caching = false\n'
    off = run("--repo", _repo(make_repo, nemotron, h100="H100-SXM-80GB"), "capacity", "app+h100")
    assert "    Mamba cache mode none: 1 state page per request and Mamba layer" in off.out.splitlines(), off.out
    assert "    Mamba conv state bfloat16, SSM state float32 (Nemotron-H's default)" in off.out.splitlines()


NEMOTRON_L40S = (
    '[model]\nweights_gib = 16.2\n\n[serve]\nmodel = "nvidia/Nemotron-H-8B-Base-8K"\nmax_model_len = 8192\n'
    "enable_prefix_caching = false\n"
)


@pytest.mark.parametrize("version", RELEASES)
def test_more_sequences_than_mamba_blocks_is_refused_before_cuda_graphs(
    make_repo: MakeRepo, run: Run, version: str
) -> None:
    # vLLM (CompilationConfig.resolve_cudagraph_mode_and_sizes, every release) refuses a hybrid model whose full
    # decode graphs would need more Mamba blocks than the KV cache holds: one per sequence of max_num_seqs. Nemotron-H
    # 8B on an L40S holds about 1,300 (capacity shows it); 2,048 sequences cannot be served even with no reserve
    repo = make_repo(
        {"app.toml": NEMOTRON_L40S + "max_num_seqs = 2048\n", "l40s.toml": GPU.format(gpu="L40S")},
        config=f'[vllm]\nversion = "{version}"\n',
    )
    result = run("--repo", repo, "check", "app+l40s")
    assert result.code == 1, result
    assert "error mamba-blocks-too-few max_num_seqs 2048 is more than the Mamba cache blocks" in result.out
    assert '"max_num_seqs (2048) exceeds available Mamba cache blocks (' in result.out
    fixed = re.search(r"fix: set max_num_seqs = (\d+)", result.out)
    assert fixed is not None, result.out
    capacity = run("--repo", repo, "capacity", "app+l40s")
    assert capacity.code == 1, capacity
    assert capacity.out.splitlines()[-1].startswith("  verdict: refused: fewer Mamba cache blocks than max_num_seqs")
    # the fix it names starts; so do eager mode and piecewise graphs (no full decode graph, no check)
    for written in (
        f"max_num_seqs = {fixed.group(1)}",
        "max_num_seqs = 2048\nenforce_eager = true",
        'max_num_seqs = 2048\ncompilation_config = { cudagraph_mode = "PIECEWISE" }',
    ):
        (repo / "profiles" / "app.toml").write_text(NEMOTRON_L40S + written + "\n")
        again = run("--repo", repo, "check", "app+l40s")
        assert "mamba-blocks-too-few" not in again.out, (written, again.out)


def test_mamba_blocks_near_max_num_seqs_are_a_warning_and_other_gpus_are_not_guessed(
    make_repo: MakeRepo, run: Run
) -> None:
    repo = make_repo(
        {
            "app.toml": NEMOTRON_L40S + "max_num_seqs = 1300\n",
            "l40s.toml": GPU.format(gpu="L40S"),
            "v100.toml": GPU.format(gpu="V100-SXM2-32GB"),
        }
    )
    result = run("--repo", repo, "check", "app+l40s")
    assert result.code == 0, result
    assert "warning mamba-blocks-too-few max_num_seqs 1300 is about as many as the Mamba cache blocks" in result.out
    # before Ampere vLLM's attention backends may keep no full decode graph: no verdict either way
    older = run("--repo", repo, "check", "app+v100")
    assert "mamba-blocks-too-few" not in older.out, older.out
    # an attention-only model has no Mamba blocks to count
    llama = run("--repo", _repo(make_repo, LLAMA + "max_num_seqs = 100000\n", l40s="L40S"), "check", "app+l40s")
    assert "mamba-blocks-too-few" not in llama.out, llama.out


OFFLOAD = (
    '[serve]\nmodel = "meta-llama/Llama-3.1-8B-Instruct"\n{serve}\n[hardware]\ngpu = "H100-SXM-80GB"\n{hardware}\n'
)


@pytest.mark.parametrize("version", RELEASES)
def test_kv_offload_larger_than_the_nodes_host_memory_is_refused(make_repo: MakeRepo, run: Run, version: str) -> None:
    # vLLM pins the offloaded KV cache in CPU memory (`_post_init_kv_transfer_config`: kv_offloading_size becomes
    # the OffloadingConnector's cpu_bytes_to_use, the engine's whole buffer); two data parallel engines on a node of
    # 512 GiB cannot pin 2 x 300 GiB
    def check(serve: str, hardware: str = "host_memory_gib = 512") -> str:
        repo = make_repo(
            {"app.toml": OFFLOAD.format(serve=serve, hardware=hardware)}, config=f'[vllm]\nversion = "{version}"\n'
        )
        result = run("--repo", repo, "check", "app")
        assert "Traceback" not in result.err
        return result.out

    out = check("kv_offloading_size = 300\ndata_parallel_size = 2")
    assert "error kv-offload-exceeds-host-memory the KV cache offloaded to CPU memory pins 600.00 GiB on a node" in out
    assert "x 2 engines (data parallel ranks on the node)" in out
    assert "fix: set kv_offloading_size to at most 204 GiB" in out
    # the same buffer written as the connector's own cpu_bytes_to_use, inside a MultiConnector too
    native = (
        'kv_transfer_config = {{ kv_connector = "{name}", kv_role = "kv_both", kv_connector_extra_config = '
        "{{ cpu_bytes_to_use = {size} }} }}"
    )
    assert "kv-offload-exceeds-host-memory" in check(native.format(name="OffloadingConnector", size=600 << 30))
    multi = (
        'kv_transfer_config = { kv_connector = "MultiConnector", kv_role = "kv_both", kv_connector_extra_config = '
        '{ connectors = [{ kv_connector = "OffloadingConnector", kv_connector_extra_config = '
        "{ cpu_bytes_to_use = 644245094400 } }] } }"
    )
    assert "kv-offload-exceeds-host-memory" in check(multi)
    # what fits, what is not sized here (LMCache's server holds its own), and a node whose memory is not declared
    assert "kv-offload-exceeds-host-memory" not in check("kv_offloading_size = 300")
    assert "kv-offload-exceeds-host-memory" not in check('kv_offloading_size = 3000\nkv_offloading_backend = "lmcache"')
    assert "kv-offload-exceeds-host-memory" not in check("kv_offloading_size = 3000", hardware="")


def test_capacity_shows_the_offloaded_kv_cache_against_the_nodes_memory(make_repo: MakeRepo, run: Run) -> None:
    repo = make_repo(
        {
            "app.toml": OFFLOAD.format(serve="kv_offloading_size = 300\ndata_parallel_size = 2", hardware=""),
            "node.toml": "[layer]\nabstract = true\n\n[hardware]\nhost_memory_gib = 512\n",
        }
    )
    undeclared = run("--repo", repo, "capacity", "app")
    assert undeclared.code == 0, undeclared
    assert (
        "  KV offload to CPU memory: 600.00 GiB pinned (kv_offloading_size 300 GiB (the engine's, summed over its 1 "
        "GPU) x 2 engines on a node); host memory not declared ([hardware] host_memory_gib): no verdict"
    ) in undeclared.out.splitlines()
    declared = run("--repo", repo, "capacity", "app+node", "--format", "json")
    assert declared.code == 1, declared  # refused, as check says
    offload = json.loads(declared.out)["roles"][0]["kv_offload"]
    assert offload == {
        "pinned_bytes": 600 << 30,
        "engines_per_node": 2,
        "source": "kv_offloading_size 300 GiB (the engine's, summed over its 1 GPU)",
        "host_memory_gib": 512.0,
        "exceeds": True,
    }
