"""What the verdict corpora share: a case, spreading its values over layers, and judging it twice.

Two seeded corpora compare profilekit's verdict with vLLM's real `create_engine_config()` (the oracle):
the ReplaySSM/KV corpus (tools/verdict_corpus.py, tools/verdict_report.py) and the broad corpus over the
whole flag catalogue (tools/broad_corpus.py, tools/broad_report.py). Both write each case's layers into
one profile repository, compose the stack with profilekit, ask `profilekit.rules.vllm_verdict` for the
verdict, render the argv and env, and ask the oracle. vLLM's message is mapped to a rule id
(`verdict_corpus.rule_for_message`); the two verdicts agree when both accept, or both reject with the
same rule. A case the CPU oracle cannot decide is not an agreement: it must match a `Limit`.
"""

from __future__ import annotations

import collections
import random
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Case:
    """One composition: layers (name -> TOML text), the stack, and the dummy model's architecture."""

    id: str
    architecture: str
    stack: str
    layers: dict[str, str]
    intended: dict[str, Any] = field(default_factory=dict)
    # other files of the repository (a model's config.json), by path relative to the root
    files: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "architecture": self.architecture,
            "stack": self.stack,
            "layers": self.layers,
            "files": self.files,
            "intended": self.intended,
        }


def _decoy(rng: random.Random, key: str, value: Any) -> Any:
    """A different value of the same type, for an earlier layer to set and a later one to override."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, dict):
        return {"kv_connector": "NixlConnector", "kv_role": "kv_both"} if key == "kv_transfer_config" else {}
    return "triton" if value != "triton" else "flashinfer"


Decoy = Callable[[random.Random, str, Any], Any]


def split_layers(
    rng: random.Random,
    cid: str,
    *,
    serve: dict[str, Any],
    env: dict[str, str],
    model: dict[str, Any],
    roles: dict[str, Any],
    decoy: Decoy = _decoy,
    layer_counts: Sequence[int] = (1, 1, 2, 2, 3),
    unset_victims: Sequence[str] = ("kv_offloading_size", "speculative_config", "enable_prefix_caching"),
) -> tuple[dict[str, str], str]:
    """Spread the intended values over 1-3 layers so that composing them gives exactly the intended table."""
    import tomlkit

    n = rng.choice(list(layer_counts))
    tables: list[dict[str, Any]] = [{"serve": {}, "env": {}, "model": {}, "unset": [], "roles": {}} for _ in range(n)]
    for role, table in roles.items():
        tables[rng.randrange(n)]["roles"][role] = table
    for scope, values in (("serve", serve), ("env", env), ("model", model)):
        for key, value in values.items():
            idx = rng.randrange(n)
            tables[idx][scope][key] = value
            # an earlier layer sets a decoy that this one overrides
            if idx > 0 and scope == "serve" and key not in ("model", "kv_transfer_config") and rng.random() < 0.2:
                tables[rng.randrange(idx)]["serve"].setdefault(key, decoy(rng, key, value))
    # an earlier layer sets something that a later layer unsets
    if n > 1 and unset_victims and rng.random() < 0.25:
        victim = rng.choice(list(unset_victims))
        if victim not in serve:
            first = rng.randrange(n - 1)
            unset_decoy: Any = {
                "kv_offloading_size": 8,
                "speculative_config": {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4},
                "enable_prefix_caching": True,
            }[victim]
            tables[first]["serve"][victim] = unset_decoy
            tables[rng.randrange(first + 1, n)]["unset"].append(f"serve.{victim}")
    layers: dict[str, str] = {}
    names: list[str] = []
    for i, table in enumerate(tables):
        doc = tomlkit.document()
        if table["unset"]:
            doc["layer"] = {"unset": table["unset"]}
        for scope in ("model", "serve", "env", "roles"):
            if table[scope]:
                doc[scope] = table[scope]
        name = f"{cid}/l{i}"
        layers[name] = tomlkit.dumps(doc)
        names.append(name)
    return layers, "+".join(names)


# ---- cases the CPU oracle cannot decide -----------------------------------------------------------------


@dataclass(frozen=True)
class Limit:
    """A kind of case that a CPU-only oracle cannot decide, and why a GPU host would differ."""

    id: str
    pattern: str  # matched against the worker's `undecidable` reason and error
    why: str
    releases: tuple[str, ...] = ()  # empty: every release


def match_limit(answer: dict[str, Any], version: str, limits: Sequence[Limit]) -> Limit | None:
    """The first limit whose pattern matches the answer's reason or error (for this release), or None."""
    text = "\n".join(str(answer.get(k, "")) for k in ("undecidable", "error_type", "error", "raw_error"))
    for limit in limits:
        if re.search(limit.pattern, text) and (not limit.releases or version in limit.releases):
            return limit
    return None


# ---- judging -----------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    version: str
    seed: int
    cases: int = 0  # compositions
    checks: int = 0  # vLLM roles judged (a composition may hold a prefill and a decode role)
    agreements: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    undecidable: list[dict[str, Any]] = field(default_factory=list)
    unexplained: list[dict[str, Any]] = field(default_factory=list)  # undecidable matching no known limit
    verdicts: collections.Counter[str] = field(default_factory=collections.Counter)
    seconds: float = 0.0

    @property
    def decided(self) -> int:
        return self.agreements + len(self.disagreements)

    @property
    def rate(self) -> float | None:
        return round(self.agreements / self.decided, 6) if self.decided else None

    def as_dict(self, limits: Sequence[Limit]) -> dict[str, Any]:
        by_limit = collections.Counter(u["limit"] for u in self.undecidable)
        return {
            "vllm_version": self.version,
            "seed": self.seed,
            "compositions": self.cases,
            "cases": self.checks,
            "decided": self.decided,
            "agreements": self.agreements,
            "agreement_rate": self.rate,
            "disagreements": self.disagreements,
            "undecidable": {
                "count": len(self.undecidable),
                "by_limit": dict(sorted(by_limit.items(), key=lambda kv: str(kv[0]))),
                "limits": {limit.id: limit.why for limit in limits if limit.id in by_limit},
                "unexplained": self.unexplained,
            },
            "verdicts": dict(sorted(self.verdicts.items())),
        }


def write_repo(root: Path, version: str, cases: list[Case]) -> None:
    (root / "profilekit.toml").write_text(f'[vllm]\nversion = "{version}"\n', encoding="utf-8")
    for case in cases:
        for name, text in case.layers.items():
            path = root / "profiles" / f"{name}.toml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        for rel, text in case.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def vllm_rule(answer: dict[str, Any]) -> str | None:
    """vLLM's verdict as a rule id: None for accept, else the rule its message maps to (or 'unmapped ...')."""
    from verdict_corpus import rule_for_message

    if answer.get("ok"):
        return None
    text = "\n".join(str(answer.get(k, "")) for k in ("error", "stderr", "raw_error"))
    if answer.get("error_type") == "KeyError":
        text = f"KeyError: {text}"  # a bare KeyError's message is only the key: its type says what it is
    return rule_for_message(text) or f"unmapped vLLM error: {str(answer.get('error', ''))[:300]}"


def judge(
    version: str,
    oracle: Any,
    cases: list[Case],
    *,
    seed: int,
    limits: Sequence[Limit],
    config_json: Callable[[Case], dict[str, Any]],
    limits_on_errors: bool = False,
) -> Outcome:
    """Judge every vLLM role of every case with profilekit and with the oracle (an `OracleWorker`).

    `limits_on_errors`: a rejection whose error matches a limit is undecidable too, not only an answer the
    worker marks `undecidable` (the broad corpus reaches GPU-only code the worker does not know about).
    """
    from profilekit.compose.index import LayerIndex
    from profilekit.compose.merge import compose
    from profilekit.rules import vllm_verdict
    from profilekit.vllm.argv import render_argv
    from profilekit.vllm.catalogue import load_catalogue

    started = time.monotonic()
    catalogue = load_catalogue(version)
    outcome = Outcome(version, seed)
    with tempfile.TemporaryDirectory(prefix="profilekit-verdicts-") as tmp:
        root = Path(tmp)
        write_repo(root, version, cases)
        layer_index = LayerIndex(root, catalogue)
        for case in cases:
            outcome.cases += 1
            stack = compose(layer_index, case.stack)
            for name, role in stack.roles.items():
                if not role.is_vllm:
                    continue
                outcome.checks += 1
                predicted = vllm_verdict(stack, name, version=version, catalogue=catalogue, root=root)
                argv = render_argv(role.serve, catalogue)
                env = {k: v for k, v in role.env.items() if isinstance(v, str)}
                answer = oracle.validate(argv, env=env, config_json=config_json(case))
                record: dict[str, Any] = {
                    "case": f"{case.id}:{name}",
                    "argv": argv,
                    "env": env,
                    "architecture": case.architecture,
                }
                if "options" in case.intended:
                    record["options"] = case.intended["options"]
                undecidable = bool(answer.get("undecidable"))
                limit = match_limit(answer, version, limits) if undecidable or not answer.get("ok") else None
                if undecidable or (limits_on_errors and limit is not None):
                    entry = {
                        **record,
                        "reason": answer.get("undecidable") or str(answer.get("error", ""))[:300],
                        "limit": limit.id if limit else None,
                    }
                    outcome.undecidable.append(entry)
                    if limit is None:
                        outcome.unexplained.append(entry)
                    continue
                actual = vllm_rule(answer)
                expected = None if predicted.accepted else predicted.rule
                outcome.verdicts[actual or "accept"] += 1
                if expected == actual:
                    outcome.agreements += 1
                else:
                    outcome.disagreements.append(
                        {
                            **record,
                            "profilekit": expected or "accept",
                            "vllm": actual or "accept",
                            "vllm_error": answer.get("error"),
                            "vllm_detail": str(answer.get("raw_error") or answer.get("stderr") or "")[-2000:],
                            "reason": f"profilekit says {expected or 'accept'}, vLLM says {actual or 'accept'}",
                        }
                    )
    outcome.seconds = round(time.monotonic() - started, 1)
    return outcome
