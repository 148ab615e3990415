"""Validators of the profiler, encoder-cache transfer, Engram and auxiliary-output configs.

Sources: `vllm/config/profiler.py` `ProfilerConfig._validate_profiler_config`, `vllm/config/ec_transfer.py`
`ECTransferConfig.__post_init__` and `vllm/config/engram.py` `EngramConfig._validate_shared_memory` (0.30.0 and
later), all run while the argument parser reads `--profiler-config` / `--ec-transfer-config` /
`--engram-config` (`parse_dataclass`: "1 validation error for ...", after the field constraints);
`vllm/config/vllm.py` `VllmConfig._verify_aux_output_compatibility` (0.31.0 and later, late in `__post_init__`).
The profiler checks grow by release: proton options from 0.28.0 (`proton_graph_attribution` from 0.30.0),
`torch_profiler_activities` from 0.31.0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_ARGPARSE, STAGE_POST_INIT, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import serve_int, shape, shown
from profilekit.rules.models import ARCHITECTURES
from profilekit.vllm.versions import at_least

PARSE_VALIDATOR: Order = (STAGE_ARGPARSE, 0, 1)  # after the field constraints rules/options.py reports at (0, 0)
ROUTED_EXPERTS_EARLY = -15  # before 0.31.0: right after verify_with_parallel_config (rules/order.py, -40..-20)
AUX_OUTPUT = 15  # VllmConfig.__post_init__: after the model runner checks (8), before the KV transfer checks (20)
# transformers' config classes that give a model experts when its config.json names none
# (NemotronHConfig: n_routed_experts = 8), so vLLM counts it as MoE
EXPERTS_BY_DEFAULT = frozenset({"NemotronHForCausalLM"})
EC_ROLES = ("ec_producer", "ec_both", "ec_consumer")
POOLING = frozenset({"pooling", "embed", "classify", "score", "reward"})


def _is_uri(path: str) -> bool:
    return "://" in path


def _proton_options(cfg: dict[str, Any], version: str) -> list[str]:
    defaults: list[tuple[str, Any]] = [
        ("proton_profiler_dir", ""),
        ("proton_context", "shadow"),
        ("proton_data", "tree"),
        ("proton_backend", None),
        ("proton_mode", None),
        ("proton_hook", None),
        ("proton_output_format", None),
    ]
    if at_least(version, "0.30.0"):
        defaults.append(("proton_graph_attribution", False))
    return [name for name, default in defaults if cfg.get(name, default) != default]


def _proton_output_failure(cfg: dict[str, Any], version: str) -> str | None:
    """The proton profiler's data and output-format checks (0.28.0; graph attribution from 0.30.0)."""
    data = cfg.get("proton_data", "tree")
    if at_least(version, "0.30.0") and cfg.get("proton_graph_attribution"):
        if data != "tree":
            return "proton_graph_attribution requires proton_data='tree'"
        mode = cfg.get("proton_mode")
        if isinstance(mode, str) and mode.split(":", 1)[0].lower() == "periodic_flushing":
            return "proton_graph_attribution is incompatible with periodic_flushing: both manage Proton data phases."
    output_format = cfg.get("proton_output_format")
    if output_format == "chrome_trace" and data != "trace":
        return "chrome_trace output requires proton_data='trace'"
    if output_format in ("hatchet", "hatchet_msgpack") and data != "tree":
        return f"{output_format} output requires proton_data='tree'"
    return None


def profiler_failure(cfg: dict[str, Any], version: str) -> str | None:
    """`ProfilerConfig._validate_profiler_config`'s first failure; None when it passes or profilekit cannot tell."""
    profiler = cfg.get("profiler")
    if at_least(version, "0.31.0") and cfg.get("torch_profiler_activities") is not None:
        activities = cfg["torch_profiler_activities"]
        if profiler != "torch":
            return "torch_profiler_activities is only applicable when profiler is set to 'torch'"
        if isinstance(activities, list) and len(activities) != len({str(a) for a in activities}):
            return "torch_profiler_activities must not contain duplicates"
    torch_dir = cfg.get("torch_profiler_dir", "")
    if torch_dir and profiler != "torch":
        return "torch_profiler_dir is only applicable when profiler is set to 'torch'"
    if profiler == "torch" and not torch_dir:
        return "torch_profiler_dir must be set when profiler is 'torch'"
    if at_least(version, "0.28.0"):
        proton = _proton_options(cfg, version)
        if profiler != "proton" and proton:
            return f"{', '.join(proton)} only applicable when profiler is set to 'proton'"
        proton_dir = cfg.get("proton_profiler_dir", "")
        if profiler == "proton" and not proton_dir:
            return "proton_profiler_dir must be set when profiler is 'proton'"
        if isinstance(proton_dir, str) and proton_dir and _is_uri(proton_dir):
            return "proton_profiler_dir must be a local directory"
        if profiler == "proton":
            return _proton_output_failure(cfg, version)
    if cfg.get("capture_torch_profiler") and profiler != "torch":
        return "capture_torch_profiler is only applicable when profiler is set to 'torch'"
    return None


def _profiler_fix(message: str) -> str:
    if "proton_data=" in message:
        return "set profiler_config.proton_data to what the output format or graph attribution needs"
    if "periodic_flushing" in message:
        return "drop proton_graph_attribution or choose a proton_mode other than periodic_flushing"
    return "set profiler_config.profiler to the profiler these options belong to, or remove them"


@rule(
    "profiler-config",
    Severity.ERROR,
    "profiler_config options for a profiler it does not select, or proton data that its output does not fit",
    source="vllm/config/profiler.py ProfilerConfig._validate_profiler_config",
)
def profiler_config(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("profiler_config")
    if not isinstance(cfg, dict):
        return []
    message = profiler_failure(cfg, f.version)
    if message is None:
        return []
    profiler = f"profiler = {shown(cfg['profiler'])}" if "profiler" in cfg else "no profiler"
    return [
        Hit(
            "profiler-config",
            f"profiler_config with {profiler}; vLLM {f.version} refuses to start: "
            f'"1 validation error for ProfilerConfig / {message}"',
            f.locs("serve", "profiler_config"),  # its keys: argparse converts the table at its place in the argv
            _profiler_fix(message),
            role=f.role.name,
            order=PARSE_VALIDATOR,
        )
    ]


@rule(
    "ec-role-missing",
    Severity.ERROR,
    "ec_transfer_config with an ec_connector but no ec_role",
    source="vllm/config/ec_transfer.py ECTransferConfig.__post_init__",
)
def ec_role_missing(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("ec_transfer_config")
    if not isinstance(cfg, dict) or cfg.get("ec_connector") is None or cfg.get("ec_role") is not None:
        return []
    message = f"Please specify ec_role when ec_connector is set, supported roles are {EC_ROLES}"
    return [
        Hit(
            "ec-role-missing",
            f"ec_transfer_config.ec_connector = {shown(cfg['ec_connector'])} without an ec_role; vLLM {f.version} "
            f'refuses to start: "1 validation error for ECTransferConfig / {message}"',
            f.loc("serve", "ec_transfer_config", "ec_connector") or f.locs("serve", "ec_transfer_config"),
            'set ec_transfer_config.ec_role = "ec_producer", "ec_consumer" or "ec_both"',
            role=f.role.name,
            order=PARSE_VALIDATOR,
        )
    ]


def engram_failure(cfg: dict[str, Any], version: str) -> tuple[str, tuple[str, ...]] | None:
    """`EngramConfig._validate_shared_memory`'s first failure and the keys it names; None when it passes.

    0.30.0 checks dp_shared_memory against cpu_offload; 0.31.0 added use_thp. A value that is not a bool fails
    the field first (invalid-value), so the validator never runs.
    """
    keys = ("cpu_offload", "dp_shared_memory", "use_thp")
    if any(k in cfg and not isinstance(cfg[k], bool) for k in keys):
        return None
    offload, shared, thp = cfg.get("cpu_offload", True), cfg.get("dp_shared_memory"), cfg.get("use_thp", False)
    if shared and not offload:
        return "dp_shared_memory requires cpu_offload=True", ("dp_shared_memory", "cpu_offload")
    if at_least(version, "0.31.0") and thp and (not offload or shared):
        return "use_thp requires cpu_offload=True and dp_shared_memory=False", (
            "use_thp",
            "cpu_offload",
            "dp_shared_memory",
        )
    return None


@rule(
    "engram-config",
    Severity.ERROR,
    "engram_config sharing or huge pages without CPU offload, or huge pages with shared memory",
    releases=">=0.30.0",
    source="vllm/config/engram.py EngramConfig._validate_shared_memory",
)
def engram_config(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("engram_config")
    if not isinstance(cfg, dict):
        return []
    failure = engram_failure(cfg, f.version)
    if failure is None:
        return []
    message, keys = failure
    written = ", ".join(f"{k} = {shown(cfg[k])}" for k in keys if k in cfg)
    return [
        Hit(
            "engram-config",
            f"engram_config with {written}; vLLM {f.version} refuses to start: "
            f'"1 validation error for EngramConfig / {message}"',
            f.locs("serve", "engram_config"),  # its keys: argparse converts the table at its place in the argv
            "set engram_config.cpu_offload = true; use_thp only for private tables (dp_shared_memory = false)"
            if keys[0] == "use_thp"
            else "set engram_config.cpu_offload = true, or remove dp_shared_memory",
            role=f.role.name,
            order=PARSE_VALIDATOR,
        )
    ]


EC_PRODUCER_ONLY = -100  # VllmConfig.__post_init__: _resolve_mm_encoder_only, its first step (0.29.0 and later)


def _text_only(f: RoleFacts) -> bool:
    """A language-only model: an architecture profilekit knows whose name says causal LM only."""
    arch = f.model.architecture
    return arch is not None and arch in ARCHITECTURES and arch.endswith("ForCausalLM")


@rule(
    "ec-producer-multimodal",
    Severity.ERROR,
    "an encoder-cache producer-only role (ec_role = ec_producer) for a language-only model",
    releases=">=0.29.0",
    source="vllm/config/vllm.py VllmConfig._resolve_mm_encoder_only",
)
def ec_producer_multimodal(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    cfg = f.serve.get("ec_transfer_config")
    if not isinstance(cfg, dict) or cfg.get("ec_connector") is None or cfg.get("ec_role") != "ec_producer":
        return []
    if not _text_only(f):
        return []
    return [
        Hit(
            "ec-producer-multimodal",
            f'ec_transfer_config.ec_role = "ec_producer" for a {f.model.architecture} model; vLLM {f.version} refuses '
            'to start: "An EC producer-only instance requires a multimodal model."',
            [*(f.loc("serve", "ec_transfer_config", "ec_role") or f.locs("serve", "ec_transfer_config"))],
            'serve a multimodal model on the encoder role, or set ec_role = "ec_both"',
            role=f.role.name,
            order=(STAGE_POST_INIT, EC_PRODUCER_ONLY),
        )
    ]


def _aux_enabled(f: RoleFacts) -> bool:
    aux = f.serve.get("aux_output_config")
    return f.serve.get("enable_return_routed_experts") is True or (
        isinstance(aux, dict) and aux.get("enable_return_routed_experts") is True
    )


def aux_output_failure(f: RoleFacts) -> str | None:
    """`_verify_aux_output_compatibility`'s first failure; None when it passes or profilekit cannot tell."""
    if f.v2_model_runner is None:
        return None
    if not f.v2_model_runner:
        return "AuxOutput Connector requires Model Runner V2; set VLLM_USE_V2_MODEL_RUNNER=1."
    if f.serve.get("runner") in POOLING or f.serve.get("convert") in POOLING:
        return "AuxOutput Connector only supports generate runners."
    s = shape(f)
    if s is None:
        return None
    if not s.moe and f.model.architecture not in EXPERTS_BY_DEFAULT:
        return "AuxOutput Connector only supports MoE models."
    if f.prefix_caching is None:
        return None
    if not f.prefix_caching:
        return "AuxOutput Connector requires prefix caching."
    spec = f.serve.get("speculative_config")
    if f.num_spec != 0 and isinstance(spec, dict) and spec.get("enable_adaptive_verification") is True:
        return "--enable-return-routed-experts is incompatible with adaptive speculative verification."
    if (serve_int(f, "pipeline_parallel_size", 1) or 1) > 1:
        return "--enable-return-routed-experts is incompatible with pipeline parallelism (PP > 1)."
    dcp = serve_int(f, "decode_context_parallel_size", 1) or 1
    pcp = serve_int(f, "prefill_context_parallel_size", 1) or 1
    if dcp > 1 or pcp > 1:
        return "--enable-return-routed-experts is incompatible with context parallelism (DCP/PCP > 1)."
    connector = _pd_aux_connector(f)
    if connector is not None:
        return f"--enable-return-routed-experts is incompatible with {connector}; PD auxiliary output is not supported."
    return None


# _verify_aux_output_compatibility's P/D connectors, in the order vLLM asks `KVTransferConfig.has_connector`
AUX_PD_CONNECTORS = ("NixlConnector", "NixlPullConnector", "NixlPushConnector", "MoRIIOConnector", "MooncakeConnector")


def _pd_aux_connector(f: RoleFacts) -> str | None:
    """The first of `AUX_PD_CONNECTORS` the role's kv_transfer_config names, directly or as a MultiConnector child."""
    eff = f.effective  # after _post_init_kv_transfer_config: kv_offloading_size replaces an explicit connector
    names = {eff.name} if eff is not None else set()
    if eff is not None and eff is f.explicit and eff.name == "MultiConnector":
        names |= {c.name for c in f.children}
    return next((name for name in AUX_PD_CONNECTORS if name in names), None)


KV_ROLES = ("kv_producer", "kv_consumer", "kv_both")


def routed_experts_failure(f: RoleFacts) -> str | None:
    """The routed-experts checks early in `VllmConfig.__post_init__` before 0.31.0 (CP from 0.28.0)."""
    prefix = "--enable-return-routed-experts is incompatible with"
    if (serve_int(f, "pipeline_parallel_size", 1) or 1) > 1:
        return f"{prefix} pipeline parallelism (PP > 1)."
    dcp = serve_int(f, "decode_context_parallel_size", 1) or 1
    pcp = serve_int(f, "prefill_context_parallel_size", 1) or 1
    if at_least(f.version, "0.28.0") and (dcp > 1 or pcp > 1):
        return f"{prefix} context parallelism (DCP > 1 or PCP > 1)."
    ktc = f.serve.get("kv_transfer_config")
    if isinstance(ktc, dict) and ktc.get("kv_connector") is not None and ktc.get("kv_role") in KV_ROLES:
        return f"{prefix} KV connectors (PD disaggregation, KV cache offload)."
    return None


@rule(
    "aux-output-compatibility",
    Severity.ERROR,
    "enable_return_routed_experts (AuxOutput) with a model or settings it does not support",
    source="vllm/config/vllm.py VllmConfig._verify_aux_output_compatibility (0.31.0+), __post_init__ before",
)
def aux_output_compatibility(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if not _aux_enabled(f):
        return []
    if not at_least(f.version, "0.31.0"):
        early = routed_experts_failure(f)
        if early is None:
            return []
        return [
            Hit(
                "aux-output-compatibility",
                f'enable_return_routed_experts = true; vLLM {f.version} refuses to start: "{early}"',
                [
                    *f.loc("serve", "enable_return_routed_experts"),
                    *f.loc("serve", "pipeline_parallel_size"),
                    *f.loc("serve", "decode_context_parallel_size"),
                    *f.loc("serve", "prefill_context_parallel_size"),
                    *f.loc("serve", "kv_transfer_config"),
                ],
                "remove enable_return_routed_experts, or what vLLM names",
                role=f.role.name,
                order=(STAGE_POST_INIT, ROUTED_EXPERTS_EARLY),
            )
        ]
    message = aux_output_failure(f)
    if message is None:
        return []
    locs = f.loc("serve", "enable_return_routed_experts") or f.loc("serve", "aux_output_config")
    return [
        Hit(
            "aux-output-compatibility",
            f"enable_return_routed_experts = true for a {f.model.architecture} model; vLLM {f.version} refuses to "
            f'start: "{message}"',
            [*locs, *(f.loc("serve", "kv_transfer_config") if "PD auxiliary" in message else f.model.locations)],
            "remove enable_return_routed_experts, or change what vLLM names",
            role=f.role.name,
            order=(STAGE_POST_INIT, AUX_OUTPUT),
        )
    ]


@rule(
    "lora-max-cpu-loras",
    Severity.ERROR,
    "max_cpu_loras below max_loras",
    source="vllm/config/lora.py LoRAConfig._validate_lora_config",
)
def lora_max_cpu_loras(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.serve.get("enable_lora") is not True:
        return []  # vLLM builds LoRAConfig only with enable_lora
    cpu_loras, max_loras = serve_int(f, "max_cpu_loras"), serve_int(f, "max_loras", 1)
    if cpu_loras is None or max_loras is None or max_loras < 1 or cpu_loras >= max_loras:
        return []
    return [
        Hit(
            "lora-max-cpu-loras",
            f"max_cpu_loras = {cpu_loras} with max_loras = {max_loras}; vLLM {f.version} refuses to start: "
            f'"max_cpu_loras ({cpu_loras}) must be >= max_loras ({max_loras})."',
            [*f.loc("serve", "max_cpu_loras"), *f.loc("serve", "max_loras")],
            f"raise max_cpu_loras to at least {max_loras}, or leave it out (it defaults to max_loras)",
            role=f.role.name,
            order=order.built("LoRAConfig", f.version),
        )
    ]
