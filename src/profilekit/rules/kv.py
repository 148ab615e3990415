"""KV-connector hygiene: roles, registered names, connectors that offload flags replace, leftover extra config,
PyTorch's expandable segments and (0.33.0) sleep mode beside a connector.

Sources: `vllm/config/kv_transfer.py` (`KVTransferConfig.__post_init__`),
`vllm/distributed/kv_transfer/kv_connector/factory.py` (the registry and `get_connector_class`),
`vllm/config/vllm.py` (`_post_init_kv_transfer_config`, the HMA check in `__post_init__`,
`_verify_kv_transfer_compat`); reference/vllm-facts.md sections 2.1-2.4.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from typing import Any

from profilekit.errors import Location, Severity
from profilekit.rules.engine import STAGE_ARGPARSE, STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import KV_ROLES, Connector, RoleFacts
from profilekit.rules.replayssm import describe_connector
from profilekit.rules.scheduling import full_cudagraphs
from profilekit.vllm.constraints import speculative_view
from profilekit.vllm.versions import at_least

_BASE_CONNECTORS = (
    "DecodeBenchConnector",
    "ExampleConnector",
    "ExampleHiddenStatesConnector",
    "FlexKVConnectorV1",
    "HF3FSKVConnector",
    "LMCacheConnectorV1",
    "LMCacheMPConnector",
    "MoRIIOConnector",
    "MooncakeConnector",
    "MooncakeStoreConnector",
    "MultiConnector",
    "NixlConnector",
    "NixlPullConnector",
    "NixlPushConnector",
    "OffloadingConnector",
    "SimpleCPUOffloadConnector",
)


def registered_connectors(version: str) -> tuple[str, ...]:
    """`KVConnectorFactory.register_connector` calls in each release's factory.py (read from the wheels)."""
    names = list(_BASE_CONNECTORS)
    if at_least(version, "0.30.0"):
        names.append("HiSparseConnector")
    return tuple(sorted(names))


# vLLM formats `get_args(KVRole)` into its messages
_ROLES_TUPLE = "('kv_producer', 'kv_both', 'kv_consumer')"
SOURCE_KVT = "vllm/config/kv_transfer.py KVTransferConfig.__post_init__"
SOURCE_FACTORY = "vllm/distributed/kv_transfer/kv_connector/factory.py KVConnectorFactory.get_connector_class"


def _v(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _ktc_locs(f: RoleFacts, *key: str) -> list[Location]:
    return f.loc("serve", "kv_transfer_config", *key)


# VllmConfig.__post_init__ on a platform with static graphs (CUDA, ROCm): a KV transfer instance with full CUDA
# graphs has its connector class looked up (`requires_piecewise_for_cudagraph`), after `_set_max_num_scheduled_tokens`
# (6, 10) and before `_set_cudagraph_sizes` (6, 20), every release 0.27.0-0.33.0; the CPU platform never does
GRAPH_LOOKUP = (STAGE_POST_INIT, 6, 15)


def _graph_lookup(f: RoleFacts, c: Connector) -> bool:
    """vLLM on the declared GPU certainly looks the connector class up for its CUDA graphs: a transfer instance,
    not eager, full graphs (the default, or a FULL mode written); a pooling runner, or dynamic speculative decoding
    (`num_speculative_tokens_per_batch_size`, `_maybe_override_dynamic_sd_cudagraph_mode`), may turn them piecewise
    first, so those are not claimed. Other speculative decoding keeps full graphs."""
    if f.gpu is None or c is not f.explicit or not c.is_transfer_instance:
        return False
    if any(key in f.serve for key in ("runner", "convert")):
        return False
    spec = speculative_view(f.serve)
    if isinstance(spec, dict) and spec.get("num_speculative_tokens_per_batch_size") is not None:
        return False
    return full_cudagraphs(f)


def _hma_auto(f: RoleFacts) -> bool:
    """vLLM looks the connector class up at config time only when the HMA choice is left to it."""
    return f.serve.get("disable_hybrid_kv_cache_manager") is None


@rule(
    "kv-role-missing",
    Severity.ERROR,
    "kv_connector without kv_role",
    source=SOURCE_KVT,
)
def kv_role_missing(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    c = f.explicit
    if c is None or c.name is None or c.role is not None:
        return []
    return [
        Hit(
            "kv-role-missing",
            f"kv_transfer_config sets kv_connector = {_v(c.name)} without kv_role; vLLM {f.version} refuses to start: "
            f'"Please specify kv_role when kv_connector is set, supported roles are {_ROLES_TUPLE}"',
            _ktc_locs(f, "kv_connector"),
            'add kv_role: "kv_producer" on prefill instances, "kv_consumer" on decode instances, '
            '"kv_both" for offload connectors',
            role=f.role.name,
            # KVTransferConfig.__post_init__: only once the table's keys and fields are valid
            order=(STAGE_ARGPARSE, 10, 1),
        )
    ]


@rule(
    "kv-role-invalid",
    Severity.ERROR,
    "kv_role is not kv_producer, kv_consumer or kv_both",
    source=SOURCE_KVT,
)
def kv_role_invalid(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    c = f.explicit
    raw = f.ktc.get("kv_role")
    if c is None or raw is None or raw in KV_ROLES:
        return []
    return [
        Hit(
            "kv-role-invalid",
            f"kv_transfer_config has kv_role = {_v(raw)}; vLLM {f.version} refuses to start: "
            "\"kv_role: Input should be 'kv_producer', 'kv_both' or 'kv_consumer'\"",
            _ktc_locs(f, "kv_role"),
            'use "kv_producer", "kv_consumer" or "kv_both"',
            role=f.role.name,
            order=(STAGE_ARGPARSE, 9),
        )
    ]


def _unknown(ctx: Context, f: RoleFacts, c: Connector, known: tuple[str, ...]) -> Hit:
    close = difflib.get_close_matches(c.name or "", known, n=1, cutoff=0.8)
    fix = f"did you mean {close[0]!r}? " if close else ""
    fix += f"vLLM {ctx.version} registers: {', '.join(known)}; an out-of-tree connector needs kv_connector_module_path"
    where = (
        "serve.kv_transfer_config"
        if c.index is None
        else (f"kv_connector_extra_config.connectors[{c.index}] of the MultiConnector")
    )
    early = _graph_lookup(f, c)
    later = "" if early or _hma_auto(f) else " (when it builds the connector)"
    return Hit(
        "kv-connector-unknown",
        f"{where} names kv_connector = {_v(c.name)}, which vLLM {ctx.version} does not register; "
        f'vLLM {ctx.version} refuses to start{later}: "Unsupported connector type: {c.name}"',
        list(c.locations) or _ktc_locs(f),
        fix,
        role=f.role.name,
        # only the CUDA-graph and the HMA checks look the class up while the config is built
        order=GRAPH_LOOKUP if early else ((STAGE_POST_INIT, 10) if _hma_auto(f) else None),
    )


@rule(
    "kv-connector-unknown",
    Severity.ERROR,
    "a kv_connector name the targeted release does not register",
    source=SOURCE_FACTORY,
)
def kv_connector_unknown(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.ktc.get("kv_connector_module_path"):
        return []
    known = registered_connectors(ctx.version)
    hits: list[Hit] = []
    eff = f.effective
    if eff is None or eff.name is None:
        return hits
    if eff.name not in known:
        hits.append(_unknown(ctx, f, eff, known))
    elif eff is f.explicit and eff.name == "MultiConnector":
        hits += [_unknown(ctx, f, child, known) for child in f.children if child.name and child.name not in known]
    return hits


@rule(
    "kv-connector-missing",
    Severity.ERROR,
    "kv_transfer_config without kv_connector",
    source=SOURCE_FACTORY,
)
def kv_connector_missing(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    c = f.explicit
    if c is None or c.name is not None or f.implied is not None:
        return []
    locs = f.locs("serve", "kv_transfer_config")
    if not _hma_auto(f):
        return [
            Hit(
                "kv-connector-missing",
                "kv_transfer_config has no kv_connector, so it configures nothing",
                locs,
                "add kv_connector, or remove kv_transfer_config",
                role=f.role.name,
                severity=Severity.WARNING,
            )
        ]
    return [
        Hit(
            "kv-connector-missing",
            f"kv_transfer_config has no kv_connector; vLLM {ctx.version} refuses to start: "
            '"Connector name is not set in KVTransferConfig"',
            locs,
            "add kv_connector, or remove kv_transfer_config",
            role=f.role.name,
            order=(STAGE_POST_INIT, 10),
        )
    ]


@rule(
    "kv-offload-replaces-connector",
    Severity.WARNING,
    "kv_offloading_size silently replaces an explicit connector",
    source="vllm/config/vllm.py VllmConfig._post_init_kv_transfer_config",
)
def kv_offload_replaces(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    old = f.replaced
    new = f.implied
    if old is None or new is None:
        return []
    what = f"{old.name}" + (f" (kv_role {_v(old.role)})" if old.role else "")
    return [
        Hit(
            "kv-offload-replaces-connector",
            f"kv_offloading_size = {_v(f.serve.get('kv_offloading_size'))} silently replaces the explicit KV "
            f'connector {what} with {new.name} (kv_role "kv_both"): vLLM keeps only the offload connector',
            [*new.locations, *old.locations],
            "remove kv_offloading_size and, to offload beside another connector, use a MultiConnector whose "
            f"connectors are {old.name} and OffloadingConnector; or remove the explicit kv_transfer_config",
            role=f.role.name,
        )
    ]


def _rank(ctx: Context, loc: Location) -> tuple[int, int]:
    """Merge position of a value's origin: top-level tables of every layer, then role tables."""
    names = ctx.stack.layer_names
    index = names.index(loc.layer) if loc.layer in names else -1
    return (1 if loc.key.startswith("roles.") else 0, index)


@rule(
    "kv-extra-config-inherited",
    Severity.WARNING,
    "a layer changes kv_connector but inherits the previous connector's kv_connector_extra_config keys",
)
def kv_extra_config_inherited(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    entry = f.role.entry("serve", "kv_transfer_config", "kv_connector")
    if entry is None or not entry.overridden:
        return []
    previous = [a for a in entry.overridden if a.value != entry.value and isinstance(a.value, str)]
    if not previous:
        return []
    changed_at = _rank(ctx, entry.origin)
    prefix = ("serve", "kv_transfer_config", "kv_connector_extra_config")
    inherited = [
        (path, e)
        for path, e in f.role.scope.entries.items()
        if path[: len(prefix)] == prefix and _rank(ctx, e.origin) < changed_at
    ]
    if not inherited:
        return []
    keys = sorted({".".join(str(p) for p in path[len(prefix) :]) for path, _ in inherited})
    old = previous[-1]
    return [
        Hit(
            "kv-extra-config-inherited",
            f"layer {entry.origin.layer!r} changes kv_connector from {_v(old.value)} to {_v(entry.value)} but "
            f"inherits kv_connector_extra_config keys written for {_v(old.value)}: {', '.join(keys)}",
            [entry.origin, old.origin, *[e.origin for _, e in inherited]],
            f'in layer {entry.origin.layer!r}, add [layer] unset = ["serve.kv_transfer_config.'
            'kv_connector_extra_config"] (then set the keys the new connector needs)',
            role=f.role.name,
        )
    ]


@rule(
    "kv-expandable-segments",
    Severity.ERROR,
    "PYTORCH_CUDA_ALLOC_CONF with expandable_segments:True beside a KV connector",
    source="vllm/config/vllm.py VllmConfig._verify_kv_transfer_compat",
)
def kv_expandable_segments(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    conf = f.env_value("PYTORCH_CUDA_ALLOC_CONF")
    eff = f.effective
    if conf is None or "expandable_segments:True" not in conf or eff is None or eff.name is None:
        return []
    if f.serve.get("enable_cumem_allocator") is True or f.serve.get("enable_sleep_mode") is True:
        return []
    return [
        Hit(
            "kv-expandable-segments",
            f"PYTORCH_CUDA_ALLOC_CONF = {_v(conf)} beside {describe_connector(f, eff)}; vLLM {ctx.version} refuses "
            "to start: "
            f'"KV connector {eff.name} is incompatible with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True '
            'unless enable_cumem_allocator is also enabled"',
            [*f.loc("env", "PYTORCH_CUDA_ALLOC_CONF"), *eff.locations],
            "remove expandable_segments:True from PYTORCH_CUDA_ALLOC_CONF for this role, or set "
            "enable_cumem_allocator = true",
            role=f.role.name,
            order=(STAGE_POST_INIT, 20),
        )
    ]


# 0.33.0 `supports_sleep_mode` overrides (vllm/distributed/kv_transfer/kv_connector/v1/...): every other registered
# connector keeps the base class's True
_NO_SLEEP_MODE = frozenset({"NixlPushConnector", "MoRIIOConnector", "MooncakeStoreConnector"})
_MOONCAKE_NON_RDMA_ENV = ("MC_FORCE_MNNVL", "MC_INTRANODE_NVLINK", "MC_USE_TENT", "MC_USE_TEV1")


def _supports_sleep_mode(f: RoleFacts, config: dict[str, Any]) -> bool | None:
    """`KVConnectorFactory.get_connector_class(config).supports_sleep_mode(config)`; None when profilekit cannot tell."""
    name = config.get("kv_connector")
    extra = config.get("kv_connector_extra_config", {})
    if not isinstance(name, str) or not isinstance(extra, dict) or config.get("kv_connector_module_path"):
        return None  # an out-of-tree class decides for itself
    if name in _NO_SLEEP_MODE:
        return False
    if name in ("NixlConnector", "NixlPullConnector"):  # only validated with the UCX backend
        return bool(extra.get("backends", ["UCX"]) == ["UCX"])
    if name == "MooncakeConnector":  # only validated over RDMA, not NVLink or TENT
        if any(f.env_value(var) is not None for var in _MOONCAKE_NON_RDMA_ENV):
            return False
        return bool(extra.get("mooncake_protocol", "rdma") == "rdma")
    if name == "MultiConnector":
        children = extra.get("connectors", [])
        if not isinstance(children, list) or not all(
            isinstance(c, dict) and c.get("kv_role") in KV_ROLES for c in children
        ):
            return None  # vLLM refuses such a child on its own terms while it asks
        answers = [_supports_sleep_mode(f, c) for c in children]
        if False in answers:
            return False
        return None if None in answers else bool(children)
    return name in registered_connectors(f.version) or None


@rule(
    "kv-connector-sleep-mode",
    Severity.ERROR,
    "enable_sleep_mode with a KV connector that cannot follow sleep mode's KV cache remap",
    releases=">=0.33.0",
    source="vllm/config/vllm.py VllmConfig._verify_kv_transfer_compat",
)
def kv_connector_sleep_mode(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    eff = f.effective  # after _post_init_kv_transfer_config: kv_offloading_size's connector replaces an explicit one
    if f.serve.get("enable_sleep_mode") is not True or eff is None or eff.name is None:
        return []
    config = f.ktc if eff is f.explicit else {"kv_connector": eff.name}
    if _supports_sleep_mode(f, config) is not False:
        return []
    return [
        Hit(
            "kv-connector-sleep-mode",
            f"enable_sleep_mode = true with {describe_connector(f, eff)}; vLLM {ctx.version} refuses to start: "
            f'"{eff.name} does not support sleep mode."',
            [*f.loc("serve", "enable_sleep_mode"), *eff.locations],
            "remove enable_sleep_mode, or use a connector setting that supports it (NIXL over UCX, Mooncake over RDMA)",
            role=f.role.name,
            order=(STAGE_POST_INIT, 20, -1),  # _verify_kv_transfer_compat: before the expandable-segments check
        )
    ]
