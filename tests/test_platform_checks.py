"""Issue 27, item 3: the platform checks follow the GPU a role declares (rules/platforms.py, docs/HARDWARE.md).

Each case quotes vLLM's own message for the release, from its source: `VllmConfig._get_quantization_config` (a
method's minimum compute capability), `Platform.verify_quantization` (ROCm's list), `check_if_supports_dtype`
(bfloat16 below 8.0, when the worker starts), the CUDA-only features, and the world size against the node's GPUs
(`ParallelConfig.__post_init__`, with `gpus_per_node`). With no GPU declared the verdict is today's, and
`hardware-unknown` names the catalogue GPUs that would get the other one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from profilekit.errors import Finding
from profilekit.rules import vllm_verdict
from profilekit.rules.host import one_host_only
from profilekit.rules.platforms import min_capability, rocm_supported
from profilekit.session import Session
from tests.conftest import REPO_ROOT, MakeRepo
from tests.rules.crossfield import files
from tests.rules.layers import RELEASES

WORLD_SIZE_16_OF_8 = (
    "World size (16) is larger than the number of available GPUs (8) in this node. If this is intentional and you "
    "are using: - ray, set '--distributed-executor-backend ray'. - multiprocessing, set '--nnodes' appropriately."
)


def with_hardware(layer: dict[str, str], **hardware: Any) -> dict[str, str]:
    """`layer` (tests/rules/crossfield.py `files`) with a `[hardware]` table."""
    table = "".join(f"{key} = {json.dumps(value)}\n" for key, value in hardware.items())
    return {**layer, "s.toml": layer["s.toml"] + "\n[hardware]\n" + table}


def findings(make_repo: MakeRepo, layer: dict[str, str], version: str = "0.33.0") -> list[Finding]:
    root: Path = make_repo(layer, config=f'[vllm]\nversion = "{version}"\n')
    session = Session.open(repo=root, vllm_version=None)
    return session.check(session.stack("s"))


def verdict_rule(make_repo: MakeRepo, layer: dict[str, str], version: str = "0.33.0") -> str | None:
    root: Path = make_repo(layer, config=f'[vllm]\nversion = "{version}"\n')
    session = Session.open(repo=root, vllm_version=None)
    return vllm_verdict(session.stack("s"), "serve", version=version, catalogue=session.catalogue, root=root).rule


def of(found: list[Finding], rule: str) -> list[str]:
    return [f.message for f in found if f.rule == rule]


# ---- quantization: minimum capability, ROCm's list -----------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_fp8_is_refused_on_a_v100_and_starts_on_a_t4(make_repo: MakeRepo, version: str) -> None:
    assert min_capability(version, "fp8") == 75  # Fp8Config.get_min_capability, every release
    v100 = findings(make_repo, with_hardware(files(quantization="fp8"), gpu="V100-SXM2-32GB"), version)
    assert of(v100, "quantization-gpu-capability") == [
        f'quantization = "fp8" on V100-SXM2-32GB (capability 7.0); vLLM {version} refuses to start: "The '
        "quantization method fp8 is not supported for the current GPU. Minimum capability: 75. Current capability: "
        '70."'
    ]
    assert [loc.key for f in v100 if f.rule == "quantization-gpu-capability" for loc in f.locations] == [
        "serve.quantization",
        "hardware.gpu",
    ]
    t4 = findings(make_repo, with_hardware(files(quantization="fp8"), gpu="T4"), version)
    assert [f.rule for f in t4 if f.is_error] == []


def test_a_checkpoints_own_method_is_judged_too(make_repo: MakeRepo) -> None:
    layer = files(config={"quantization_config": {"quant_method": "fbgemm_fp8"}})  # get_min_capability 80
    found = findings(make_repo, with_hardware(layer, gpu="L4"))
    assert of(found, "quantization-gpu-capability") == []  # 8.9
    found = findings(make_repo, with_hardware(layer, gpu="T4"))
    assert of(found, "quantization-gpu-capability") == [
        'a checkpoint quantized with "fbgemm_fp8" (quantization_config in its config.json) on T4 (capability 7.5); '
        'vLLM 0.33.0 refuses to start: "The quantization method fbgemm_fp8 is not supported for the current GPU. '
        'Minimum capability: 80. Current capability: 75."'
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_a_method_rocm_does_not_list_is_refused_on_an_mi300x(make_repo: MakeRepo, version: str) -> None:
    supported = rocm_supported(version)
    assert supported is not None and "experts_int8" not in supported and "fp8" in supported
    found = findings(make_repo, with_hardware(files(quantization="experts_int8"), gpu="MI300X"), version)
    assert of(found, "quantization-rocm-unsupported") == [
        f'quantization = "experts_int8" on MI300X (ROCm); vLLM {version} refuses to start: "experts_int8 '
        'quantization is currently not supported in rocm."'
    ]
    assert (
        of(
            findings(make_repo, with_hardware(files(quantization="fp8"), gpu="MI300X"), version),
            "quantization-rocm-unsupported",
        )
        == []
    )
    # CUDA lists no methods: every one is accepted there (experts_int8 needs 8.0)
    h100 = findings(make_repo, with_hardware(files(quantization="experts_int8"), gpu="H100-SXM-80GB"), version)
    assert [f.rule for f in h100 if f.is_error] == []


def test_the_capability_table_is_what_the_sources_say() -> None:
    """tools/gen_quant_capabilities.py regenerates the JSON from the oracle's copies of vLLM, where they are."""
    cache = Path.home() / ".cache/profilekit-oracle"
    sources = {v: cache / f"vllm-{v}" for v in RELEASES}
    if not all((path / "vllm/model_executor/layers/quantization/__init__.py").is_file() for path in sources.values()):
        pytest.skip("the oracle's copies of vLLM are not built")
    args = [arg for v, path in sources.items() for arg in ("--src", f"{v}={path}")]
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools/gen_quant_capabilities.py"), *args, "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


# ---- bfloat16 below compute capability 8.0 --------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_bfloat16_is_refused_on_a_t4_and_starts_on_an_a10g(make_repo: MakeRepo, version: str) -> None:
    t4 = findings(make_repo, with_hardware(files(dtype="bfloat16"), gpu="T4"), version)
    assert of(t4, "bfloat16-gpu-capability") == [
        f'dtype = "bfloat16" on T4 (capability 7.5); vLLM {version} builds its config, then the worker refuses to '
        'start: "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has '
        "compute capability 7.5. You can use float16 instead by explicitly setting the `dtype` flag in CLI, for "
        'example: --dtype=half."'
    ]
    assert (
        verdict_rule(make_repo, with_hardware(files(dtype="bfloat16"), gpu="T4"), version) == "bfloat16-gpu-capability"
    )
    a10g = findings(make_repo, with_hardware(files(dtype="bfloat16"), gpu="A10G"), version)
    assert [f.rule for f in a10g if f.is_error] == []


def test_auto_dtype_runs_a_bfloat16_checkpoint_in_float16_below_8_0(make_repo: MakeRepo) -> None:
    """`_resolve_auto_dtype` falls back to float16 on a T4: a float16 KV cache then matches (0.33.0's check)."""
    layer = files(kv_cache_dtype="float16")  # the dummy config.json is bfloat16
    assert [f.rule for f in findings(make_repo, layer) if f.is_error] == ["kv-cache-dtype-model-dtype"]
    assert [f.rule for f in findings(make_repo, with_hardware(layer, gpu="T4")) if f.is_error] == []
    bf16 = findings(make_repo, with_hardware(files(kv_cache_dtype="bfloat16"), gpu="T4"))
    assert [f.rule for f in bf16 if f.is_error] == ["kv-cache-dtype-model-dtype"]
    assert bf16[0].message == (
        'kv_cache_dtype = "bfloat16" with a model in float16 (its config.json\'s bfloat16, which vLLM runs as float16 '
        'on T4); vLLM 0.33.0 refuses to start: "kv_cache_dtype="bfloat16" is incompatible with dtype="float16". '
        'Please set `--kv-cache-dtype` to `auto` or `float16`."'
    )
    assert [f.rule for f in findings(make_repo, with_hardware(files(), gpu="T4"))] == []  # auto starts


# ---- features one platform lacks ------------------------------------------------------------------------------

DSA = {"index_topk": 2048}
HISPARSE = {"attention_config": {"hisparse_config": {"device_buffer_size": 4096}}}


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_hisparse_is_refused_on_an_mi300x(make_repo: MakeRepo, version: str) -> None:
    layer = files(config=DSA, **HISPARSE)
    found = findings(make_repo, with_hardware(layer, gpu="MI300X"), version)
    assert of(found, "gpu-platform-unsupported") == [
        f"HiSparse (attention_config.hisparse_config) on MI300X (ROCm); vLLM {version} refuses to start: "
        '"HiSparse currently requires NVIDIA CUDA."'
    ]
    assert verdict_rule(make_repo, with_hardware(layer, gpu="MI300X"), version) == "gpu-platform-unsupported"
    assert of(findings(make_repo, with_hardware(layer, gpu="H100-SXM-80GB"), version), "gpu-platform-unsupported") == []


def test_proton_and_flashkda_off_cuda_fused_off_rocm(make_repo: MakeRepo) -> None:
    proton = files(enforce_eager=True, profiler_config={"profiler": "proton", "proton_profiler_dir": "/tmp/p"})
    assert of(findings(make_repo, with_hardware(proton, gpu="MI355X")), "gpu-platform-unsupported") == [
        'profiler_config.profiler = "proton" on MI355X (ROCm); vLLM 0.33.0 refuses to start: "The Proton profiler '
        'currently supports NVIDIA CUDA only"'
    ]
    flashkda = findings(make_repo, with_hardware(files(kda_prefill_backend="flashkda"), gpu="MI300X"))
    assert of(flashkda, "kda-prefill-backend-platform") == [
        'kda_prefill_backend = "flashkda" on MI300X (ROCm); vLLM 0.33.0 refuses to start: "--kda-prefill-backend='
        'flashkda is only available on CUDA."'
    ]
    fused = files(kda_prefill_backend="fused")
    assert of(findings(make_repo, with_hardware(fused, gpu="MI300X")), "kda-prefill-backend-platform") == []
    assert len(of(findings(make_repo, with_hardware(fused, gpu="B200")), "kda-prefill-backend-platform")) == 1


def test_mamba_stochastic_rounding_flag_is_not_judged_by_platform(make_repo: MakeRepo) -> None:
    """`MambaConfig.__post_init__`'s CUDA and capability-10 checks are not reached by `vllm serve`: the flag is set on
    a copy of the default MambaConfig (the oracle's GPU mode shows vLLM refusing only the cache dtype)."""
    layer = files("NemotronHForCausalLM", enable_mamba_cache_stochastic_rounding=True)
    for gpu in ("H100-SXM-80GB", "MI300X", "B200"):
        found = findings(make_repo, with_hardware(layer, gpu=gpu))
        assert [f.rule for f in found if f.is_error] == ["mamba-stochastic-rounding-dtype"], gpu


def test_hc_sp_needs_cuda_in_0_32_and_cuda_or_rocm_in_0_33(make_repo: MakeRepo) -> None:
    layer = with_hardware(
        files("Qwen4ExpForCausalLM", with_config=False, enable_hc_sp=True, tensor_parallel_size=2), gpu="MI300X"
    )
    assert of(findings(make_repo, layer, "0.32.0"), "gpu-platform-unsupported") == [
        "enable_hc_sp = true with tensor_parallel_size = 2 on MI300X (ROCm); vLLM 0.32.0 refuses to start: "
        '"--enable-hc-sp currently requires CUDA"'
    ]
    assert of(findings(make_repo, layer, "0.33.0"), "gpu-platform-unsupported") == []


# ---- the node's GPUs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_world_size_16_on_nodes_of_8(make_repo: MakeRepo, version: str) -> None:
    layer = with_hardware(files(tensor_parallel_size=16), gpu="H100-SXM-80GB", gpus_per_node=8)
    found = [f for f in findings(make_repo, layer, version) if f.rule == "host-gpu-count"]
    assert [f.message for f in found] == [
        "role serve has hardware.gpus_per_node = 8 and needs 16 GPUs (tensor_parallel_size = 16); "
        f'vLLM {version} refuses to start: "{WORLD_SIZE_16_OF_8}"'
    ]
    assert not one_host_only(found[0])  # on every node: a pod target keeps it
    assert verdict_rule(make_repo, layer, version) == "host-gpu-count"  # ParallelConfig, before the heads check
    fits = with_hardware(files(tensor_parallel_size=8), gpu="H100-SXM-80GB", gpus_per_node=8)
    assert [f for f in findings(make_repo, fits, version) if f.rule == "host-gpu-count"] == []


def test_world_size_on_rocm_is_not_vllms_message(make_repo: MakeRepo) -> None:
    layer = with_hardware(files(tensor_parallel_size=16), gpu="MI300X", gpus_per_node=8)
    found = of(findings(make_repo, layer), "host-gpu-count")
    assert len(found) == 1 and "checks this only on CUDA" in found[0]


def test_data_parallel_ranks_past_the_node(make_repo: MakeRepo) -> None:
    layer = with_hardware(files(tensor_parallel_size=4, data_parallel_size=4), gpus_per_node=8)
    assert of(findings(make_repo, layer), "host-gpu-count") == [
        "role serve has hardware.gpus_per_node = 8 and needs 16 GPUs (tensor_parallel_size = 4 x "
        "data_parallel_size = 4); its 4 data-parallel ranks take 4 GPUs each, so the ranks past the GPUs fail to "
        "start"
    ]


# ---- no GPU declared ----------------------------------------------------------------------------------------------


def test_no_gpu_declared_keeps_the_verdict_and_names_the_gpus(make_repo: MakeRepo) -> None:
    found = findings(make_repo, files(dtype="bfloat16"))
    assert [f.rule for f in found if f.is_error] == []
    assert of(found, "hardware-unknown") == [
        "no layer declares the GPU, and vLLM 0.33.0's verdict depends on it: it refuses to start "
        "(bfloat16-gpu-capability on V100-SXM2-32GB, T4) and starts on A10G, L4, L40S, A100-SXM4-40GB, "
        "A100-SXM4-80GB, H100-PCIe-80GB, H100-SXM-80GB, H20, H200, GH200, B200, GB200, B300, RTX-4090, RTX-5090, "
        "MI250X, MI300X, MI325X, MI355X; profilekit judges a CUDA GPU host of unknown capability, where it starts"
    ]
    # a role another rule refuses on every GPU: the GPU changes only vLLM's first message, no warning
    refused = findings(make_repo, files(dtype="bfloat16", max_num_batched_tokens=1024, max_num_seqs=2048))
    assert [f.rule for f in refused if f.is_error] == ["max-num-batched-tokens-seqs"]
    assert of(refused, "hardware-unknown") == []
    # nothing GPU-dependent: no warning
    assert of(findings(make_repo, files(dtype="half")), "hardware-unknown") == []


def test_microbatching_accepts_allgather_reducescatter_on_rocm_from_0_33(make_repo: MakeRepo) -> None:
    layer = files(enable_dbo=True, enable_expert_parallel=True, data_parallel_size=2)
    cuda = of(findings(make_repo, with_hardware(layer, gpu="H100-SXM-80GB")), "microbatching-all2all-backend")
    assert len(cuda) == 1 and "deepep_low_latency, deepep_high_throughput, nixl_ep all2all backends" in cuda[0]
    assert of(findings(make_repo, with_hardware(layer, gpu="MI300X")), "microbatching-all2all-backend") == []
    rocm_032 = of(findings(make_repo, with_hardware(layer, gpu="MI300X"), "0.32.0"), "microbatching-all2all-backend")
    assert len(rocm_032) == 1


def test_a_role_of_its_own_hardware_is_judged_on_its_gpu(make_repo: MakeRepo) -> None:
    """`[roles.R.hardware]` overrides `[hardware]` for role R: the decode role on a T4 refuses bfloat16."""
    pd = """
        [serve]
        model = "Qwen/Qwen3-0.6B"
        dtype = "bfloat16"

        [hardware]
        gpu = "H100-SXM-80GB"

        [roles.prefill]
        kind = "vllm"

        [roles.prefill.serve]
        port = 8100

        [roles.decode]
        kind = "vllm"

        [roles.decode.serve]
        port = 8200

        [roles.decode.hardware]
        gpu = "T4"
    """
    found = findings(make_repo, {"s.toml": pd})
    refused = [f for f in found if f.rule == "bfloat16-gpu-capability"]
    assert [f.role for f in refused] == ["decode"]
    assert [loc.key for loc in refused[0].locations] == ["serve.dtype", "roles.decode.hardware.gpu"]


def test_a_rocm_only_rotary_fusion_adds_rotary_embedding_on_rocm(make_repo: MakeRepo) -> None:
    cc = {"custom_ops": ["-rotary_embedding"], "pass_config": {"fuse_rope_kvcache": True}}
    rocm = of(findings(make_repo, with_hardware(files(compilation_config=cc), gpu="MI300X")), "compilation-config")
    assert rocm == [
        'compilation_config.custom_ops = ["-rotary_embedding"]; vLLM 0.33.0 refuses to start: "1 validation error '
        "for CompilationConfig / Value error, custom_ops cannot both enable and disable the same operation(s): "
        "rotary_embedding. Remove either the '+' or '-' directive\""
    ]
    assert (
        of(findings(make_repo, with_hardware(files(compilation_config=cc), gpu="H100-SXM-80GB")), "compilation-config")
        == []
    )
    unknown = findings(make_repo, files(compilation_config=cc))
    assert [f.rule for f in unknown] == ["hardware-unknown"]
    assert "(compilation-config on MI250X, MI300X, MI325X, MI355X)" in unknown[0].message


def test_pcp_with_data_parallelism_names_the_platform_in_0_30(make_repo: MakeRepo) -> None:
    layer = files(prefill_context_parallel_size=2, data_parallel_size=2)
    for gpu, platform in (("MI300X", "ROCm"), ("H100-SXM-80GB", "CUDA")):
        found = of(findings(make_repo, with_hardware(layer, gpu=gpu), "0.30.0"), "context-parallel-size")
        assert [m.rsplit("start: ", 1)[1] for m in found] == [
            f'"PCP does not support data parallelism on {platform} yet."'
        ]


@pytest.mark.parametrize("version", RELEASES)
def test_a_capture_size_of_zero_is_refused_on_a_gpu(make_repo: MakeRepo, version: str) -> None:
    layer = files(max_cudagraph_capture_size=0)
    found = of(findings(make_repo, with_hardware(layer, gpu="L4"), version), "max-cudagraph-capture-size-zero")
    assert found == [
        f'max_cudagraph_capture_size = 0 with CUDA graphs on L4; vLLM {version} refuses to start: "Maximum '
        'cudagraph size should be greater than or equal to 1 when using cuda graph."'
    ]
    eager = with_hardware(files(max_cudagraph_capture_size=0, enforce_eager=True), gpu="L4")
    assert of(findings(make_repo, eager, version), "max-cudagraph-capture-size-zero") == []
    unknown = findings(make_repo, layer, version)  # no GPU: today's verdict, and a warning
    assert [f.rule for f in unknown] == ["hardware-unknown"]


@pytest.mark.parametrize("version", RELEASES)
def test_a_compile_size_named_wrong_is_refused_on_a_gpu_even_eager(make_repo: MakeRepo, version: str) -> None:
    # every release: a GPU platform settles the CUDA graph sizes (eager too) and then reads compile_sizes; the CPU
    # platform, vLLM's oracle, never does (tools/gpu_report.py found it in the 0.30.0 broad corpus on every GPU)
    layer = files(enforce_eager=True, compilation_config={"compile_sizes": [8, "cudagraph_capture_size"]})
    found = findings(make_repo, with_hardware(layer, gpu="T4"), version)
    assert of(found, "compile-sizes-name") == [
        f"compile_sizes names 'cudagraph_capture_size' on T4; vLLM {version} refuses to start: \"Unrecognized size "
        "type in compile_sizes, expect 'cudagraph_capture_sizes', got cudagraph_capture_size\""
    ]
    assert next(f.fix for f in found if f.rule == "compile-sizes-name").startswith(
        "did you mean 'cudagraph_capture_sizes'?"
    )
    right = files(compilation_config={"compile_sizes": [8, "cudagraph_capture_sizes"]})
    assert findings(make_repo, with_hardware(right, gpu="MI300X"), version) == []
    unknown = findings(make_repo, layer, version)  # no GPU: today's verdict, and a warning naming every GPU
    assert [f.rule for f in unknown] == ["hardware-unknown"]
    assert "compile-sizes-name on V100-SXM2-32GB, T4," in unknown[0].message


# ---- a KV connector's class on a GPU: looked up for the CUDA graphs while the config is built ------------------


def test_an_unknown_connector_is_refused_first_on_a_gpu_with_full_cuda_graphs(make_repo: MakeRepo) -> None:
    # vLLM 0.33.0 registers no P2pNcclConnector; on a GPU (static graphs) a transfer instance with full CUDA graphs
    # has its class looked up in VllmConfig.__post_init__, so the launch stops at config time, before the
    # ReplaySSM validators; on the CPU platform (no GPU declared) only building the connector would find it
    ktc = {"kv_connector": "P2pNcclConnector", "kv_role": "kv_consumer"}
    layer = files(kv_transfer_config=ktc, disable_hybrid_kv_cache_manager=True)
    assert verdict_rule(make_repo, layer) is None
    assert verdict_rule(make_repo, with_hardware(layer, gpu="H100-SXM-80GB")) == "kv-connector-unknown"
    found = findings(make_repo, with_hardware(layer, gpu="H100-SXM-80GB"))
    assert of(found, "kv-connector-unknown") == [
        'serve.kv_transfer_config names kv_connector = "P2pNcclConnector", which vLLM 0.33.0 does not register; '
        'vLLM 0.33.0 refuses to start: "Unsupported connector type: P2pNcclConnector"'
    ]
    eager = files(kv_transfer_config=ktc, disable_hybrid_kv_cache_manager=True, enforce_eager=True)
    assert verdict_rule(make_repo, with_hardware(eager, gpu="H100-SXM-80GB")) is None
    replayssm = files(
        "NemotronHForCausalLM",
        kv_transfer_config={"kv_connector": "NixlConector", "kv_role": "kv_consumer"},
        use_replayssm=True,
        disable_hybrid_kv_cache_manager=True,
    )
    assert verdict_rule(make_repo, with_hardware(replayssm, gpu="MI300X")) == "kv-connector-unknown"


def test_speculative_decoding_keeps_the_graph_lookup_of_an_unknown_connector(make_repo: MakeRepo) -> None:
    # found by tests/oracle/results/gpu-0.33.0.json: with n-gram speculative decoding CUDA graphs stay full, so vLLM
    # still looks the connector class up while building the config (only dynamic speculative decoding,
    # num_speculative_tokens_per_batch_size, turns them piecewise first)
    ngram = {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    layer = files(
        "NemotronHForCausalLM",
        kv_transfer_config={"kv_connector": "NixlConector", "kv_role": "kv_producer"},
        use_replayssm=True,
        enable_prefix_caching=False,
        disable_hybrid_kv_cache_manager=True,
        speculative_config=ngram,
    )
    assert verdict_rule(make_repo, with_hardware(layer, gpu="H100-SXM-80GB")) == "kv-connector-unknown"
    assert verdict_rule(make_repo, layer) == "replayssm-speculative"  # no GPU: the CPU platform finds the ReplaySSM one


def test_a_device_id_that_is_no_index_and_no_uuid_is_refused_on_a_declared_gpu(make_repo: MakeRepo) -> None:
    bogus = files(device_ids="bogus")
    assert of(findings(make_repo, bogus), "device-ids-unknown") == []  # no GPU declared: the host decides
    cuda = findings(make_repo, with_hardware(bogus, gpu="H100-SXM-80GB"))
    assert of(cuda, "device-ids-unknown") == [
        "device_ids = \"bogus\" names 'bogus', which is no GPU index and no GPU UUID; vLLM 0.33.0 refuses to start: "
        "\"no GPU has UUID 'bogus' (the driver's lookup by UUID: Not Found)\""
    ]
    uuid = files(device_ids="GPU-5a1c7f0e-1b2c-3d4e-5f60-718293a4b5c6")
    assert of(findings(make_repo, with_hardware(uuid, gpu="H100-SXM-80GB")), "device-ids-unknown") == []
    rocm = findings(make_repo, with_hardware(uuid, gpu="MI300X"))
    assert [f.message.split("refuses to start: ")[1] for f in rocm if f.rule == "device-ids-unknown"] == [
        "\"Non-integer device ID 'GPU-5a1c7f0e-1b2c-3d4e-5f60-718293a4b5c6' is not supported by rocm.\""
    ]


def test_a_backend_that_is_neither_ray_nor_mp_is_refused_before_the_device_ids_are_looked_up(
    make_repo: MakeRepo,
) -> None:
    # found by tests/oracle/results/gpu-0.31.0.json: with no data_parallel_address the launch block asserts the
    # backend, before ParallelConfig's arguments (the device ids) are resolved; with an address the field refuses it
    layer = with_hardware(files(data_parallel_backend="bogus", device_ids="bogus"), gpu="T4")
    found = findings(make_repo, layer, "0.31.0")
    assert verdict_rule(make_repo, layer, "0.31.0") == "invalid-value"
    assert of(found, "invalid-value") == [
        "serve.data_parallel_backend: vLLM 0.31.0 refuses it: \"('data_parallel_backend can only be ray or mp, got "
        "%s', 'bogus')\""
    ]
    addressed = files(data_parallel_backend="bogus", data_parallel_address="10.0.0.1")
    assert [m.split(": ", 1)[1] for m in of(findings(make_repo, addressed), "invalid-value")] == [
        'vLLM 0.33.0 refuses "bogus": "1 validation error for ParallelConfig / data_parallel_backend / Input should '
        "be 'ray' or 'mp'\""
    ]


def test_ray_data_parallelism_still_has_each_rank_s_world_size_checked(make_repo: MakeRepo) -> None:
    # found by tests/oracle/results/gpu-0.27.0.json: ray places the data-parallel ranks, but ParallelConfig still
    # refuses a tensor x pipeline world larger than the node's GPUs
    ray = {"data_parallel_backend": "ray"}
    wide = with_hardware(files(pipeline_parallel_size=16, **ray), gpu="H100-SXM-80GB", gpus_per_node=8)
    assert verdict_rule(make_repo, wide) == "host-gpu-count"
    fits = with_hardware(
        files(tensor_parallel_size=4, data_parallel_size=4, **ray), gpu="H100-SXM-80GB", gpus_per_node=8
    )
    assert of(findings(make_repo, fits), "host-gpu-count") == []  # 4 GPUs a rank; ray spreads the 4 ranks
