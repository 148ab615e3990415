"""The GPUs a stack may declare (`[hardware] gpu = "NAME"`, docs/HARDWARE.md): what vLLM's platform layer sees on
each — the platform (CUDA or ROCm), the compute capability torch reports (and the gfx architecture on ROCm), the
total memory, and the device name (vLLM's checks match on names: `"a100" in device_name`) — with the public
source of every figure. A repository adds GPUs of its own in profilekit.toml (`[gpus.NAME]`).

Memory is the total the device reports (nvidia-smi's "MiB", torch's `total_memory`), not the marketing figure:
vLLM compares it with whole GiB (`get_batch_defaults`: 70 and 160 GiB), and what the device reports is a little
less than its name says (an "80GB" H100 reports 81,559 MiB, 79.6 GiB).
"""

from __future__ import annotations

import difflib

from profilekit.records import record

MIB = 1024 * 1024
GIB = 1024 * MIB


@record(frozen=True, slots=True)
class Gpu:
    """One GPU model as vLLM's platform sees one of its devices."""

    name: str  # the catalogue's name: what a layer writes
    platform: str  # "cuda" or "rocm"
    capability: tuple[int, int]  # torch.cuda.get_device_capability(); on ROCm what torch maps the gfx target to
    memory_mib: int  # total device memory as the device reports it
    device_name: str  # torch.cuda.get_device_name() / nvidia-smi's name
    sources: tuple[str, ...]  # where each figure comes from
    arch: str = ""  # the gfx architecture (ROCm)
    note: str = ""

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * MIB

    @property
    def memory_gib(self) -> float:
        return self.memory_mib / 1024

    def describe(self) -> str:
        """One line: `H100-SXM-80GB: CUDA, capability 9.0, 81559 MiB (79.6 GiB), device 'NVIDIA H100 80GB HBM3'`."""
        kind = "CUDA" if self.platform == "cuda" else "ROCm"
        arch = f" ({self.arch})" if self.arch else ""
        major, minor = self.capability
        return (
            f"{self.name}: {kind}, capability {major}.{minor}{arch}, {self.memory_mib} MiB ({self.memory_gib:.1f} GiB), "
            f"device {self.device_name!r}"
        )


CATALOGUE: dict[str, Gpu] = {
    gpu.name: gpu
    for gpu in (
        Gpu(
            "V100-SXM2-32GB",
            "cuda",
            (7, 0),
            32768,
            "Tesla V100-SXM2-32GB",
            (
                "https://developer.nvidia.com/cuda-legacy-gpus",
                "https://github.com/NVIDIA/nvidia-docker/issues/1076",
                "https://github.com/Wan-Video/Wan2.1/issues/5",
            ),
            arch="",
            note="name: published device output; memory: published device output; the 32768 MiB row shows the name cut short",
        ),
        Gpu(
            "T4",
            "cuda",
            (7, 5),
            15360,
            "Tesla T4",
            (
                "https://developer.nvidia.com/cuda-gpus",
                "https://www.cnblogs.com/nightnine/p/16591404.html",
                "https://github.com/NVIDIA/nvidia-docker/issues/1628",
                "https://github.com/modal-labs/modal-client/pull/2797",
            ),
            arch="",
            note="name: published device output; memory: published device output",
        ),
        Gpu(
            "A10G",
            "cuda",
            (8, 6),
            23028,
            "NVIDIA A10G",
            (
                "https://github.com/facebookincubator/AITemplate/pull/279",
                "https://developer.nvidia.com/cuda-gpus",
                "https://github.com/NVIDIA/DCGM/issues/232",
                "https://github.com/NVIDIA/k8s-device-plugin/issues/344",
            ),
            arch="",
            note="name: published device output; memory: published device output; a plain A10 reports the same total",
        ),
        Gpu(
            "L4",
            "cuda",
            (8, 9),
            23034,
            "NVIDIA L4",
            (
                "https://developer.nvidia.com/cuda-gpus",
                "https://github.com/speaches-ai/speaches/pull/438",
                "https://github.com/modal-labs/modal-client/pull/2797",
            ),
            arch="",
            note="name: published device output; memory: published device output",
        ),
        Gpu(
            "L40S",
            "cuda",
            (8, 9),
            46068,
            "NVIDIA L40S",
            (
                "https://developer.nvidia.com/cuda-gpus",
                "https://github.com/akash-network/provider-configs/pull/99",
                "https://github.com/isaac-sim/IsaacSim/issues/228",
                "https://github.com/modal-labs/modal-client/pull/2797",
            ),
            arch="",
            note="name: published device output; memory: published device output; A40 and RTX A6000 report the same total",
        ),
        Gpu(
            "A100-SXM4-40GB",
            "cuda",
            (8, 0),
            40960,
            "NVIDIA A100-SXM4-40GB",
            (
                "https://github.com/bottlerocket-os/bottlerocket/pull/3873",
                "https://www.cnblogs.com/nightnine/p/16591404.html",
                "https://github.com/bottlerocket-os/bottlerocket-core-kit/pull/834",
                "https://github.com/modal-labs/modal-client/pull/2797",
            ),
            arch="",
            note="name: published device output; memory: published device output",
        ),
        Gpu(
            "A100-SXM4-80GB",
            "cuda",
            (8, 0),
            81920,
            "NVIDIA A100-SXM4-80GB",
            (
                "https://www.cnblogs.com/nightnine/p/16591404.html",
                "https://github.com/NVIDIA/mig-parted/issues/31",
                "https://github.com/modal-labs/modal-client/pull/2797",
            ),
            arch="",
            note="name: published device output; memory: published device output",
        ),
        Gpu(
            "H100-PCIe-80GB",
            "cuda",
            (9, 0),
            81559,
            "NVIDIA H100 PCIe",
            (
                "https://developer.nvidia.com/cuda-gpus",
                "https://github.com/pytorch/pytorch/issues/90761",
                "https://github.com/zzc0721/torch-performance-test-data/issues/95",
            ),
            arch="",
            note="name: published device output; memory: device output in public files without an address",
        ),
        Gpu(
            "H100-SXM-80GB",
            "cuda",
            (9, 0),
            81559,
            "NVIDIA H100 80GB HBM3",
            (
                "https://developer.nvidia.com/cuda-gpus",
                "https://github.com/NVIDIA/nccl/issues/1264",
                "https://github.com/wilicc/gpu-burn/issues/114",
                "https://github.com/modal-labs/modal-client/pull/2797",
            ),
            arch="",
            note="name: published device output; memory: published device output",
        ),
        Gpu(
            "H20",
            "cuda",
            (9, 0),
            97871,
            "NVIDIA H20",
            ("https://github.com/thu-ml/SageAttention/issues/260", "https://github.com/NVIDIA/nvtrust/issues/128"),
            arch="",
            note="name: published device output; memory: published device output",
        ),
        Gpu(
            "H200",
            "cuda",
            (9, 0),
            143771,
            "NVIDIA H200",
            ("https://developer.nvidia.com/cuda-gpus", "https://github.com/NVIDIA/mig-parted/issues/120"),
            arch="",
            note="name: published device output; memory: device output in public files without an address",
        ),
        Gpu(
            "GH200",
            "cuda",
            (9, 0),
            97871,
            "NVIDIA GH200 480GB",
            ("https://developer.nvidia.com/cuda-gpus", "https://github.com/vllm-project/vllm/issues/18390"),
            arch="",
            note="name: device output in public files without an address; memory: device output in public files without an address; the 96 GB HBM3 module; the 144 GB HBM3e one ('NVIDIA GH200 144G HBM3e', vllm-project/vllm#18390) is a [gpus] entry of its own",
        ),
        Gpu(
            "B200",
            "cuda",
            (10, 0),
            183359,
            "NVIDIA B200",
            (
                "https://developer.nvidia.com/cuda-gpus",
                "https://github.com/pytorch/ao/pull/4002",
                "https://github.com/NVIDIA/TensorRT-LLM/issues/10278",
            ),
            arch="",
            note="name: published device output; memory: published device output",
        ),
        Gpu(
            "GB200",
            "cuda",
            (10, 0),
            189471,
            "NVIDIA GB200",
            (
                "https://developer.nvidia.com/cuda-gpus",
                "https://github.com/sgl-project/sglang/issues/11208",
                "https://github.com/NVIDIA/k8s-test-infra/issues/371",
            ),
            arch="",
            note="name: published device output; memory: device output in public files without an address",
        ),
        Gpu(
            "B300",
            "cuda",
            (10, 3),
            275040,
            "NVIDIA B300 SXM6 AC",
            (
                "https://developer.nvidia.com/cuda-gpus",
                "https://github.com/NVIDIA/cosmos-framework/pull/114",
                "https://github.com/pytorch/ao/pull/3640",
                "https://github.com/LottoLottoLotto/localmaxxing-cli/issues/24",
            ),
            arch="",
            note="name: published device output; memory: device output in public files without an address; one report names it 'NVIDIA B300' in nvidia-smi",
        ),
        Gpu(
            "RTX-4090",
            "cuda",
            (8, 9),
            24564,
            "NVIDIA GeForce RTX 4090",
            (
                "https://developer.nvidia.com/cuda-gpus",
                "https://github.com/vllm-project/vllm/issues/7553",
                "https://github.com/RLinf/RLinf/issues/255",
            ),
            arch="",
            note="name: published device output; memory: published device output",
        ),
        Gpu(
            "RTX-5090",
            "cuda",
            (12, 0),
            32607,
            "NVIDIA GeForce RTX 5090",
            ("https://developer.nvidia.com/cuda-gpus", "https://github.com/noonghunna/club-3090/issues/1322"),
            arch="",
            note="name: published device output; memory: published device output",
        ),
        Gpu(
            "MI250X",
            "rocm",
            (9, 0),
            65536,
            "AMD Instinct MI250X/MI250",
            (
                "https://rocmdocs.amd.com/en/develop/reference/gpu-arch-specs.html",
                "https://github.com/vllm-project/vllm/issues/40620",
                "https://github.com/vllm-project/vllm/issues/10663",
                "https://github.com/ROCm/rocm_smi_lib/issues/165",
            ),
            arch="gfx90a",
            note="name: published device output; memory: the vendor's specification only; one MI250X is two devices (GCDs) of 64 GiB each: gpus_per_node counts devices; MI250 reports the same name",
        ),
        Gpu(
            "MI300X",
            "rocm",
            (9, 4),
            196592,
            "AMD Instinct MI300X",
            (
                "https://rocmdocs.amd.com/en/develop/reference/gpu-arch-specs.html",
                "https://github.com/vllm-project/vllm/issues/40620",
                "https://github.com/pytorch/ao/pull/4034",
                "https://github.com/ROCm/legacy-rocm-build/issues/4750",
            ),
            arch="gfx942",
            note="name: published device output; memory: published device output; in a partitioned mode each partition is a smaller device",
        ),
        Gpu(
            "MI325X",
            "rocm",
            (9, 4),
            262128,
            "AMD Instinct MI325X",
            (
                "https://rocmdocs.amd.com/en/develop/reference/gpu-arch-specs.html",
                "https://github.com/pytorch/ao/pull/4034",
                "https://github.com/vllm-project/vllm/issues/40620",
            ),
            arch="gfx942",
            note="name: device output in public files without an address; memory: device output in public files without an address; 256 GiB less 16 MiB, as MI300X",
        ),
        Gpu(
            "MI355X",
            "rocm",
            (9, 5),
            294912,
            "AMD Instinct MI355X",
            (
                "https://rocmdocs.amd.com/en/develop/reference/gpu-arch-specs.html",
                "https://github.com/vllm-project/vllm/issues/40620",
                "https://github.com/pytorch/torchtitan/pull/4778",
                "https://github.com/unslothai/unsloth/pull/4051",
            ),
            arch="gfx950",
            note="name: published device output; memory: the vendor's specification only; 288 GiB from the specification; the device likely reports a little less",
        ),
    )
}


@record(frozen=True, slots=True)
class BatchDefaults:
    """`get_batch_defaults` for `vllm serve` (OPENAI_API_SERVER): max_num_batched_tokens and max_num_seqs."""

    tokens: int
    seqs: int

    def of(self, key: str) -> int:
        """The default of option `key`: "max_num_batched_tokens" or "max_num_seqs"."""
        return self.tokens if key == "max_num_batched_tokens" else self.seqs


SMALL = BatchDefaults(2048, 256)  # below 70 GiB, an A100, a GB10, or a device that cannot be queried
LARGE = BatchDefaults(8192, 1024)  # 70 GiB or more
LARGEST = BatchDefaults(16384, 1024)  # 160 GiB or more, from 0.28.0


def batch_defaults(version: str, gpu: Gpu | None) -> BatchDefaults:
    """What `EngineArgs.get_batch_defaults` of `version` picks on `gpu` (None: a device it cannot query)."""
    if gpu is None:
        return SMALL
    if _at_least(version, "0.28.0") and gpu.memory_bytes >= 160 * GIB:
        return LARGEST
    gb10 = _at_least(version, "0.33.0") and gpu.capability == (12, 1)
    if gpu.memory_bytes >= 70 * GIB and "a100" not in gpu.device_name.lower() and not gb10:
        return LARGE
    return SMALL


def tiers_text(version: str, key: str) -> str:
    """How `version` picks the default of `key` by GPU: "2048 below 70 GiB ..., 8192 from 70 GiB, 16384 from 160 GiB"."""
    small, large, largest = (tier.of(key) for tier in (SMALL, LARGE, LARGEST))
    parts = [f"{small} below 70 GiB or on an A100{' or a GB10' if _at_least(version, '0.33.0') else ''}"]
    parts.append(f"{large} from 70 GiB")
    if _at_least(version, "0.28.0") and largest != large:  # max_num_seqs is 1024 in both
        parts.append(f"{largest} from 160 GiB")
    return ", ".join(parts)


def _at_least(version: str, floor: str) -> bool:
    """`version` is `floor` or newer (releases are "X.Y.Z")."""
    return tuple(int(part) for part in version.split(".")[:3]) >= tuple(int(part) for part in floor.split("."))


def repository_gpu(
    name: str,
    *,
    platform: str,
    capability: str,
    memory_mib: int,
    device_name: str,
    arch: str | None,
    source: str | None,
) -> Gpu:
    """A `[gpus.NAME]` entry of profilekit.toml as a Gpu (its capability written "MAJOR.MINOR")."""
    major, minor = capability.split(".")
    where = source or "profilekit.toml [gpus]"
    return Gpu(name, platform, (int(major), int(minor)), memory_mib, device_name, (where,), arch=arch or "")


def close_names(name: str, known: list[str]) -> list[str]:
    """The names `name` may mean: case and punctuation aside (`h100-sxm-80gb`, `H100_SXM_80GB`), then names that
    start with what was written (`H100` -> both H100s), then spelling (difflib)."""
    fold = {_folded(k): k for k in known}
    if _folded(name) in fold:
        return [fold[_folded(name)]]
    starts = [k for k in known if _folded(name) and _folded(k).startswith(_folded(name))]
    return starts[:3] or difflib.get_close_matches(name, known, n=3, cutoff=0.6)


def _folded(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


# ---- what vLLM's platform answers on a GPU (issue 27 item 3: the platform checks, rules/platforms.py) ----------


def capability_int(gpu: Gpu) -> int:
    """`DeviceCapability.to_int()`: 75 for 7.5, 94 for ROCm's 9.4."""
    major, minor = gpu.capability
    return major * 10 + minor


def supported_dtypes(gpu: Gpu | None) -> tuple[str, ...]:
    """`current_platform.supported_dtypes` on `gpu`, the dtype `dtype = "auto"` falls back to first
    (CudaPlatform: no bfloat16 below capability 8.0; ROCm keeps the interface's list). None: a GPU of 8.0 or more,
    as profilekit judges where none is declared."""
    if gpu is not None and gpu.platform == "cuda" and gpu.capability < (8, 0):
        return ("float16", "float32") if gpu.capability >= (6, 0) else ("float32",)
    return ("bfloat16", "float16", "float32")
