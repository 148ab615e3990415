"""Facts derived once per role from its effective configuration: KV connectors, cache modes, capabilities.

Each fact mirrors what vLLM computes at start-up, for the targeted release, on a GPU host with Triton
(DESIGN section 6). The sources are cited next to each derivation.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profilekit.records import record
from profilekit.rules.models import ModelConfigs, ModelFacts, model_facts
from profilekit.rules.runnerfacts import uses_mla, v2_model_runner, v2_unsupported_features
from profilekit.vllm.constraints import speculative_view
from profilekit.vllm.versions import at_least

if TYPE_CHECKING:
    from collections.abc import Mapping

    from profilekit.compose.model import RoleConfig, Stack
    from profilekit.errors import Location
    from profilekit.hardware import Gpu

KV_ROLES = ("kv_producer", "kv_consumer", "kv_both")

# Connectors that move KV between prefill and decode instances (P/D disaggregation).
PD_CONNECTORS = frozenset(
    {
        "NixlConnector",
        "NixlPullConnector",
        "NixlPushConnector",
        "MooncakeConnector",
        "MoRIIOConnector",
        "P2pNcclConnector",
    }
)
NIXL_CONNECTORS = frozenset({"NixlConnector", "NixlPullConnector", "NixlPushConnector"})
# Connectors that keep KV in another tier (CPU, disk, a cache server): KV cache offload.
OFFLOAD_CONNECTORS = frozenset(
    {
        "OffloadingConnector",
        "SimpleCPUOffloadConnector",
        "LMCacheMPConnector",
        "LMCacheConnectorV1",
        "MooncakeStoreConnector",
        "HF3FSKVConnector",
        "FlexKVConnectorV1",
    }
)


@record(frozen=True, slots=True)
class Connector:
    """One KV connector of a role, and the keys that made it."""

    name: str | None
    role: str | None
    # "kv_transfer_config", "MultiConnector child", or "kv_offloading_size"
    via: str
    locations: tuple[Location, ...]
    index: int | None = None  # position in MultiConnector's `connectors`

    @property
    def is_transfer_instance(self) -> bool:
        """`KVTransferConfig.is_kv_transfer_instance` (vllm/config/kv_transfer.py)."""
        return self.name is not None and self.role in KV_ROLES


@record(slots=True)
class RoleFacts:
    """Everything the rules need to know about one vLLM role, computed once."""

    role: RoleConfig
    version: str
    model: ModelFacts
    serve: dict[str, Any]
    env: dict[str, Any]
    explicit: Connector | None = None  # serve.kv_transfer_config as composed
    children: list[Connector] = field(default_factory=list)  # MultiConnector children
    implied: Connector | None = None  # the connector kv_offloading_size creates
    prefix_caching: bool | None = None  # effective; None when the model decides and is unknown
    prefix_caching_explicit: bool | None = None
    mamba_cache_mode: str | None = None  # effective, for hybrid models; None when unknown
    num_spec: int | None = 0  # 0: no speculative decoding; None: on, with a count vLLM derives
    spec_method: str | None = None
    backend: str = "triton"
    buffer_len: int = 16
    v2_model_runner: bool | None = None  # None: the env value is not an integer
    v2_unsupported: list[str] = field(default_factory=list)  # features that keep vLLM off Model Runner V2
    capabilities: set[str] = field(default_factory=set)
    memo: dict[str, Any] = field(default_factory=dict)  # results a rule family computes once per role
    gpu: Gpu | None = None  # the GPU the role declares ([hardware] gpu); None: none declared (or unknown-gpu)

    @property
    def ktc(self) -> dict[str, Any]:
        """The composed kv_transfer_config table ({} when none)."""
        value = self.serve.get("kv_transfer_config")
        return value if isinstance(value, dict) else {}

    # -- locations ---------------------------------------------------------------------------

    def locs(self, *path: str) -> list[Location]:
        """Where the effective value at or below serve/env `path` was set (empty when vLLM's default)."""
        return self.role.origins(*path)

    def loc(self, *path: str) -> list[Location]:
        entry = self.role.entry(*path)
        return [entry.origin] if entry is not None else []

    # -- connectors --------------------------------------------------------------------------

    @property
    def effective(self) -> Connector | None:
        """The connector vLLM ends up with: kv_offloading_size replaces an explicit one."""
        return self.implied if self.implied is not None else self.explicit

    @property
    def connectors(self) -> list[Connector]:
        """Every connector that will be active: the effective one and, inside a MultiConnector, its children."""
        eff = self.effective
        if eff is None or not eff.is_transfer_instance:
            return []
        if eff is self.explicit and eff.name == "MultiConnector":
            return [eff, *self.children]
        return [eff]

    @property
    def kv_instance(self) -> bool:
        eff = self.effective
        return eff is not None and eff.is_transfer_instance

    @property
    def replaced(self) -> Connector | None:
        """The explicit connector that kv_offloading_size silently replaces."""
        if self.implied is not None and self.explicit is not None and self.explicit.name is not None:
            return self.explicit
        return None

    def env_value(self, name: str) -> str | None:
        value = self.env.get(name)
        return value if isinstance(value, str) else None


def _int_env(value: str | None) -> bool | None:
    """vLLM's `maybe_convert_bool` / `bool(int(...))` for an env value; None when it is not an integer."""
    if value is None:
        return None
    try:
        return bool(int(value))
    except ValueError:
        return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _explicit_connector(role: RoleConfig, serve: dict[str, Any]) -> tuple[Connector | None, list[Connector]]:
    ktc = serve.get("kv_transfer_config")
    if not isinstance(ktc, dict):
        return None, []
    name = ktc.get("kv_connector")
    kv_role = ktc.get("kv_role")
    locs = [*role.origins("serve", "kv_transfer_config", "kv_connector")]
    locs += role.origins("serve", "kv_transfer_config", "kv_role")
    if not locs:
        locs = role.origins("serve", "kv_transfer_config")
    explicit = Connector(
        name if isinstance(name, str) else None,
        kv_role if isinstance(kv_role, str) else None,
        "kv_transfer_config",
        tuple(locs),
    )
    children: list[Connector] = []
    extra = ktc.get("kv_connector_extra_config")
    if explicit.name == "MultiConnector" and isinstance(extra, dict):
        items = extra.get("connectors")
        if isinstance(items, list):
            for index, item in enumerate(items):
                if not isinstance(item, dict):
                    continue
                child_name = item.get("kv_connector")
                child_role = item.get("kv_role", explicit.role)
                where = role.origins("serve", "kv_transfer_config", "kv_connector_extra_config", "connectors")
                children.append(
                    Connector(
                        child_name if isinstance(child_name, str) else None,
                        child_role if isinstance(child_role, str) else None,
                        "MultiConnector child",
                        tuple(where[:1]),
                        index,
                    )
                )
    return explicit, children


def _implied_connector(role: RoleConfig, serve: dict[str, Any], env: dict[str, Any]) -> Connector | None:
    """`VllmConfig._post_init_kv_transfer_config` (vllm/config/vllm.py): kv_offloading_size makes a connector."""
    if serve.get("kv_offloading_size") is None:
        return None
    backend = serve.get("kv_offloading_backend", "native")
    locs = [*role.origins("serve", "kv_offloading_size"), *role.origins("serve", "kv_offloading_backend")]
    if backend == "lmcache":
        name = "LMCacheMPConnector"
    elif _int_env(_str(env.get("VLLM_USE_SIMPLE_KV_OFFLOAD"))):
        name = "SimpleCPUOffloadConnector"
        locs += role.origins("env", "VLLM_USE_SIMPLE_KV_OFFLOAD")
    else:
        name = "OffloadingConnector"
    return Connector(name, "kv_both", "kv_offloading_size", tuple(locs))


def _prefix_caching(version: str, model: ModelFacts, explicit: bool | None) -> bool | None:
    """`EngineArgs._set_default_chunked_prefill_and_prefix_caching_args` (vllm/engine/arg_utils.py).

    0.27.x: on by default except for hybrid models ("keep it opt-in for now"); from 0.28.0 on by
    default for every generative model.
    """
    if explicit is not None:
        return explicit
    if at_least(version, "0.28.0"):
        return True
    hybrid = model.hybrid
    return None if hybrid is None else not hybrid


def _mamba_cache_mode(version: str, model: ModelFacts, prefix_caching: bool | None, written: Any) -> str | None:
    """`MambaModelConfig.verify_and_update_config` (vllm/model_executor/models/config.py).

    With prefix caching on, mode `none` becomes `all` (0.27.x, when the model supports Mamba prefix
    caching) or `align`; `all` falls back to `align` for a model without that support. Off: `none`.
    From 0.32.0 the mode follows prefix caching (0.32.0 lost `all`; 0.33.0 ignores `--mamba-cache-mode`).
    """
    info = model.info
    if info is None or prefix_caching is None:
        return None
    if not info.hybrid:
        return written if isinstance(written, str) else "none"
    if not prefix_caching:
        return "none"
    if at_least(version, "0.32.0"):
        return "align"  # 0.32.0 has only align and none (argparse refuses `all`); 0.33.0 ignores the flag
    mode = written if isinstance(written, str) else "none"
    if mode == "none":
        mode = "all" if (not at_least(version, "0.28.0") and info.mamba_prefix_caching) else "align"
    if mode == "all" and not info.mamba_prefix_caching:
        mode = "align"
    return mode


def prefix_caching_and_mamba_mode(
    version: str, model: ModelFacts, serve: Mapping[str, Any]
) -> tuple[bool | None, bool | None, str | None]:
    """Prefix caching as written, as in effect, and the effective Mamba cache mode of a role serving `model`."""
    written = serve.get("enable_prefix_caching")
    explicit = written if isinstance(written, bool) else None
    effective = _prefix_caching(version, model, explicit)
    return explicit, effective, _mamba_cache_mode(version, model, effective, serve.get("mamba_cache_mode"))


def role_facts(
    role: RoleConfig,
    version: str,
    root: Path | None,
    models: ModelConfigs | None = None,
    gpu: Gpu | None = None,
) -> RoleFacts:
    serve = role.serve
    env = role.env
    model = model_facts(role, root, models)
    explicit, children = _explicit_connector(role, serve)
    implied = _implied_connector(role, serve, env)
    pc_explicit, prefix_caching, mode = prefix_caching_and_mamba_mode(version, model, serve)

    spec = speculative_view(serve)  # --spec-* merged in, as vLLM builds SpeculativeConfig
    num_spec: int | None = 0
    method: str | None = None
    if isinstance(spec, dict) and spec:
        n = spec.get("num_speculative_tokens")
        num_spec = n if isinstance(n, int) and not isinstance(n, bool) else None
        m = spec.get("method")
        method = m if isinstance(m, str) else None
    backend_raw = serve.get("mamba_backend", "triton")
    backend = backend_raw.lower() if isinstance(backend_raw, str) else "triton"
    buffer = serve.get("replayssm_buffer_len", 16)

    facts = RoleFacts(
        role=role,
        version=version,
        model=model,
        serve=serve,
        env=env,
        explicit=explicit,
        children=children,
        implied=implied,
        prefix_caching=prefix_caching,
        prefix_caching_explicit=pc_explicit,
        mamba_cache_mode=mode,
        num_spec=num_spec,
        spec_method=method,
        backend=backend,
        buffer_len=buffer if isinstance(buffer, int) and not isinstance(buffer, bool) else 16,
        v2_unsupported=v2_unsupported_features(version, serve, spec_method=method, mode=mode, mla=uses_mla(model, env)),
    )
    facts.v2_model_runner = v2_model_runner(
        version, serve, env, model, spec_method=method, unsupported=facts.v2_unsupported
    )
    facts.capabilities = _capabilities(facts)
    facts.gpu = gpu
    return facts


def _capabilities(facts: RoleFacts) -> set[str]:
    caps: set[str] = set()
    active = facts.connectors
    if active:
        caps.add("kv-connector")
    names = {c.name for c in active}
    if facts.implied is not None or names & OFFLOAD_CONNECTORS:
        caps.add("kv-offload")
    if any(c.name in PD_CONNECTORS or c.role in ("kv_producer", "kv_consumer") for c in active):
        caps.add("pd-disaggregation")
    if facts.serve.get("use_replayssm") is True:
        caps.add("replayssm")
    if facts.num_spec != 0:
        caps.add("speculative-decoding")
    # unknown model on 0.27.x: count prefix caching as vLLM's default for attention-only models (on)
    if facts.prefix_caching is not False:
        caps.add("prefix-caching")
    if facts.model.hybrid:
        caps.add("hybrid-model")
    return caps


def stack_facts(
    stack: Stack, version: str, root: Path | None, models: ModelConfigs | None = None
) -> dict[str, RoleFacts]:
    """Facts of every vLLM role of a stack, by role name (`models`: the config.json files known by model id)."""
    return {
        name: role_facts(role, version, root, models, stack.gpu(name))
        for name, role in stack.roles.items()
        if role.is_vllm
    }


def capability_locations(f: RoleFacts, cap: str) -> list[Location]:
    """Where a derived capability of a role comes from (for findings that name both sides)."""
    if cap in ("kv-connector", "pd-disaggregation"):
        return [loc for c in f.connectors for loc in c.locations]
    if cap == "kv-offload":
        if f.implied is not None:
            return list(f.implied.locations)
        return [loc for c in f.connectors if c.name in OFFLOAD_CONNECTORS for loc in c.locations]
    if cap == "replayssm":
        return f.loc("serve", "use_replayssm")
    if cap == "speculative-decoding":
        return f.locs("serve", "speculative_config")
    if cap == "prefix-caching":
        return f.loc("serve", "enable_prefix_caching")
    if cap == "hybrid-model":
        return list(f.model.locations)
    return []
