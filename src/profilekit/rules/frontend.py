"""The serve front end's own checks: `validate_parsed_serve_args`, which `vllm serve` runs right after the
argument parser and before `create_engine_config()`, and the GPU list `--device-ids`.

Sources: `vllm/entrypoints/openai/cli_args.py` (0.27.0-0.28.0), `vllm/entrypoints/launchers/cli_args.py`
(0.29.0-0.32.0) and `vllm/entrypoints/common/cli_args.py` (0.33.0) `validate_parsed_serve_args`, with
`validate_grpc_port_arg` (0.32.0 and later) and `dp_supervisor.validate_multi_port_external_lb_args`;
`vllm/engine/arg_utils.py` `EngineArgs._resolve_device_ids`, evaluated while ParallelConfig is built: duplicates,
indexes mixed with UUIDs, and indexes past the GPUs the role's `CUDA_VISIBLE_DEVICES` lists (CUDA and ROCm both
read that variable; the CPU platform, the oracle's, skips it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Location, Severity
from profilekit.rules import order
from profilekit.rules.engine import STAGE_CONFIG_OBJECTS, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import serve_int, shown

# validate_parsed_serve_args runs after the whole parser (STAGE_ARGPARSE) and before create_engine_config, whose
# first check is validate_environ (STAGE_CONFIG_OBJECTS, -1, rules/env.py)
SERVE_ARGS = -100
STEP_GRPC_PORT = 10
STEP_REASONING_EFFORT_MAP = 15
STEP_AUTO_TOOL = 20
STEP_LOG_OUTPUTS = 30
STEP_SSE = 40
STEP_PER_REQUEST_METRICS = 50
STEP_MULTI_PORT_LB = 60
DEVICE_IDS_STEP = 100  # after the data-parallel launch block, right before ParallelConfig

MSG_AUTO_TOOL = "Error: --enable-auto-tool-choice requires --tool-call-parser"
MSG_LOG_OUTPUTS = "Error: --enable-log-outputs requires --enable-log-requests"
MSG_SSE = "Error: --sse-keep-alive-interval must be a non-negative integer (0 disables keep-alive comments)."
MSG_PER_REQUEST_METRICS = (
    "Error: --enable-per-request-metrics requires engine statistics logging; remove --disable-log-stats to "
    "enable per-request metrics."
)


def _serve_args(step: int) -> Order:
    return (STAGE_CONFIG_OBJECTS, SERVE_ARGS, step)


def _hit(f: RoleFacts, rule_id: str, what: str, message: str, locs: list[Location], *, fix: str, at: Order) -> Hit:
    return Hit(
        rule_id, f'{what}; vLLM {f.version} refuses to start: "{message}"', locs, fix, role=f.role.name, order=at
    )


@rule(
    "auto-tool-choice-parser",
    Severity.ERROR,
    "enable_auto_tool_choice without a tool_call_parser",
    source="vllm/entrypoints/*/cli_args.py validate_parsed_serve_args",
)
def auto_tool_choice_parser(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if not f.serve.get("enable_auto_tool_choice") or f.serve.get("tool_call_parser"):
        return []
    return [
        _hit(
            f,
            "auto-tool-choice-parser",
            "enable_auto_tool_choice = true without a tool_call_parser",
            MSG_AUTO_TOOL,
            [*f.loc("serve", "enable_auto_tool_choice"), *f.loc("serve", "tool_call_parser")],
            fix="set tool_call_parser to the parser of the model's tool-call format, or remove enable_auto_tool_choice",
            at=_serve_args(STEP_AUTO_TOOL),
        )
    ]


@rule(
    "log-outputs-requests",
    Severity.ERROR,
    "enable_log_outputs without enable_log_requests",
    source="vllm/entrypoints/*/cli_args.py validate_parsed_serve_args",
)
def log_outputs_requests(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if not f.serve.get("enable_log_outputs") or f.serve.get("enable_log_requests"):
        return []
    return [
        _hit(
            f,
            "log-outputs-requests",
            "enable_log_outputs = true without enable_log_requests",
            MSG_LOG_OUTPUTS,
            [*f.loc("serve", "enable_log_outputs"), *f.loc("serve", "enable_log_requests")],
            fix="set enable_log_requests = true, or remove enable_log_outputs",
            at=_serve_args(STEP_LOG_OUTPUTS),
        )
    ]


@rule(
    "sse-keep-alive-interval",
    Severity.ERROR,
    "a negative sse_keep_alive_interval",
    releases=">=0.29.0",
    source="vllm/entrypoints/*/cli_args.py validate_parsed_serve_args",
)
def sse_keep_alive_interval(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    interval = serve_int(f, "sse_keep_alive_interval")
    if interval is None or interval >= 0:
        return []
    return [
        _hit(
            f,
            "sse-keep-alive-interval",
            f"sse_keep_alive_interval = {interval}",
            MSG_SSE,
            f.loc("serve", "sse_keep_alive_interval"),
            fix="set sse_keep_alive_interval to 0 (no keep-alive comments) or a positive number of seconds",
            at=_serve_args(STEP_SSE),
        )
    ]


@rule(
    "per-request-metrics-log-stats",
    Severity.ERROR,
    "enable_per_request_metrics with disable_log_stats",
    source="vllm/entrypoints/*/cli_args.py validate_parsed_serve_args",
)
def per_request_metrics_log_stats(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if not f.serve.get("enable_per_request_metrics") or not f.serve.get("disable_log_stats"):
        return []
    return [
        _hit(
            f,
            "per-request-metrics-log-stats",
            "enable_per_request_metrics = true with disable_log_stats = true",
            MSG_PER_REQUEST_METRICS,
            [*f.loc("serve", "enable_per_request_metrics"), *f.loc("serve", "disable_log_stats")],
            fix="remove disable_log_stats, or remove enable_per_request_metrics",
            at=_serve_args(STEP_PER_REQUEST_METRICS),
        )
    ]


def _rust_frontend(f: RoleFacts) -> bool | None:
    raw = f.env.get("VLLM_USE_RUST_FRONTEND")
    if raw is None:
        return False
    try:
        return bool(int(str(raw)))
    except ValueError:
        return None


def _grpc_port_failure(f: RoleFacts) -> tuple[str, str, list[str]] | None:
    """`validate_grpc_port_arg`: (what, vLLM's message, keys) of its first failure."""
    port = serve_int(f, "grpc_port")
    if "grpc_port" not in f.serve or f.serve.get("grpc_port") is None or port is None:
        return None
    if f.serve.get("grpc"):
        return (
            "grpc = true with grpc_port",
            "--grpc and --grpc-port are mutually exclusive. Use --grpc --port for the Python gRPC server, or "
            "VLLM_USE_RUST_FRONTEND=1 with --grpc-port for the Rust frontend.",
            ["grpc", "grpc_port"],
        )
    rust = _rust_frontend(f)
    if rust is None:
        return None
    if not rust:
        return (
            f"grpc_port = {port} without VLLM_USE_RUST_FRONTEND=1",
            "--grpc-port requires VLLM_USE_RUST_FRONTEND=1 vllm serve",
            ["grpc_port"],
        )
    servers = serve_int(f, "api_server_count")
    if f.serve.get("headless") or ("api_server_count" in f.serve and servers is not None and servers <= 0):
        return (
            f"grpc_port = {port} with headless or api_server_count <= 0",
            "--grpc-port requires a Rust frontend; remove --headless and non-positive --api-server-count",
            ["grpc_port", "headless", "api_server_count"],
        )
    if f.serve.get("data_parallel_multi_port_external_lb"):
        return (
            f"grpc_port = {port} with data_parallel_multi_port_external_lb",
            "--grpc-port is incompatible with --data-parallel-multi-port-external-lb: its frontends would share "
            "the same gRPC port",
            ["grpc_port", "data_parallel_multi_port_external_lb"],
        )
    if not 0 <= port <= 65535:
        return (f"grpc_port = {port}", "--grpc-port must be between 0 and 65535", ["grpc_port"])
    http = serve_int(f, "port", 8000)
    if port != 0 and port == http and not f.serve.get("uds"):
        return (
            f"grpc_port = {port} equals port",
            "--grpc-port must differ from --port when HTTP uses TCP",
            ["grpc_port", "port"],
        )
    return None


@rule(
    "grpc-port",
    Severity.ERROR,
    "grpc_port without the Rust frontend, or clashing with grpc, headless, port or the multi-port DP supervisor",
    releases=">=0.32.0",
    source="vllm/entrypoints/*/cli_args.py validate_grpc_port_arg",
)
def grpc_port(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = _grpc_port_failure(f)
    if found is None:
        return []
    what, message, keys = found
    locs = [loc for key in keys for loc in f.loc("serve", key)]
    fix = (
        "set VLLM_USE_RUST_FRONTEND=1 in the role's env, or remove grpc_port"
        if "VLLM_USE_RUST_FRONTEND=1 vllm serve" in message
        else "remove grpc_port, or the option it clashes with"
    )
    return [_hit(f, "grpc-port", what, message, locs, fix=fix, at=_serve_args(STEP_GRPC_PORT))]


REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")  # vllm/renderers/params.py


def _effort_map_failure(value: Any) -> str | None:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        return "Error: --reasoning-effort-map must be a JSON object mapping reasoning efforts to strings."
    unknown = sorted(set(value) - set(REASONING_EFFORTS))
    if unknown:
        return f"Error: --reasoning-effort-map has unknown efforts {unknown}; keys must be one of {list(REASONING_EFFORTS)}."
    return None


@rule(
    "reasoning-effort-map",
    Severity.ERROR,
    "reasoning_effort_map with keys that are not reasoning efforts, or values that are not strings",
    releases=">=0.33.0",
    source="vllm/entrypoints/common/cli_args.py validate_reasoning_effort_map",
)
def reasoning_effort_map(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.serve.get("reasoning_effort_map") is None:
        return []
    message = _effort_map_failure(f.serve["reasoning_effort_map"])
    if message is None:
        return []
    return [
        _hit(
            f,
            "reasoning-effort-map",
            "reasoning_effort_map",
            message,
            f.loc("serve", "reasoning_effort_map"),
            fix=f"map reasoning efforts ({', '.join(REASONING_EFFORTS)}) to the strings the model understands",
            at=_serve_args(STEP_REASONING_EFFORT_MAP),
        )
    ]


def _multi_port_failure(f: RoleFacts) -> tuple[str, list[str]] | None:
    """`validate_multi_port_external_lb_args` up to the divisibility check: (vLLM's message, keys)."""
    s = f.serve
    prefix = "Error: --data-parallel-multi-port-external-lb"
    if s.get("grpc"):
        return f"{prefix} does not support --grpc", ["grpc"]
    if s.get("uds") is not None:
        return f"{prefix} does not support --uds", ["uds"]
    if bool(s.get("ssl_keyfile")) != bool(s.get("ssl_certfile")):
        return "Error: --ssl-keyfile and --ssl-certfile must be provided together", ["ssl_keyfile", "ssl_certfile"]
    if s.get("api_server_count") not in (None, 1):
        return f"{prefix} currently requires --api-server-count=1", ["api_server_count"]
    if s.get("data_parallel_rank") is not None:
        return f"{prefix} manages child --data-parallel-rank values internally", ["data_parallel_rank"]
    if s.get("data_parallel_external_lb") or s.get("data_parallel_hybrid_lb"):
        return (
            f"{prefix} cannot be combined with --data-parallel-external-lb or --data-parallel-hybrid-lb",
            ["data_parallel_external_lb", "data_parallel_hybrid_lb"],
        )
    size = serve_int(f, "data_parallel_size", 1)
    if size is None:
        return None
    if size < 2:
        return f"{prefix} requires --data-parallel-size > 1", ["data_parallel_size"]
    local = serve_int(f, "data_parallel_size_local")
    if "data_parallel_size_local" in s and s["data_parallel_size_local"] is not None and local is None:
        return None
    if local is None or local < 2:
        return f"{prefix} requires --data-parallel-size-local >= 2", ["data_parallel_size_local"]
    if local > size:
        return "Error: --data-parallel-size-local cannot exceed --data-parallel-size", ["data_parallel_size_local"]
    if size % local != 0:
        return "Error: --data-parallel-size must be divisible by --data-parallel-size-local", ["data_parallel_size"]
    return None


@rule(
    "data-parallel-multi-port-lb",
    Severity.ERROR,
    "data_parallel_multi_port_external_lb with options its supervisor cannot launch",
    source="vllm/entrypoints/*/dp_supervisor.py validate_multi_port_external_lb_args",
)
def data_parallel_multi_port_lb(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if not f.serve.get("data_parallel_multi_port_external_lb"):
        return []
    found = _multi_port_failure(f)
    if found is None:
        return []
    message, keys = found
    locs = [*f.loc("serve", "data_parallel_multi_port_external_lb")]
    locs += [loc for key in keys for loc in f.loc("serve", key)]
    return [
        _hit(
            f,
            "data-parallel-multi-port-lb",
            "data_parallel_multi_port_external_lb = true",
            message,
            locs,
            fix="remove data_parallel_multi_port_external_lb, or give it what vLLM asks for",
            at=_serve_args(STEP_MULTI_PORT_LB),
        )
    ]


def device_ids_list(value: Any) -> list[int | str] | None:
    """`--device-ids` as vLLM's parser reads it: a comma-separated string, digits become integers."""
    if isinstance(value, str):
        return [int(p) if p.isdigit() else p for p in (part.strip() for part in value.split(","))]
    if isinstance(value, list) and all(isinstance(v, int | str) and not isinstance(v, bool) for v in value):
        return list(value)
    return None


@rule(
    "device-ids-duplicates",
    Severity.ERROR,
    "device_ids naming one GPU twice",
    source="vllm/engine/arg_utils.py EngineArgs._resolve_device_ids",
)
def device_ids_duplicates(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    ids = device_ids_list(f.serve.get("device_ids"))
    if not ids or len(set(ids)) == len(ids):
        return []
    shown_ids = "[" + ", ".join(repr(i) for i in ids) + "]"
    rank = order.before("ParallelConfig", f.version, DEVICE_IDS_STEP)
    return [
        _hit(
            f,
            "device-ids-duplicates",
            f"device_ids = {shown(f.serve['device_ids'])} names a GPU twice",
            f"--device-ids must not contain duplicates: {shown_ids}",
            f.loc("serve", "device_ids"),
            fix="list each GPU once",
            at=rank,
        )
    ]


@rule(
    "device-ids-mixed",
    Severity.ERROR,
    "device_ids mixing GPU indexes and UUIDs",
    source="vllm/engine/arg_utils.py EngineArgs._resolve_device_ids",
)
def device_ids_mixed(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    ids = device_ids_list(f.serve.get("device_ids"))
    if not ids or len(set(ids)) != len(ids):
        return []  # duplicates fail first (device-ids-duplicates)
    kinds = {isinstance(i, str) for i in ids}
    if kinds != {True, False}:
        return []
    return [
        _hit(
            f,
            "device-ids-mixed",
            f"device_ids = {shown(f.serve['device_ids'])} mixes GPU indexes and UUIDs",
            "--device-ids must not mix integer IDs and UUIDs",
            f.loc("serve", "device_ids"),
            fix="list the GPUs either all by index or all by UUID",
            at=order.before("ParallelConfig", f.version, DEVICE_IDS_STEP + 1),
        )
    ]


@rule(
    "device-ids-out-of-range",
    Severity.ERROR,
    "device_ids indexes past the GPUs CUDA_VISIBLE_DEVICES lists",
    source="vllm/engine/arg_utils.py EngineArgs._resolve_device_ids",
)
def device_ids_out_of_range(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    ids = device_ids_list(f.serve.get("device_ids"))
    cvd = f.env_value("CUDA_VISIBLE_DEVICES")
    if not ids or not cvd or len(set(ids)) != len(ids) or not all(isinstance(i, int) for i in ids):
        return []  # duplicates and mixed lists fail first; UUIDs and an unset list are not indexes into it
    visible = cvd.split(",")
    if not all(part.strip().isdigit() for part in visible):
        return []  # UUIDs in the list: vLLM maps them through the driver, left to vLLM
    for i in ids:
        if isinstance(i, int) and i >= len(visible):
            message = (
                f"--device-ids index {i} is out of range for CUDA_VISIBLE_DEVICES={cvd} ({len(visible)} devices "
                "visible)"
            )
            return [
                _hit(
                    f,
                    "device-ids-out-of-range",
                    f"device_ids = {shown(f.serve['device_ids'])} with CUDA_VISIBLE_DEVICES = {shown(cvd)}",
                    message,
                    [*f.loc("serve", "device_ids"), *f.loc("env", "CUDA_VISIBLE_DEVICES")],
                    fix=f"index the {len(visible)} GPUs CUDA_VISIBLE_DEVICES lists (0 to {len(visible) - 1}), or list "
                    "more there",
                    at=order.before("ParallelConfig", f.version, DEVICE_IDS_STEP + 2),
                )
            ]
    return []


@rule(
    "device-ids-unknown",
    Severity.ERROR,
    "device_ids naming a GPU that is no index and no GPU UUID (on a declared GPU)",
    source="vllm/engine/arg_utils.py EngineArgs._resolve_device_ids; vllm/platforms/cuda.py and interface.py "
    "device_control_id_to_physical_device_id",
)
def device_ids_unknown(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    """A list of names only (vLLM maps every entry; a list mixing indexes fails as device-ids-mixed): on CUDA a
    name is looked up as a GPU UUID through NVML, so one that is not `GPU-...`/`MIG-...` finds nothing; ROCm takes
    indexes only. A UUID-shaped name depends on the host's GPUs and is left to it."""
    ids = device_ids_list(f.serve.get("device_ids"))
    if f.gpu is None or not ids or len(set(ids)) != len(ids) or not all(isinstance(i, str) for i in ids):
        return []
    names = [str(i) for i in ids]
    if f.gpu.platform == "rocm":
        bad = names[0]
        message = f"Non-integer device ID {bad!r} is not supported by rocm."
        fix = f"list the {f.gpu.name} GPUs by index (0, 1, ...): ROCm takes no names"
    else:
        unknown = [n for n in names if not n.startswith(("GPU-", "MIG-"))]
        if not unknown:
            return []
        bad = unknown[0]
        message = f"no GPU has UUID {bad!r} (the driver's lookup by UUID: Not Found)"
        fix = "list the GPUs by index (0, 1, ...) or by the UUIDs `nvidia-smi -L` prints (GPU-...)"
    return [
        _hit(
            f,
            "device-ids-unknown",
            f"device_ids = {shown(f.serve['device_ids'])} names {bad!r}, which is no GPU index and no GPU UUID",
            message,
            f.loc("serve", "device_ids"),
            fix=fix,
            at=order.before("ParallelConfig", f.version, DEVICE_IDS_STEP + 1),
        )
    ]
