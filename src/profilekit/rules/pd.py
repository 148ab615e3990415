"""Prefill/decode (P/D) pair rules: what both sides of a disaggregated deployment must agree on.

vLLM checks none of these before start-up; a mismatch fails the NIXL handshake or, worse, runs and
transfers nothing. Sources: reference/vllm-facts.md section 7 (vLLM `docs/features/nixl_connector_usage.md`,
`nixl_connector_compatibility.md`, vllm-project/vllm#11490, #20965, #43807, PR #41635, PR #55693,
ai-dynamo/dynamo PR #12821) and reference/launch-examples.md D3.

A stack with two or more vLLM roles is checked as a pair. A single role that holds one side of a pair
(a multi-host deployment renders one role per host) gets at most a warning.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from profilekit.errors import Location, Severity
from profilekit.records import record
from profilekit.rules.engine import Context, Hit, rule, stack_rule
from profilekit.rules.facts import NIXL_CONNECTORS, PD_CONNECTORS, Connector, RoleFacts

DEFAULT_SIDE_CHANNEL_PORT = 5600


def _v(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@record(frozen=True, slots=True)
class Side:
    """One vLLM role's part in P/D: its transfer connector and whether it prefills or decodes."""

    facts: RoleFacts
    connector: Connector
    side: str  # "prefill", "decode", or "both"

    @property
    def name(self) -> str:
        return self.facts.role.name


def pd_connector(f: RoleFacts) -> Connector | None:
    """The connector that moves KV between instances (a MultiConnector child counts)."""
    for c in f.connectors:
        if c.name == "MultiConnector":
            continue
        if c.name in PD_CONNECTORS or c.role in ("kv_producer", "kv_consumer"):
            return c
    return None


def _side(f: RoleFacts, c: Connector) -> str:
    if c.role == "kv_producer":
        return "prefill"
    if c.role == "kv_consumer":
        return "decode"
    name = f.role.name.lower()
    if "prefill" in name:
        return "prefill"
    if "decode" in name:
        return "decode"
    return "both"


def sides(ctx: Context) -> list[Side]:
    out: list[Side] = []
    for f in ctx.facts.values():
        c = pd_connector(f)
        if c is not None:
            out.append(Side(f, c, _side(f, c)))
    return out


def _pairs(ctx: Context) -> tuple[list[Side], list[Side]]:
    """Prefill-capable and decode-capable sides, when the stack holds a pair (two or more P/D roles)."""
    all_sides = sides(ctx)
    if len(all_sides) < 2:
        return [], []
    prefill = [s for s in all_sides if s.side in ("prefill", "both")]
    decode = [s for s in all_sides if s.side in ("decode", "both")]
    return prefill, decode


def _conn_locs(s: Side) -> list[Location]:
    return list(s.connector.locations)


@stack_rule(
    "pd-roles-unpaired",
    Severity.ERROR,
    "a P/D stack without both a kv_producer (prefill) and a kv_consumer (decode) side",
    source="reference/vllm-facts.md 7; vllm-project/vllm#11490",
)
def pd_roles_unpaired(ctx: Context) -> Iterable[Hit]:
    all_sides = sides(ctx)
    if len(all_sides) < 2:
        return []
    roles = {s.connector.role for s in all_sides}
    for missing, present in (("kv_consumer", "kv_producer"), ("kv_producer", "kv_consumer")):
        if present in roles and missing not in roles and "kv_both" not in roles:
            names = ", ".join(f"{s.name} ({s.connector.role})" for s in all_sides)
            return [
                Hit(
                    "pd-roles-unpaired",
                    f"every P/D role of this stack is a {present}, none a {missing}: {names}; KV is never "
                    "transferred (vllm-project/vllm#11490)",
                    [loc for s in all_sides for loc in _conn_locs(s)],
                    'give prefill roles kv_role = "kv_producer" and decode roles kv_role = "kv_consumer"',
                )
            ]
    return []


@stack_rule(
    "pd-connector-mismatch",
    Severity.ERROR,
    "prefill and decode use different KV connectors",
    source="reference/vllm-facts.md 7",
)
def pd_connector_mismatch(ctx: Context) -> Iterable[Hit]:
    all_sides = sides(ctx)
    names = {s.connector.name for s in all_sides}
    if len(all_sides) < 2 or len(names) < 2:
        return []
    listed = ", ".join(f"{s.name} uses {s.connector.name}" for s in all_sides)
    return [
        Hit(
            "pd-connector-mismatch",
            f"the P/D roles use different KV connectors ({listed}); both sides of a pair need the same one",
            [loc for s in all_sides for loc in _conn_locs(s)],
            "use one connector (e.g. NixlConnector) on every prefill and decode role",
        )
    ]


@rule(
    "nixl-kv-both-deprecated",
    Severity.WARNING,
    'kv_role = "kv_both" with a NIXL connector',
    source="vllm-project/vllm#43807, PR #55693",
)
def nixl_kv_both(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    c = pd_connector(f)
    if c is None or c.name not in NIXL_CONNECTORS or c.role != "kv_both":
        return []
    return [
        Hit(
            "nixl-kv-both-deprecated",
            f'{c.name} with kv_role = "kv_both" is deprecated: vLLM says "Please set kv_role=\'kv_producer\' for '
            "prefill instances and kv_role='kv_consumer' for decode instances\"",
            list(c.locations),
            'set kv_role = "kv_producer" on the prefill role and "kv_consumer" on the decode role',
            role=f.role.name,
        )
    ]


def _mismatch(
    ctx: Context, rule_id: str, *, label: str, value_of: Any, locs_of: Any, why: str, fix: str
) -> Iterable[Hit]:
    all_sides = sides(ctx)
    if len(all_sides) < 2:
        return []
    values = {s.name: value_of(s.facts) for s in all_sides}
    if len({json.dumps(v, sort_keys=True, default=str) for v in values.values()}) < 2:
        return []

    def shown(side: Side) -> str:
        value = values[side.name]
        written = bool(locs_of(side.facts))
        if value is None:
            return f"{side.name} (vLLM default)"
        return f"{side.name} {_v(value)}" + ("" if written else " (vLLM default)")

    listed = ", ".join(shown(side) for side in all_sides)
    locs = [loc for s in all_sides for loc in locs_of(s.facts)]
    return [Hit(rule_id, f"the P/D roles differ in {label}: {listed}; {why}", locs, fix)]


@stack_rule(
    "pd-model-mismatch",
    Severity.ERROR,
    "prefill and decode serve different models",
    source="reference/vllm-facts.md 7 (NIXL compatibility hash)",
)
def pd_model_mismatch(ctx: Context) -> Iterable[Hit]:
    return _mismatch(
        ctx,
        "pd-model-mismatch",
        label="serve.model",
        value_of=lambda f: f.serve.get("model"),
        locs_of=lambda f: f.loc("serve", "model"),
        why="the KV handshake requires the same model on both sides",
        fix="serve the same model on every prefill and decode role",
    )


@stack_rule(
    "pd-kv-cache-dtype-mismatch",
    Severity.ERROR,
    "prefill and decode use different kv_cache_dtype",
    source="reference/vllm-facts.md 7 (NIXL compatibility hash)",
)
def pd_kv_cache_dtype(ctx: Context) -> Iterable[Hit]:
    return _mismatch(
        ctx,
        "pd-kv-cache-dtype-mismatch",
        label="kv_cache_dtype",
        value_of=lambda f: f.serve.get("kv_cache_dtype", "auto"),
        locs_of=lambda f: f.loc("serve", "kv_cache_dtype"),
        why="the NIXL handshake rejects peers whose KV cache dtype differs",
        fix="set one kv_cache_dtype at the top level of the stack, not per role",
    )


@stack_rule(
    "pd-block-size-mismatch",
    Severity.ERROR,
    "prefill and decode use different block_size",
    source="reference/vllm-facts.md 7 (NIXL compatibility hash)",
)
def pd_block_size(ctx: Context) -> Iterable[Hit]:
    return _mismatch(
        ctx,
        "pd-block-size-mismatch",
        label="block_size",
        value_of=lambda f: f.serve.get("block_size"),
        locs_of=lambda f: f.loc("serve", "block_size"),
        why="the NIXL handshake rejects peers whose block size differs",
        fix="set one block_size at the top level of the stack, not per role",
    )


@stack_rule(
    "pd-speculative-mismatch",
    Severity.ERROR,
    "prefill and decode use different speculative decoding",
    source="reference/vllm-facts.md 7 (NIXL compatibility hash covers the speculative method)",
)
def pd_speculative(ctx: Context) -> Iterable[Hit]:
    return _mismatch(
        ctx,
        "pd-speculative-mismatch",
        label="speculative_config",
        value_of=lambda f: f.serve.get("speculative_config"),
        locs_of=lambda f: f.locs("serve", "speculative_config"),
        why="both sides must use the same speculative method and draft configuration",
        fix="set speculative_config at the top level of the stack, not per role",
    )


def _tp(f: RoleFacts) -> int:
    tp = f.serve.get("tensor_parallel_size", 1)
    return tp if isinstance(tp, int) and not isinstance(tp, bool) else 1


@stack_rule(
    "pd-tensor-parallel",
    Severity.ERROR,
    "decode tensor parallelism below prefill's (or unequal, for hybrid models)",
    source="vLLM nixl_connector_compatibility.md; llm-d guides (reference/vllm-facts.md 7)",
)
def pd_tensor_parallel(ctx: Context) -> Iterable[Hit]:
    all_sides = sides(ctx)
    prefill = [s for s in all_sides if s.side == "prefill"]
    decode = [s for s in all_sides if s.side == "decode"]
    hits: list[Hit] = []
    for p in prefill:
        for d in decode:
            tp_p, tp_d = _tp(p.facts), _tp(d.facts)
            hybrid = bool(p.facts.model.hybrid or d.facts.model.hybrid)
            if hybrid and tp_p != tp_d:
                why = "hybrid (Mamba) models need equal tensor parallelism on both sides"
                fix = f"set the same tensor_parallel_size on {p.name} and {d.name}"
            elif tp_d < tp_p:
                why = "NIXL needs decode tensor parallelism >= prefill's"
                fix = f"raise tensor_parallel_size of {d.name} to at least {tp_p}, or lower {p.name}'s"
            else:
                continue
            hits.append(
                Hit(
                    "pd-tensor-parallel",
                    f"prefill role {p.name} has tensor_parallel_size = {tp_p}, decode role {d.name} has {tp_d}; {why}",
                    [
                        *p.facts.loc("serve", "tensor_parallel_size"),
                        *d.facts.loc("serve", "tensor_parallel_size"),
                        *_conn_locs(p),
                        *_conn_locs(d),
                    ],
                    fix,
                )
            )
    return hits


def _port(f: RoleFacts) -> int | None:
    raw = f.env_value("VLLM_NIXL_SIDE_CHANNEL_PORT")
    if raw is None:
        return DEFAULT_SIDE_CHANNEL_PORT
    try:
        return int(raw)
    except ValueError:
        return None


def _dp(f: RoleFacts) -> int:
    dp = f.serve.get("data_parallel_size", 1)
    return dp if isinstance(dp, int) and not isinstance(dp, bool) and dp > 0 else 1


@stack_rule(
    "pd-side-channel-port",
    Severity.ERROR,
    "two NIXL roles on one host share VLLM_NIXL_SIDE_CHANNEL_PORT",
    source="vllm-project/vllm#20965; v1/nixl base_scheduler (port = base + data-parallel rank)",
)
def pd_side_channel_port(ctx: Context) -> Iterable[Hit]:
    nixl = [s for s in sides(ctx) if s.connector.name in NIXL_CONNECTORS]
    hits: list[Hit] = []
    for i, a in enumerate(nixl):
        for b in nixl[i + 1 :]:
            host_a = a.facts.env_value("VLLM_NIXL_SIDE_CHANNEL_HOST")
            host_b = b.facts.env_value("VLLM_NIXL_SIDE_CHANNEL_HOST")
            if host_a is not None and host_b is not None and host_a != host_b:
                continue  # different hosts: the same port is fine (launch-examples D3b)
            pa, pb = _port(a.facts), _port(b.facts)
            if pa is None or pb is None:
                continue
            range_a = set(range(pa, pa + _dp(a.facts)))
            range_b = set(range(pb, pb + _dp(b.facts)))
            shared = sorted(range_a & range_b)
            if not shared:
                continue

            def shown(s: Side, port: int) -> str:
                written = s.facts.env_value("VLLM_NIXL_SIDE_CHANNEL_PORT")
                return f"{s.name} {port}" + ("" if written is not None else " (default)")

            hits.append(
                Hit(
                    "pd-side-channel-port",
                    f"roles {a.name} and {b.name} run on one host with the same NIXL side-channel port "
                    f"({shown(a, pa)}, {shown(b, pb)}; shared: {', '.join(map(str, shared))}); the second "
                    "instance cannot bind it (vllm-project/vllm#20965)",
                    [
                        *a.facts.loc("env", "VLLM_NIXL_SIDE_CHANNEL_PORT"),
                        *b.facts.loc("env", "VLLM_NIXL_SIDE_CHANNEL_PORT"),
                        *_conn_locs(a),
                        *_conn_locs(b),
                    ],
                    f"give each role its own VLLM_NIXL_SIDE_CHANNEL_PORT (e.g. {pa} and "
                    f"{max(range_a) + 1}); with data parallelism each role uses port + rank",
                )
            )
    return hits


@rule(
    "pd-hybrid-conv-layout",
    Severity.ERROR,
    "a hybrid (Mamba) model in P/D without VLLM_SSM_CONV_STATE_LAYOUT=DS (a warning for one role of a pair)",
    source="vllm-project/vllm PR #41635 (3-read Mamba conv transfer requires DS conv state layout)",
)
def pd_hybrid_conv_layout(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    c = pd_connector(f)
    if c is None or not f.model.hybrid:
        return []
    layout = f.env_value("VLLM_SSM_CONV_STATE_LAYOUT")
    if layout == "DS":
        return []
    pair = len(sides(ctx)) >= 2
    now = f"VLLM_SSM_CONV_STATE_LAYOUT = {_v(layout)}" if layout is not None else "VLLM_SSM_CONV_STATE_LAYOUT unset"
    return [
        Hit(
            "pd-hybrid-conv-layout",
            f"{f.model.architecture} is a hybrid (Mamba) model transferring KV over {c.name} with {now}; "
            'P/D of hybrid models needs it set to "DS" ("3-read Mamba conv transfer requires DS conv state layout")',
            [*f.loc("env", "VLLM_SSM_CONV_STATE_LAYOUT"), *c.locations, *f.model.locations],
            'set env VLLM_SSM_CONV_STATE_LAYOUT = "DS" on every prefill and decode role',
            role=f.role.name,
            severity=None if pair else Severity.WARNING,
        )
    ]
