"""Scheduler budgets: max_num_batched_tokens against max_model_len and max_num_seqs, and the thresholds
bounded by them.

Sources: `vllm/engine/arg_utils.py` `EngineArgs._set_default_max_num_seqs_and_batched_tokens_args` and
`get_batch_defaults` (the defaults, identical in every release 0.27.0-0.33.0), then
`vllm/config/scheduler.py` `SchedulerConfig.verify_max_model_len` (max_num_active_seqs from 0.31.0).

Defaults are those `get_batch_defaults` picks for `vllm serve` on the GPU the role declares (`[hardware] gpu`,
docs/HARDWARE.md): 2048 batched tokens and 256 sequences; 8192 and 1024 on a device of 70 GiB or more whose name
has no "a100" (and, from 0.33.0, that is not a GB10, capability 12.1); 16384 and 1024 from 160 GiB (0.28.0 on).
Where no GPU is declared, those of a device that cannot be queried (vLLM's own fallback, 2048 and 256), and a
verdict that another GPU would change is `hardware-unknown`. All are doubled by `performance_mode =
"throughput"`; with chunked prefill off the token budget is raised to max_model_len; both are capped as vLLM caps
them.
"""

from __future__ import annotations

from functools import cache

from profilekit.errors import Location, Severity
from profilekit.hardware import CATALOGUE, BatchDefaults, batch_defaults
from profilekit.records import record
from profilekit.rules import order
from profilekit.rules.engine import Hit, family_check, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import (
    Undecided,
    derived_max_model_len,
    lacking,
    needs,
    serve_bool,
    serve_int,
    shape,
)
from profilekit.vllm.versions import at_least

SOURCE = "vllm/config/scheduler.py SchedulerConfig.verify_max_model_len"
DEFAULTS_SOURCE = "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults"
DEFAULT_BATCHED_TOKENS_BATCHED_DP = 256  # SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP
POOLING = frozenset({"pooling", "embed", "classify", "score", "reward"})


@record(frozen=True, slots=True)
class Budget:
    """The scheduler's numbers as `SchedulerConfig` receives them."""

    batched_tokens: int
    seqs: int
    max_model_len: int
    chunked_prefill: bool
    batched_written: bool
    seqs_written: bool
    length_known: bool  # False: max_model_len needs a config.json profilekit lacks (only with chunked prefill)


def _chunked_prefill(f: RoleFacts) -> bool | None:
    """Written, or `ModelConfig.is_chunked_prefill_supported`: on for generative models (None: a pooling runner)."""
    written = serve_bool(f, "enable_chunked_prefill")
    if written is not None:
        return written
    if f.serve.get("runner") in POOLING or f.serve.get("convert") in POOLING:
        return None
    return True


def _batched_dp_moe(f: RoleFacts) -> bool:
    """`ParallelConfig.use_batched_dp_moe`."""
    dp = serve_int(f, "data_parallel_size", 1) or 1
    return (
        f.serve.get("all2all_backend") in ("deepep_low_latency", "nixl_ep")
        and serve_bool(f, "enable_expert_parallel") is True
        and dp > 1
    )


def budget(f: RoleFacts, defaults: BatchDefaults | None = None) -> Budget | None:
    """`_set_default_max_num_seqs_and_batched_tokens_args`, with the defaults of the role's GPU (or `defaults`);
    None when an input is unknown or not an integer."""
    defaults = defaults if defaults is not None else batch_defaults(f.version, f.gpu)
    mml = derived_max_model_len(f)
    chunked = _chunked_prefill(f)
    written_tokens = serve_int(f, "max_num_batched_tokens")
    written_seqs = serve_int(f, "max_num_seqs")
    if chunked is None or (mml is None and not chunked):
        return None
    # With chunked prefill on, the length only caps a default token budget from above: any length of at
    # least one token gives the same verdict, so a huge stand-in decides the checks that do not print it.
    length_known = mml is not None
    mml = mml if mml is not None else 1 << 40
    if ("max_num_batched_tokens" in f.serve and written_tokens is None) or (
        "max_num_seqs" in f.serve and written_seqs is None
    ):
        return None
    if any(n is not None and n < 1 for n in (written_tokens, written_seqs)):
        return None  # SchedulerConfig's field constraints refuse these first (invalid-value)
    throughput = f.serve.get("performance_mode") == "throughput"
    tokens = written_tokens
    if tokens is None:
        tokens = DEFAULT_BATCHED_TOKENS_BATCHED_DP if _batched_dp_moe(f) else defaults.tokens
    seqs = written_seqs if written_seqs is not None else defaults.seqs
    if throughput:
        tokens *= 1 if written_tokens is not None else 2
        seqs *= 1 if written_seqs is not None else 2
    if written_tokens is None:
        if not chunked:
            tokens = max(mml, tokens)
        tokens = min(seqs * mml, tokens)
    if written_seqs is None:
        seqs = min(seqs, tokens)
    return Budget(tokens, seqs, mml, chunked, written_tokens is not None, written_seqs is not None, length_known)


def _shown(f: RoleFacts, key: str, value: int, written: bool) -> str:
    if written:
        return f"{key} = {value}"
    return f"{key} {value} (vLLM's default on {f.gpu.name})" if f.gpu is not None else f"{key} {value} (vLLM's default)"


def _mml(f: RoleFacts, b: Budget) -> str:
    if "max_model_len" in f.serve and serve_int(f, "max_model_len") == b.max_model_len:
        return f"max_model_len = {b.max_model_len}"
    return f"max_model_len {b.max_model_len} (from the model's config.json)"


def _failures(f: RoleFacts, defaults: BatchDefaults | None = None) -> list[Hit]:
    b = budget(f, defaults)
    if b is None:
        return []
    v = f.version
    tokens = _shown(f, "max_num_batched_tokens", b.batched_tokens, b.batched_written)
    seqs = _shown(f, "max_num_seqs", b.seqs, b.seqs_written)
    locs_tokens = f.loc("serve", "max_num_batched_tokens")
    locs_seqs = f.loc("serve", "max_num_seqs")
    locs_mml = f.loc("serve", "max_model_len") or list(f.model.locations)
    chunk_locs = f.loc("serve", "enable_chunked_prefill")
    out: list[Hit] = []

    def add(rule_id: str, index: int, what: str, message: str, *, fix: str, locs: list[Location]) -> None:
        out.append(
            Hit(
                rule_id,
                f'{what}; vLLM {v} refuses to start: "{message}"',
                locs,
                fix,
                role=f.role.name,
                order=order.built("SchedulerConfig", v, index),
            )
        )

    if b.length_known and b.batched_tokens < b.max_model_len and not b.chunked_prefill:
        add(
            "max-num-batched-tokens-model-len",
            0,
            f"{tokens} is below {_mml(f, b)} with enable_chunked_prefill = false",
            f"max_num_batched_tokens ({b.batched_tokens}) is smaller than max_model_len ({b.max_model_len}). "
            "This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject "
            "longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.",
            fix=f"raise max_num_batched_tokens to at least {b.max_model_len}, lower max_model_len, or turn chunked "
            "prefill back on",
            locs=[*locs_tokens, *locs_mml, *chunk_locs],
        )
    elif b.batched_tokens < b.seqs:
        add(
            "max-num-batched-tokens-seqs",
            1,
            f"{tokens} is below {seqs}",
            f"max_num_batched_tokens ({b.batched_tokens}) must be greater than or equal to max_num_seqs ({b.seqs}).",
            fix=f"raise max_num_batched_tokens to at least {b.seqs}, or lower max_num_seqs to {b.batched_tokens} or less",
            locs=[*locs_tokens, *locs_seqs],
        )
    active = serve_int(f, "max_num_active_seqs")
    if not out and at_least(v, "0.31.0") and active is not None and active > b.seqs:
        add(
            "max-num-active-seqs",
            2,
            f"max_num_active_seqs = {active} is above {seqs}",
            f"max_num_active_seqs ({active}) cannot be greater than max_num_seqs ({b.seqs}).",
            fix=f"set max_num_active_seqs to at most {b.seqs}",
            locs=[*f.loc("serve", "max_num_active_seqs"), *locs_seqs],
        )
    threshold = serve_int(f, "long_prefill_token_threshold", 0)
    if not out and b.length_known and threshold is not None and threshold > b.max_model_len:
        add(
            "long-prefill-token-threshold",
            3,
            f"long_prefill_token_threshold = {threshold} is above {_mml(f, b)}",
            f"long_prefill_token_threshold ({threshold}) cannot be greater than the max_model_len ({b.max_model_len}).",
            fix=f"set long_prefill_token_threshold to at most {b.max_model_len}",
            locs=[*f.loc("serve", "long_prefill_token_threshold"), *locs_mml],
        )
    return out


def failures(f: RoleFacts) -> list[Hit]:
    if "scheduler" not in f.memo:
        f.memo["scheduler"] = _failures(f) + _hardware_unknown(f)
    hits: list[Hit] = f.memo["scheduler"]
    return hits


@cache  # lint asks for every role of every stack: the answer depends only on the release
def _catalogue_tiers(version: str) -> dict[BatchDefaults, list[str]]:
    """The catalogue's GPUs grouped by the batch defaults `version` gives them, in catalogue order."""
    by_tier: dict[BatchDefaults, list[str]] = {}
    for gpu in CATALOGUE.values():
        by_tier.setdefault(batch_defaults(version, gpu), []).append(gpu.name)
    return by_tier


def _hardware_unknown(f: RoleFacts) -> list[Hit]:
    """`hardware-unknown`: no GPU is declared, and vLLM's defaults on another GPU give another verdict than the
    ones profilekit judges with (those of a device vLLM cannot query, as its own fallback)."""
    if f.gpu is not None or f.role.hardware.get("gpu") is not None:  # declared (an unknown name: unknown-gpu)
        return []
    by_tier = _catalogue_tiers(f.version)
    verdicts = {tier: sorted({hit.rule for hit in _failures(f, tier)}) for tier in by_tier}
    if len({tuple(v) for v in verdicts.values()}) < 2:
        return []
    refused = [name for tier, names in by_tier.items() if verdicts[tier] for name in names]
    started = [name for tier, names in by_tier.items() if not verdicts[tier] for name in names]
    rules = sorted({rule for v in verdicts.values() for rule in v})
    locs = [
        *f.loc("serve", "max_num_seqs"),
        *f.loc("serve", "max_num_batched_tokens"),
        *f.loc("serve", "max_num_active_seqs"),
        *f.loc("serve", "performance_mode"),
    ]
    return [
        Hit(
            "hardware-unknown",
            f"no layer declares the GPU, and vLLM {f.version}'s defaults for max_num_batched_tokens and max_num_seqs "
            f"depend on it: it refuses to start ({', '.join(rules)}) on {', '.join(refused)}"
            + (f" and starts on {', '.join(started)}" if started else "")
            + " (profilekit judges as vLLM does where the device cannot be queried)",
            locs,
            'declare what the role runs on: [hardware] gpu = "NAME" (docs/HARDWARE.md), or write both values',
            role=f.role.name,
        )
    ]


rule(
    "max-num-batched-tokens-model-len",
    Severity.ERROR,
    "max_num_batched_tokens below max_model_len with chunked prefill off",
    source=SOURCE,
)(family_check("max-num-batched-tokens-model-len", failures))
rule(
    "max-num-batched-tokens-seqs",
    Severity.ERROR,
    "max_num_batched_tokens below max_num_seqs (written or vLLM's defaults)",
    source=SOURCE + "; vllm/engine/arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args",
)(family_check("max-num-batched-tokens-seqs", failures))
# hardware-unknown, which these failures also hold, is registered by rules/platforms.py with the platform checks'
rule(
    "max-num-active-seqs",
    Severity.ERROR,
    "max_num_active_seqs above max_num_seqs",
    releases=">=0.31.0",
    source=SOURCE,
)(family_check("max-num-active-seqs", failures))
rule(
    "long-prefill-token-threshold",
    Severity.ERROR,
    "long_prefill_token_threshold above max_model_len",
    source=SOURCE,
)(family_check("long-prefill-token-threshold", failures))


@needs
def _scheduler_needs(f: RoleFacts) -> list[Undecided]:
    """The budget checks that depend on a max_model_len only the config.json knows."""
    if derived_max_model_len(f) is not None:
        return []
    s = shape(f)
    why = lacking(s, "max_position_embeddings or other length key")
    out: list[Undecided] = []
    tokens = serve_int(f, "max_num_batched_tokens")
    seqs = serve_int(f, "max_num_seqs")
    chunked = _chunked_prefill(f)
    if chunked is False and (
        tokens is not None or (seqs is not None and seqs > batch_defaults(f.version, f.gpu).tokens)
    ):
        out.append(
            Undecided(
                f"the scheduler budget (max_num_batched_tokens, max_num_seqs) with chunked prefill off against the "
                f"model's length{why}",
                tuple(f.loc("serve", "enable_chunked_prefill")),
            )
        )
    threshold = serve_int(f, "long_prefill_token_threshold", 0)
    if threshold:
        out.append(
            Undecided(
                f"long_prefill_token_threshold = {threshold} against the model's length{why}",
                tuple(f.loc("serve", "long_prefill_token_threshold")),
            )
        )
    return out
