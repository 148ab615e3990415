"""What a rendered role asks its cluster for, from the GPU it declares (`[hardware] gpu`, docs/HARDWARE.md).

- k8s: the device plugin's resource (`nvidia.com/gpu` on CUDA, `amd.com/gpu` on ROCm) and a node selector on the
  label the vendor's labeller sets: NVIDIA GPU feature discovery writes `nvidia.com/gpu.product` as the device name
  with every space a `-` ("NVIDIA-H100-80GB-HBM3"); AMD's node labeller writes `amd.com/gpu.product-name` from the
  board's product name, which is not the device name torch reports, so it is known here only for the boards whose
  label has been published. `[render.k8s.node_selectors.GPU]` replaces the default (an empty table: none).
- slurm: `--gres=gpu:TYPE:N`, TYPE as SLURM's own GPU detection (`AutoDetect=nvml` / `rsmi`) names it in gres.conf:
  the device name in lower case with every space a `_` ("nvidia_h100_80gb_hbm3"). Sites that write their own
  gres.conf types ("h100") set `[render.slurm.gres_types]`; an empty type asks for GPUs of any type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from profilekit.hardware import close_names

if TYPE_CHECKING:
    from profilekit.hardware import Gpu

NVIDIA_RESOURCE = "nvidia.com/gpu"
AMD_RESOURCE = "amd.com/gpu"
GFD_PRODUCT = "nvidia.com/gpu.product"  # NVIDIA GPU feature discovery
AMD_PRODUCT = "amd.com/gpu.product-name"  # AMD's k8s node labeller (ROCm/k8s-device-plugin)
# the `amd.com/gpu.product-name` values published for catalogue GPUs: the labeller's README example (MI300X) and a
# published cluster set-up for MI325X (the board reports "MI325", without the X)
AMD_PRODUCTS = {"MI300X": "AMD_Instinct_MI300X_OAM", "MI325X": "AMD_Instinct_MI325_OAM"}


def resource(gpu: Gpu | None) -> str:
    """The extended resource a pod on `gpu` asks for (no GPU declared: NVIDIA's, as before GPUs were declared)."""
    return AMD_RESOURCE if gpu is not None and gpu.platform == "rocm" else NVIDIA_RESOURCE


def node_selector(gpu: Gpu, chosen: Mapping[str, Mapping[str, str]]) -> tuple[dict[str, str], str]:
    """The node labels a pod on `gpu` selects, and where they come from (a phrase for the manifest's notes)."""
    if gpu.name in chosen:
        labels = dict(chosen[gpu.name])
        where = f"[render.k8s.node_selectors.{gpu.name}] in profilekit.toml"
        return labels, where if labels else f"none: {where} is empty"
    if gpu.platform == "cuda":
        return {GFD_PRODUCT: product_label(gpu)}, "the label NVIDIA GPU feature discovery sets"
    if gpu.name in AMD_PRODUCTS:
        return {AMD_PRODUCT: AMD_PRODUCTS[gpu.name]}, "the label AMD's node labeller sets"
    return {}, (
        f"none: the {AMD_PRODUCT} label AMD's node labeller sets for {gpu.name} is not known to profilekit; "
        f"set [render.k8s.node_selectors.{gpu.name}] in profilekit.toml"
    )


def product_label(gpu: Gpu) -> str:
    """`nvidia.com/gpu.product` as GPU feature discovery writes it: the device name, spaces as `-`."""
    return "-".join(gpu.device_name.split())


def gres_type(gpu: Gpu, chosen: Mapping[str, str]) -> str:
    """The GRES type of `gpu` in `--gres=gpu:TYPE:N` ("" for none)."""
    if gpu.name in chosen:
        return chosen[gpu.name]
    return "_".join(gpu.device_name.lower().split())


def gres(kind: str, count: int) -> str:
    """`gpu:TYPE:N`, or `gpu:N` without a type."""
    return f"gpu:{kind}:{count}" if kind else f"gpu:{count}"


def unknown_gpu_names(table: str, names: list[str], known: list[str]) -> list[str]:
    """Notes for the keys of a profilekit.toml table of GPUs that name no GPU profilekit knows."""
    notes: list[str] = []
    for name in names:
        if name in known:
            continue
        close = close_names(name, known)
        hint = f"; did you mean {' or '.join(close)}?" if close else " (see docs/HARDWARE.md for the catalogue)"
        notes.append(f"profilekit.toml: [{table}] {name} names no GPU of the catalogue or of [gpus]{hint}")
    return notes
