"""Validators of the attention, encoder-cache-manager and watermark configs that the field constraints leave.

Sources: `vllm/config/attention.py` `AttentionConfig.validate_backend_per_kind_before` (every release 0.27.0-0.33.0)
and `AttentionConfig.__post_init__` (`use_fp4_indexer_cache` 0.28.0-0.29.0, `minimax_m3_indexer_cp` 0.33.0), and
`vllm/config/ec_manager_config.py` `EncoderCacheManagerConfig.__post_init__` (0.28.0 and later): all run while the
argument parser reads `--attention-config` / `--ec-manager-config` (`parse_dataclass`: "1 validation error for ...").
`vllm/config/watermarking.py` `WatermarkConfig.validate_watermark_settings` (0.30.0 and later) runs when
`EngineArgs.create_watermark_config` builds the config.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_ARGPARSE, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import shown
from profilekit.vllm.versions import at_least

PARSE_VALIDATOR: Order = (STAGE_ARGPARSE, 0, 1)  # after the field constraints rules/options.py reports at (0, 0)
# vllm/v1/kv_cache_interface.py KVCacheSpecKind, the same in every release 0.27.0-0.33.0
KV_CACHE_KINDS = (
    "chunked_local_attention",
    "cross_attention",
    "encoder_only_attention",
    "full_attention",
    "mamba",
    "mla_attention",
    "sink_full_attention",
    "sliding_window",
    "sliding_window_mla",
    "unknown",
)
MINIMAX_CP_INDEXER_DTYPES = ("auto", "bf16", "fp8", "fp8_e4m3")


def _table(f: RoleFacts, key: str) -> dict[str, Any] | None:
    """A config option as vLLM reads it: a table, or a JSON object in a string."""
    value = f.serve.get(key)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None  # invalid-value reports it
    return value if isinstance(value, dict) else None


def attention_failure(cfg: dict[str, Any], version: str) -> tuple[str, str, str] | None:
    """(key, vLLM's message, fix) of AttentionConfig's first validator failure; None when it passes."""
    kinds = cfg.get("backend_per_kind")
    if isinstance(kinds, dict):
        for kind in kinds:
            if kind not in KV_CACHE_KINDS:
                message = (
                    f"Unknown KV cache group kind '{kind}' in backend_per_kind. Valid kinds are: "
                    f"{', '.join(KV_CACHE_KINDS)}."
                )
                return "backend_per_kind", message, f"name one of the KV cache group kinds: {', '.join(KV_CACHE_KINDS)}"
    indexer = cfg.get("indexer_kv_dtype", "auto")
    fp4 = at_least(version, "0.28.0") and not at_least(version, "0.30.0") and cfg.get("use_fp4_indexer_cache") is True
    if fp4 and indexer not in ("auto", "mxfp4"):
        message = f"use_fp4_indexer_cache=True conflicts with indexer_kv_dtype={indexer!r}. Set only indexer_kv_dtype."
        return (
            "use_fp4_indexer_cache",
            message,
            'remove use_fp4_indexer_cache (it means indexer_kv_dtype = "mxfp4")',
        )
    minimax_cp = at_least(version, "0.33.0") and cfg.get("minimax_m3_indexer_cp") is True
    if minimax_cp and indexer not in MINIMAX_CP_INDEXER_DTYPES:
        message = (
            "minimax_m3_indexer_cp requires a bf16 or fp8 e4m3 index cache (indexer_kv_dtype 'auto', 'bf16', "
            f"'fp8' or 'fp8_e4m3'), got {indexer!r}"
        )
        return (
            "minimax_m3_indexer_cp",
            message,
            'set indexer_kv_dtype to "bf16" or "fp8", or drop minimax_m3_indexer_cp',
        )
    return None


@rule(
    "attention-config",
    Severity.ERROR,
    "attention_config with an unknown KV cache group kind or an index-cache dtype its options refuse",
    source="vllm/config/attention.py AttentionConfig.validate_backend_per_kind_before and __post_init__",
)
def attention_config(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = _table(f, "attention_config")
    found = attention_failure(cfg, f.version) if cfg is not None else None
    if found is None:
        return []
    key, message, fix = found
    return [
        Hit(
            "attention-config",
            f"attention_config.{key}: vLLM {f.version} refuses to start: "
            f'"1 validation error for AttentionConfig / {message}"',
            f.loc("serve", "attention_config", key) or f.loc("serve", "attention_config"),
            fix,
            role=f.role.name,
            order=PARSE_VALIDATOR,
        )
    ]


@rule(
    "ec-manager-config",
    Severity.ERROR,
    "ec_manager_config.manager_config without encoder_cache_manager_cls",
    source="vllm/config/ec_manager_config.py EncoderCacheManagerConfig.__post_init__",
)
def ec_manager_config(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = _table(f, "ec_manager_config")
    if not at_least(f.version, "0.28.0") or cfg is None:
        return []
    if not cfg.get("manager_config") or cfg.get("encoder_cache_manager_cls") is not None:
        return []
    return [
        Hit(
            "ec-manager-config",
            f"ec_manager_config.manager_config without encoder_cache_manager_cls; vLLM {f.version} refuses to start: "
            '"1 validation error for EncoderCacheManagerConfig / manager_config requires encoder_cache_manager_cls '
            'to be set."',
            f.loc("serve", "ec_manager_config", "manager_config") or f.loc("serve", "ec_manager_config"),
            "set ec_manager_config.encoder_cache_manager_cls to the class that reads manager_config, or remove it",
            role=f.role.name,
            order=PARSE_VALIDATOR,
        )
    ]


@rule(
    "watermark-key",
    Severity.ERROR,
    "a watermark key wider than 64 bits",
    source="vllm/config/watermarking.py WatermarkConfig.validate_watermark_settings",
)
def watermark_key(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = _table(f, "watermark_config")
    key = cfg.get("key") if cfg is not None and at_least(f.version, "0.30.0") else None
    if not isinstance(key, int) or isinstance(key, bool) or key <= 2**64 - 1:
        return []
    return [
        Hit(
            "watermark-key",
            f"watermark_config.key = {shown(key)}; vLLM {f.version} refuses to start: "
            '"philox keys must fit in 64 bits"',
            f.loc("serve", "watermark_config", "key") or f.loc("serve", "watermark_config"),
            f"choose a key between 0 and {2**64 - 1}",
            role=f.role.name,
            order=order.built("WatermarkConfig", f.version),
        )
    ]
