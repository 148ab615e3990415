"""The rule engine: every check that runs on a composed stack, returning findings as data.

One module per rule family (docs/RULES.md lists them, with the source of each rule); `engine` holds the registry
and the run loop, `facts` the per-role facts, `models` the model architecture lookup, `order` where in vLLM's
start-up the cross-field checks run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.errors import Finding, Location
from profilekit.redact import Redactor
from profilekit.rules import (  # noqa: F401 - they register
    archsupport,
    basic,
    cache,
    capacity,
    checkpoint,
    compilation,
    configs,
    dataparallel,
    declared,
    env,
    exclusive,
    experts,
    features,
    frontend,
    hisparse,
    host,
    kv,
    layering,
    mamba,
    microbatch,
    modelcfg,
    modelfit,
    modelkind,
    moe_parallel,
    multimodal,
    multinode,
    observability,
    options,
    outputs,
    parallel,
    pd,
    platforms,
    postinit,
    proton,
    quantpool,
    replayssm,
    runner,
    scheduler,
    scheduling,
    secrets,
    specargs,
    speclen,
    speculative,
    specvllm,
    subconfigs,
    wiring,
)
from profilekit.rules.engine import (
    RULES,
    STAGE_ARGPARSE,
    Context,
    Order,
    Verdict,
    first_rejection,
    run_rules,
)
from profilekit.rules.facts import stack_facts

if TYPE_CHECKING:
    from collections.abc import Mapping

    from profilekit.compose.model import Stack
    from profilekit.rules.models import ModelConfigs
    from profilekit.vllm.catalogue import Catalogue

__all__ = ["RULES", "Verdict", "check_stack", "evaluate", "vllm_verdict"]

# rules judged on each layer where it is written (rules/options.py), not on a role's effective values
_LAYER_RULES = frozenset({"unknown-option", "invalid-value"})

Ordered = list[tuple[Finding, "Order | None"]]


def evaluate(
    stack: Stack,
    *,
    version: str,
    catalogue: Catalogue | None,
    root: Path | None = None,
    services: Mapping[str, int] | None = None,
    models: ModelConfigs | None = None,
) -> Ordered:
    """Every finding of one stack, each with its place in vLLM's start-up order (None: vLLM does not check it).

    `services` is profilekit.toml's `[services]`: what listens on loopback besides the stack's roles. `models`: the
    config.json files known by model id (profilekit.toml's `[models]`); the shipped ones always are.
    """
    facts = stack_facts(stack, version, root, models)
    ctx = Context(stack, version, catalogue, root, facts, services=services or {})
    out = run_rules(ctx)
    if not out:
        return []
    redactor = Redactor.of_layers(stack.layers_that("holds"))  # the only layers that write strings
    redacted: Ordered = []
    for finding, order in out:
        finding.stack = stack.spec
        redacted.append((redactor.finding(finding), order))  # no finding carries a secret value
    return redacted


def check_stack(
    stack: Stack,
    *,
    version: str,
    catalogue: Catalogue | None,
    root: Path | None = None,
    services: Mapping[str, int] | None = None,
    models: ModelConfigs | None = None,
) -> list[Finding]:
    """All findings of one stack, sorted by file and line."""
    found = evaluate(stack, version=version, catalogue=catalogue, root=root, services=services, models=models)
    findings = [finding for finding, _ in found]
    return sorted(findings, key=lambda f: f.sort_key())


def vllm_verdict(
    stack: Stack,
    role: str,
    *,
    version: str,
    catalogue: Catalogue | None,
    root: Path | None = None,
    models: ModelConfigs | None = None,
) -> Verdict:
    """What vLLM `version` would do when starting `role`: accept, or the rule id of the first check that fails."""
    ordered = evaluate(stack, version=version, catalogue=catalogue, root=root, models=models)
    config = stack.roles[role]
    effective = {entry.origin for entry in config.scope.entries.values()}
    argv_order = list(config.serve)  # the rendered argv follows the effective key order
    kept: Ordered = []
    for finding, order in ordered:
        # a layer's option finding counts only where the value it judges reaches this role
        if (
            finding.role is None
            and finding.rule in _LAYER_RULES
            and not any(_reaches(loc, effective) for loc in finding.locations)
        ):
            continue
        at_parse = order is not None and order[0] == STAGE_ARGPARSE
        # the step inside the option (order[2:]): its field errors are 0, a validator that runs once the fields are
        # valid comes after them (1), an exception that escapes pydantic before them (-1)
        at = (
            (STAGE_ARGPARSE, _argv_position(finding, argv_order), *(order[2:] or (0,))) if at_parse and order else order
        )
        kept.append((finding, at))
    return first_rejection(kept, role)


def _reaches(loc: Location, effective: set[Location]) -> bool:
    """Whether a layer finding's location is an effective value of the role, or an item of one.

    An array option is one effective value (`serve.collect_detailed_traces`); a finding about one of its
    items is located at the item (`serve.collect_detailed_traces[1]`), in the same file.
    """
    if loc in effective:
        return True
    return any(
        origin.file == loc.file and origin.layer == loc.layer and loc.key.startswith(origin.key + "[")
        for origin in effective
    )


def _argv_position(finding: Finding, argv_order: list[str]) -> int:
    """argparse stops at the first value it cannot convert, in argv order; unknown options come last.

    A key inside a JSON-valued option (`compilation_config.use_inductor`) fails when argparse converts
    that option, at its place in the argv; so does an item of an array option (`collect_detailed_traces[1]`).
    """
    for loc in finding.locations:
        parts = loc.key.split(".")
        if "serve" in parts and parts.index("serve") + 1 < len(parts):
            at = parts.index("serve") + 1
            dest = parts[at].split("[", 1)[0].replace("-", "_")
            if finding.rule == "unknown-option" and at + 1 == len(parts):
                return len(argv_order) + 1
            if dest in argv_order:
                return argv_order.index(dest)
    return len(argv_order) + 1 if finding.rule == "unknown-option" else len(argv_order)
