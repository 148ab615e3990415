"""What the model's architecture supports: the Transformers backend, LoRA, model-specific MoE backends, and
head-count-sharded sequence parallelism (`--enable-hc-sp`).

Sources: `vllm/model_executor/models/registry.py` `_ModelRegistry._try_resolve_transformers` (0.27.0-0.29.0 refuse a
transformers class without `_supports_attention_backend`; 0.30.0 also accepts one whose attention implementation
can be set), `vllm/config/lora.py` `LoRAConfig.verify_with_model_config` (0.33.0), and `vllm/config/kernel.py`
`validate_flashinfer_moe_ep_model`, called by `KernelConfig.set_platform_defaults` (0.29.0 and later), and
`vllm/config/model.py` `ModelConfig.verify_with_parallel_config` (`--enable-hc-sp` with tensor parallelism, 0.32.0
and later: judged as on a CUDA host, where the platform check before them passes).
The facts per architecture are in rules/models.py, and the generated registry facts in `profilekit.vllm.registry`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import serve_int
from profilekit.vllm.versions import at_least, version_key

if TYPE_CHECKING:
    from profilekit.vllm.registry import Registry

LORA_MODEL = -5  # VllmConfig.__post_init__: after the sampling-replay checks (-10), before stochastic rounding (5)
HC_SP = order.ATTENTION_HEADS - 5  # verify_with_parallel_config: the hc-sp checks come before the heads
MOE_BACKEND_MODEL = (6, 5)  # set_platform_defaults: after the spec-decode metrics check (6), before the platform hook

# `FLASHINFER_MOE_EP_BACKENDS` / `FLASHINFER_MOE_EP_ARCHITECTURES` of vllm/config/kernel.py (0.32.0 checks only
# the DeepGEMM variant)
_MOE_EP_BACKENDS = {
    "0.29.0": frozenset({"flashinfer_moe_ep_mega_deep_gemm", "flashinfer_moe_ep_mega_cutedsl"}),
    "0.32.0": frozenset({"flashinfer_moe_ep_mega_deep_gemm"}),
}
_MOE_EP_ARCHITECTURES = {
    "0.29.0": frozenset({"DeepseekV4ForCausalLM", "DeepSeekV4MTPModel"}),
    "0.30.0": frozenset({"DeepseekV4ForCausalLM", "DeepSeekV4MTPModel", "DeepseekV41ForCausalLM"}),
}


def _for(table: dict[str, frozenset[str]], version: str) -> frozenset[str]:
    return table[max((k for k in table if at_least(version, k)), key=version_key)]


def _architectures(f: RoleFacts) -> list[str] | None:
    """`ModelConfig.architectures`: config.json's list, or the one architecture profilekit knows."""
    raw = f.model.config
    if raw is not None and isinstance(raw.get("architectures"), list):
        return [str(a) for a in raw["architectures"]]
    return [f.model.architecture] if f.model.architecture is not None else None


def registered(f: RoleFacts) -> tuple[Registry, str] | None:
    """vLLM's registry facts of the release and the architecture they are read for (`Registry.resolve`); None when
    profilekit has none. The registry is loaded only when a rule that needs it gets this far."""
    from profilekit.vllm.registry import load_registry  # noqa: PLC0415 - only a check that needs the registry loads it

    registry = load_registry(f.version)
    arch = registry.resolve(_architectures(f), f.serve.get("model_impl")) if registry is not None else None
    return (registry, arch) if registry is not None and arch is not None else None


@rule(
    "transformers-backend-incompatible",
    Severity.ERROR,
    "model_impl = transformers for an architecture whose Transformers class vLLM cannot drive",
    releases="<0.30.0",
    source="vllm/model_executor/models/registry.py _ModelRegistry._try_resolve_transformers",
)
def transformers_backend(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    info = f.model.info
    if f.serve.get("model_impl") != "transformers" or info is None or info.transformers_backend:
        return []
    message = f"The Transformers implementation of {f.model.architecture!r} is not compatible with vLLM."
    return [
        Hit(
            "transformers-backend-incompatible",
            f'model_impl = "transformers" with a {f.model.architecture} model; vLLM {f.version} refuses to start: '
            f'"{message}"',
            [*f.loc("serve", "model_impl"), *f.model.locations],
            f'leave model_impl unset (or "vllm"): vLLM {f.version} serves {f.model.architecture} with its own '
            "implementation",
            role=f.role.name,
            order=order.built("ModelConfig", f.version, -10),
        )
    ]


@rule(
    "lora-unsupported",
    Severity.ERROR,
    "enable_lora for an architecture that does not implement SupportsLoRA",
    releases=">=0.33.0",
    source="vllm/config/lora.py LoRAConfig.verify_with_model_config",
)
def lora_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    info = f.model.info
    if f.serve.get("enable_lora") is not True or info is None or info.lora:
        return []
    if f.serve.get("model_impl") == "transformers":
        return []  # the Transformers backend's class decides, not the architecture's own
    model = f.model.model if f.model.model is not None else ""
    message = (
        f"LoRA is not supported for {f.model.architecture} ({model}). Supported models implement the "
        "`SupportsLoRA` interface. Run this model without `enable_lora`."
    )
    return [
        Hit(
            "lora-unsupported",
            f'enable_lora = true with a {f.model.architecture} model; vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", "enable_lora"), *f.model.locations],
            f"set enable_lora = false: vLLM {f.version} has no LoRA support for {f.model.architecture}",
            role=f.role.name,
            order=(STAGE_POST_INIT, LORA_MODEL),
        )
    ]


def moe_backend_of(f: RoleFacts) -> tuple[str, str] | None:
    """(the MoE backend, the key that sets it): --moe-backend wins over kernel_config's when not "auto"."""
    flag = f.serve.get("moe_backend")
    if isinstance(flag, str) and flag.lower().replace("-", "_") != "auto":
        return flag.lower().replace("-", "_"), "moe_backend"
    kernel = f.serve.get("kernel_config")
    nested = kernel.get("moe_backend") if isinstance(kernel, dict) else None
    return (nested, "kernel_config") if isinstance(nested, str) else None


@rule(
    "moe-backend-architecture",
    Severity.ERROR,
    "a FlashInfer MoE-EP backend for a model that is not DeepSeek-V4",
    releases=">=0.29.0",
    source="vllm/config/kernel.py validate_flashinfer_moe_ep_model",
)
def moe_backend_architecture(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = moe_backend_of(f)
    archs = _architectures(f)
    if found is None or archs is None or found[0] not in _for(_MOE_EP_BACKENDS, f.version):
        return []
    allowed = _for(_MOE_EP_ARCHITECTURES, f.version)
    if any(a in allowed for a in archs):
        return []
    backend, key = found
    message = (
        f"moe_backend={backend!r} is only supported for DeepSeek-V4 models ({sorted(allowed)}), but the model is "
        f"{archs}."
    )
    return [
        Hit(
            "moe-backend-architecture",
            f'moe_backend = "{backend}" with a {archs[0]} model; vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", key), *f.model.locations],
            'leave moe_backend unset ("auto"): this backend drives only DeepSeek-V4 experts',
            role=f.role.name,
            order=(STAGE_POST_INIT, *MOE_BACKEND_MODEL),
        )
    ]


# vllm/config/kernel.py MEGA_MOE_BACKENDS and "aiter_mega_moe" (0.33.0 LoRAConfig.verify_with_kernel_config)
_LORA_MOE_BACKENDS = frozenset(
    {"deep_gemm_mega_moe", "flashinfer_moe_ep_cutedsl", "flashinfer_moe_ep_mega_deep_gemm", "aiter_mega_moe"}
)


@rule(
    "lora-moe-backend",
    Severity.ERROR,
    "enable_lora with a MegaMoE backend",
    releases=">=0.33.0",
    source="vllm/config/lora.py LoRAConfig.verify_with_kernel_config",
)
def lora_moe_backend(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = moe_backend_of(f)
    if f.serve.get("enable_lora") is not True or found is None or found[0] not in _LORA_MOE_BACKENDS:
        return []
    backend, key = found
    message = (
        f"LoRA is not supported with moe_backend={backend!r}. Disable LoRA or select a MoE backend that supports LoRA."
    )
    return [
        Hit(
            "lora-moe-backend",
            f'enable_lora = true with moe_backend = "{backend}"; vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", "enable_lora"), *f.loc("serve", key)],
            'set enable_lora = false, or leave moe_backend unset ("auto")',
            role=f.role.name,
            order=(STAGE_POST_INIT, LORA_MODEL - 1),  # verify_with_kernel_config, right before verify_with_model_config
        )
    ]


def _hc_sp_problem(f: RoleFacts) -> tuple[str, str, str, str] | None:
    """(rule, what, vLLM's message, fix) of the hc-sp check a role fails; None when it passes or is unknown."""
    tp = serve_int(f, "tensor_parallel_size", 1)
    if f.serve.get("enable_hc_sp") is not True or tp is None or tp <= 1:
        return None
    found = registered(f)
    if found is None:
        return None
    registry, arch = found
    capable = registry.flag(arch, "supports_hc_sp")
    if capable is False:
        return (
            "hc-sp-unsupported",
            f"enable_hc_sp = true with tensor_parallel_size = {tp} for a {arch} model, which vLLM {f.version}'s "
            "registry does not mark hc-sp capable",
            "--enable-hc-sp is not supported for this model",
            "set enable_hc_sp = false: this architecture has no head-count-sharded sequence parallelism",
        )
    pp = serve_int(f, "pipeline_parallel_size", 1)
    if capable is True and pp is not None and pp != 1:
        return (
            "hc-sp-pipeline-parallel",
            f"enable_hc_sp = true with pipeline_parallel_size = {pp}",
            "--enable-hc-sp requires PP=1",
            "set pipeline_parallel_size = 1, or enable_hc_sp = false",
        )
    return None


def _hc_sp_hit(f: RoleFacts, rule_id: str) -> list[Hit]:
    problem = _hc_sp_problem(f)
    if problem is None or problem[0] != rule_id:
        return []
    _rule, what, message, fix = problem
    keys = ("tensor_parallel_size",) if rule_id == "hc-sp-unsupported" else ("pipeline_parallel_size",)
    return [
        Hit(
            rule_id,
            f'{what}; vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", "enable_hc_sp"), *(loc for k in keys for loc in f.loc("serve", k)), *f.model.locations],
            fix,
            role=f.role.name,
            order=(STAGE_POST_INIT, HC_SP),
        )
    ]


@rule(
    "hc-sp-unsupported",
    Severity.ERROR,
    "enable_hc_sp with tensor parallelism for an architecture the registry does not mark hc-sp capable",
    releases=">=0.32.0",
    source="vllm/config/model.py ModelConfig.verify_with_parallel_config",
)
def hc_sp_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    return _hc_sp_hit(f, "hc-sp-unsupported")


@rule(
    "hc-sp-pipeline-parallel",
    Severity.ERROR,
    "enable_hc_sp with tensor and pipeline parallelism for an hc-sp capable architecture",
    releases=">=0.32.0",
    source="vllm/config/model.py ModelConfig.verify_with_parallel_config",
)
def hc_sp_pipeline_parallel(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    return _hc_sp_hit(f, "hc-sp-pipeline-parallel")
