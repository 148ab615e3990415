"""Rules about the model a role serves: it must name one, and rules that need its architecture must know it."""

from __future__ import annotations

from collections.abc import Iterable

from profilekit.errors import Severity
from profilekit.rules.engine import Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.pd import pd_connector


@rule("missing-model", Severity.ERROR, "a vLLM role has no serve.model")
def missing_model(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.serve.get("model") is not None:
        return []
    layers = [layer.name for layer in ctx.stack.layers]
    return [
        Hit(
            "missing-model",
            f"role {f.role.name} runs vLLM but no layer of the stack sets serve.model ({', '.join(layers)})",
            [],
            'add a model layer to the stack, or set model = "..." in [serve]',
            role=f.role.name,
        )
    ]


@rule(
    "unknown-architecture",
    Severity.WARNING,
    "rules that depend on the model's architecture cannot decide",
)
def unknown_architecture(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.model.known or f.serve.get("model") is None:
        return []
    needs: list[str] = []
    if f.serve.get("use_replayssm") is True:
        needs.append("ReplaySSM")
    if pd_connector(f) is not None:
        needs.append("P/D disaggregation")
    if not needs:
        return []
    why = f" ({f.model.problem})" if f.model.problem else ""
    return [
        Hit(
            "unknown-architecture",
            f"profilekit does not know the architecture of model {f.model.model!r}{why}, so the "
            f"{' and '.join(needs)} rules that depend on it cannot decide",
            list(f.model.locations),
            'declare it in the layer that sets the model: [model] architecture = "NemotronHForCausalLM" '
            "(the first `architectures` entry of the model's config.json), or [model] config = "
            '"path/to/config.json"',
            role=f.role.name,
        )
    ]
