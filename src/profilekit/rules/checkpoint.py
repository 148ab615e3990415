"""The checkpoint's own quantization (`quantization_config` in the model's config.json) against `quantization`, and
the model dtype against the activation dtypes of the quantization method.

Source: `vllm/config/model.py` `ModelConfig._verify_quantization` and the config.json reading of
`vllm/transformers_utils/model_arch_config_convertor.py` `_normalize_quantization_config` (the same checks in
every release 0.27.0-0.33.0). vLLM first asks every quantization method whether it overrides the checkpoint's
(`override_quantization_method` of `vllm/model_executor/layers/quantization/`: AutoGPTQ, AutoAWQ, INC,
MoE-WNA16, ModelOpt, GPT-OSS MXFP4, Humming); an override becomes both sides, so only a pair that no method can
reconcile is refused. Profilekit judges the pairs where no override can apply and stays silent on the rest.
`VllmConfig._get_quantization_config` then refuses a model dtype the method's `get_supported_act_dtypes` does not
list; profilekit knows that list for fp8 (`Fp8Config`, and 0.30.0's online fp8: bfloat16 and float16 in every
release) and judges a dtype written in a layer; other methods, and `dtype = "auto"`, are left to vLLM.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import shown

# ModelConfig.__post_init__: _verify_quantization runs last, after the multimodal config is built (20)
VERIFY_QUANTIZATION = 30

# VllmConfig.__post_init__: the quantization config is built after the LoRA checks (-5), before the Mamba ones (5)
QUANTIZATION_CONFIG = (STAGE_POST_INIT, -2)
# `get_supported_act_dtypes` of the methods profilekit knows, as vLLM prints them
ACT_DTYPES = {"fp8": ("bfloat16", "float16")}
_TORCH = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32", "float32": "float32"}

# the `quantization` values for which AutoGPTQ / AutoAWQ take over a gptq / awq checkpoint (on a GPU host:
# AutoAWQ declines on a CPU platform)
_GPTQ_USER = frozenset({"gptq", "gptq_marlin", "auto_gptq", "marlin"})
_AWQ_USER = frozenset({"awq", "awq_marlin", "auto_awq", "marlin"})
# methods that claim a checkpoint whatever it says once the user names them (MoE-WNA16 for a compatible
# gptq/awq checkpoint, Humming always)
_CLAIMING_USER = frozenset({"moe_wna16", "humming"})


def checkpoint_quantization(raw: dict[str, Any]) -> dict[str, Any] | None:
    """`get_quantization_config`: `quantization_config` (or compressed-tensors' `compression_config`) of the
    config.json, else of its `text_config`; None when there is none."""
    for source in (raw, raw.get("text_config")):
        if not isinstance(source, dict):
            continue
        cfg = source.get("quantization_config")
        if cfg is None:
            cfg = source.get("compression_config")
        if cfg is not None:
            return cfg if isinstance(cfg, dict) else None
    return None


def _modelopt(cfg: dict[str, Any]) -> bool:
    """A ModelOpt checkpoint, whose method vLLM derives from its `quant_algo` (and may refuse)."""
    producer = cfg.get("producer")
    nested = cfg.get("quantization")
    return (isinstance(producer, dict) and producer.get("name") == "modelopt") or (
        isinstance(nested, dict) and "modelopt_quant_config" in nested
    )


def checkpoint_method(cfg: dict[str, Any]) -> str | None:
    """The checkpoint's `quant_method` as vLLM normalises it (lower case, compressed-tensors' spelling); "" when
    the config has none; None for a ModelOpt checkpoint or a method profilekit cannot read."""
    if _modelopt(cfg):
        return None
    method = cfg.get("quant_method", "")
    if not isinstance(method, str):
        return None
    return method.lower().replace("compressed_tensors", "compressed-tensors")


def _overridden(method: str, user: str, model_type: Any) -> bool:
    """Whether a quantization method's `override_quantization_method` may claim this checkpoint."""
    if user in _CLAIMING_USER:
        return True
    if method == "gptq" and user in _GPTQ_USER:
        return True
    if method == "awq" and user in _AWQ_USER:
        return True
    if method == "auto-round" or method.startswith("modelopt"):  # INC; ModelOpt by quant_algo
        return True
    return method in ("mxfp4", "gpt_oss_mxfp4") and model_type == "gpt_oss"


@rule(
    "quantization-checkpoint-mismatch",
    Severity.ERROR,
    "quantization names another method than the checkpoint's quantization_config (needs the config.json)",
    source="vllm/config/model.py ModelConfig._verify_quantization",
)
def quantization_checkpoint_mismatch(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    user = f.serve.get("quantization")
    raw = f.model.config
    if not isinstance(user, str) or raw is None:
        return []
    cfg = checkpoint_quantization(raw)
    method = checkpoint_method(cfg) if cfg is not None else None
    if method is None or method == user or _overridden(method, user, raw.get("model_type")):
        return []
    named = method or None
    message = (
        f"Quantization method specified in the model config ({named}) does not match the quantization method "
        f"specified in the `quantization` argument ({user})."
    )
    what = (
        f'a checkpoint quantized with "{method}"'
        if method
        else "a checkpoint whose quantization_config names no method"
    )
    return [
        Hit(
            "quantization-checkpoint-mismatch",
            f"quantization = {shown(user)} for {what} (quantization_config in its config.json); vLLM {f.version} "
            f'refuses to start: "{message}"',
            [*f.loc("serve", "quantization"), *f.model.locations],
            "remove quantization: vLLM reads the method from the checkpoint's config.json",
            role=f.role.name,
            order=order.built("ModelConfig", f.version, VERIFY_QUANTIZATION),
        )
    ]


def effective_method(f: RoleFacts) -> str | None:
    """`ModelConfig.quantization` once `_verify_quantization` passed, where no override can change it: the written
    method (online, or the checkpoint's own), else the checkpoint's; None when unquantized or not known."""
    written = f.serve.get("quantization")
    written = written.lower() if isinstance(written, str) else None
    raw = f.model.config
    cfg = checkpoint_quantization(raw) if raw is not None else None
    method = checkpoint_method(cfg) if cfg is not None else None
    if cfg is None:
        return written
    if method is None or (written is not None and method != written):
        return None  # ModelOpt, or a mismatch (quantization-checkpoint-mismatch)
    return None if _overridden(method, written or "", (raw or {}).get("model_type")) else method


@rule(
    "quantization-dtype-unsupported",
    Severity.ERROR,
    "a dtype the quantization method cannot run activations in (fp8 with float32)",
    source="vllm/config/vllm.py VllmConfig._get_quantization_config",
)
def quantization_dtype_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    dtype = f.serve.get("dtype")
    dtype = _TORCH.get(dtype.lower()) if isinstance(dtype, str) else None
    method = effective_method(f)
    supported = ACT_DTYPES.get(method or "")
    if dtype is None or method is None or supported is None or dtype in supported:
        return []
    raw = f.model.config
    checkpoint = raw is not None and checkpoint_quantization(raw) is not None  # the method came from config.json
    listed = ", ".join(f"torch.{d}" for d in supported)
    message = f"torch.{dtype} is not supported for quantization method {method}. Supported dtypes: [{listed}]"
    return [
        Hit(
            "quantization-dtype-unsupported",
            f"dtype = {shown(f.serve.get('dtype'))} with quantization method {shown(method)}; vLLM {f.version} refuses "
            f'to start: "{message}"',
            [*f.loc("serve", "dtype"), *f.loc("serve", "quantization"), *(f.model.locations if checkpoint else ())],
            f'set dtype to one of {", ".join(shown(d) for d in supported)} (or "auto")',
            role=f.role.name,
            order=QUANTIZATION_CONFIG,
        )
    ]
