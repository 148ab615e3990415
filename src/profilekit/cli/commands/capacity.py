"""`profilekit capacity STACK`: per vLLM role, the weights on one GPU, the KV cache one token costs, the memory
vLLM would leave for the KV cache, and what vLLM would log from it ("Available KV cache memory", "GPU KV cache
size", "Maximum concurrency"), each figure with its inputs; estimates are marked `~` (docs/CAPACITY.md)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from profilekit.capacity.memory import gib
from profilekit.capacity.plan import FITS
from profilekit.cli.common import check_format, open_session, out
from profilekit.errors import EXIT_FINDINGS, EXIT_OK
from profilekit.rules.capacity import role_plan
from profilekit.rules.facts import role_facts

if TYPE_CHECKING:
    from profilekit.capacity.plan import Plan
    from profilekit.compose.model import Stack
    from profilekit.session import Session

FORMATS = ("text", "json")


def stack_plans(session: Session, composed: Stack, names: list[str]) -> list[Plan]:
    """The capacity of each named vLLM role of a composed stack."""
    return [
        role_plan(
            role_facts(composed.roles[name], session.version, session.root, session.models(), composed.gpu(name)),
            session.root,
        )
        for name in names
        if composed.roles[name].is_vllm
    ]


def capacity(*, stack: str, role: str | None, fmt: str) -> int:
    """`profilekit capacity`, as cli/parsers/capacity.py declares it."""
    check_format(fmt, FORMATS)
    session = open_session()
    composed = session.stack(stack)
    plans = stack_plans(session, composed, session.role_names(composed, role))
    if fmt == "json":
        out(
            json.dumps(
                {"stack": composed.spec, "vllm_version": session.version, "roles": [_json(p) for p in plans]}, indent=2
            )
        )
    else:
        out(_text(composed.spec, session.version, plans))
    refused = [p for p in plans if _verdict(p)[0] == "refused"]
    return EXIT_FINDINGS if refused else EXIT_OK


def _verdict(p: Plan) -> tuple[str, str]:
    """("fits" | "tight" | "refused" | "unknown", why): Plan.verdict, the weights and the KV cache refusals as one,
    then a hybrid model's Mamba cache blocks (`Plan.mamba_blocks`) where the KV cache fits."""
    verdict = p.verdict()
    if p.offload is not None and p.offload.exceeds and not verdict.refused:
        return "refused", "the KV cache offloaded to CPU memory exceeds the node's host memory"
    blocks = p.mamba_blocks()
    if blocks is not None and blocks[0].state != FITS and not verdict.refused:
        worse = blocks[0] if blocks[0].refused or verdict.state == FITS else verdict
        return ("refused" if worse.refused else worse.state), worse.why
    return ("refused" if verdict.refused else verdict.state), verdict.why


def _text(spec: str, version: str, plans: list[Plan]) -> str:
    lines = [f"capacity of {spec} on vLLM {version} (~: an estimate; docs/CAPACITY.md has the formulas)"]
    if not plans:
        lines.append("  no vLLM role")
    for p in plans:
        lines += ["", *_role_lines(p)]
    return "\n".join(lines)


def _role_lines(p: Plan) -> list[str]:
    gpu = f"{p.gpu.name} ({gib(p.gpu.memory_bytes)} GiB)" if p.gpu is not None else "no GPU declared"
    lines = [f"role {p.role} on {gpu}, {p.gpus} GPU{'s' if p.gpus != 1 else ''} (tensor x pipeline parallel)"]
    if isinstance(p.weights, str):
        lines.append(f"  weights: unknown: {p.weights}")
    else:
        lines.append(f"  weights: {gib(p.weights.per_gpu)} GiB per GPU ({gib(p.weights.total)} GiB in all)")
        lines += [f"    {line}" for line in p.weights.inputs]
    if isinstance(p.kv, str):
        lines.append(f"  KV cache: unknown: {p.kv}")
    else:
        lines.append(
            f"  KV cache: {p.kv.bytes_per_token() / 1024:.2f} KiB per token on one GPU, blocks of "
            f"{p.kv.block_size} tokens"
        )
        lines += [f"    {line}" for line in p.kv.inputs]
    if isinstance(p.memory, str):
        lines.append(f"  memory: unknown: {p.memory}")
    else:
        mem = p.memory
        mark = "" if mem.exact else "~"
        lines.append(
            f"  memory: {gib(mem.requested)} GiB requested, {gib(mem.weights)} GiB weights, "
            f"{mark}{gib(mem.reserve)} GiB reserve (give or take {gib(mem.uncertainty)})"
        )
        lines += [f"    {line}" for line in mem.inputs]
        lines.append(f"  Available KV cache memory: {mark}{gib(mem.available)} GiB")
        if not isinstance(p.kv, str) and mem.available > 0:
            lines.append(f"  GPU KV cache size: {mark}{p.kv.tokens(mem.available, p.max_model_len):,} tokens")
            if p.max_model_len:
                concurrency = p.kv.max_concurrency(mem.available, p.max_model_len)
                lines.append(
                    f"  Maximum concurrency for {p.max_model_len:,} tokens per request: {mark}{concurrency:.2f}x"
                )
    lines += _mamba_lines(p) + _offload_lines(p)
    state, why = _verdict(p)
    lines.append(f"  verdict: {state}: {why}")
    return lines


def _offload_lines(p: Plan) -> list[str]:
    """The KV cache offloaded to CPU memory on one node, against the host memory [hardware] declares."""
    o = p.offload
    if o is None:
        return []
    engines = f" x {o.engines} engines on a node" if o.engines > 1 else ""
    host = (
        f"host memory {o.host_gib:g} GiB ([hardware] host_memory_gib): {'exceeds' if o.exceeds else 'fits'}"
        if o.host_gib is not None
        else "host memory not declared ([hardware] host_memory_gib): no verdict"
    )
    return [f"  KV offload to CPU memory: {gib(o.pinned)} GiB pinned ({o.source}{engines}); {host}"]


def _mamba_lines(p: Plan) -> list[str]:
    """A hybrid model's Mamba cache blocks against max_num_seqs (full CUDA graphs need one per decode sequence)."""
    found = p.mamba_blocks()
    if found is None or isinstance(p.memory, str):
        return []
    verdict, blocks, safe = found
    mark = "" if p.memory.exact else "~"
    return [
        f"  Mamba cache blocks: {mark}{blocks:,} ({mark}{safe:,} at the reserve's upper bound) for max_num_seqs "
        f"{p.graph_seqs:,}: {verdict.state}: {verdict.why} (full CUDA graphs need one per decode sequence)"
    ]


def _json(p: Plan) -> dict[str, Any]:
    state, why = _verdict(p)
    data: dict[str, Any] = {
        "role": p.role,
        "gpu": p.gpu.name if p.gpu is not None else None,
        "gpus": p.gpus,
        "max_model_len": p.max_model_len,
        "verdict": state,
        "why": why,
    }
    if isinstance(p.weights, str):
        data["weights"] = {"unknown": p.weights}
    else:
        w = p.weights
        data["weights"] = {
            "per_gpu_bytes": w.per_gpu,
            "total_bytes": w.total,
            "source": w.source,
            "inputs": list(w.inputs),
        }
    if isinstance(p.kv, str):
        data["kv_cache"] = {"unknown": p.kv}
    else:
        data["kv_cache"] = {
            "bytes_per_token": p.kv.bytes_per_token(),
            "block_size": p.kv.block_size,
            "inputs": list(p.kv.inputs),
        }
        if p.max_model_len:
            data["kv_cache"]["needed_bytes"] = p.kv.needed_bytes(p.max_model_len)
    if p.offload is not None:
        data["kv_offload"] = {
            "pinned_bytes": p.offload.pinned,
            "engines_per_node": p.offload.engines,
            "source": p.offload.source,
            "host_memory_gib": p.offload.host_gib,
            "exceeds": p.offload.exceeds,
        }
    if isinstance(p.memory, str):
        data["memory"] = {"unknown": p.memory}
    else:
        mem = p.memory
        data["memory"] = {
            "requested_bytes": mem.requested,
            "weights_bytes": mem.weights,
            "reserve_bytes": mem.reserve,
            "uncertainty_bytes": mem.uncertainty,
            "estimate": not mem.exact,
            "available_kv_cache_bytes": mem.available,
            "inputs": list(mem.inputs),
        }
        if not isinstance(p.kv, str) and mem.available > 0:
            data["memory"]["kv_cache_tokens"] = p.kv.tokens(mem.available, p.max_model_len)
            if p.max_model_len:
                data["memory"]["max_concurrency"] = p.kv.max_concurrency(mem.available, p.max_model_len)
    return data


def markdown_table(session: Session, stacks: list[str]) -> str:
    """The capacity of the linted stacks whose roles declare a GPU, as the markdown lint summary's table."""
    rows: list[str] = []
    for spec in stacks:
        composed = session.stack(spec)
        named = [name for name in composed.roles if composed.gpu(name) is not None]
        for p in stack_plans(session, composed, named):
            state, _why = _verdict(p)
            mem = p.memory
            available = "" if isinstance(mem, str) else f"{'' if mem.exact else '~'}{gib(mem.available)} GiB"
            tokens = ""
            if not isinstance(mem, str) and not isinstance(p.kv, str) and mem.available > 0:
                tokens = f"{'' if mem.exact else '~'}{p.kv.tokens(mem.available, p.max_model_len):,}"
            weights = "unknown" if isinstance(p.weights, str) else f"{gib(p.weights.per_gpu)} GiB"
            gpu = p.gpu.name if p.gpu is not None else ""
            rows.append(f"| `{spec}` | `{p.role}` | {gpu} × {p.gpus} | {weights} | {available} | {tokens} | {state} |")
    if not rows:
        return ""
    head = [
        "",
        "<details><summary>Capacity on the declared GPUs (profilekit capacity; ~: an estimate)</summary>",
        "",
        "| stack | role | GPU | weights per GPU | KV cache memory | KV cache tokens | verdict |",
        "| --- | --- | --- | ---: | ---: | ---: | --- |",
    ]
    return "\n".join([*head, *rows, "", "</details>", ""])
