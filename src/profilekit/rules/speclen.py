"""The draft's `speculative_config.max_model_len` against the target's max_model_len (written, or derived from
the model's config.json).

Source: `vllm/config/speculative.py` `SpeculativeConfig._maybe_override_draft_max_model_len`, called at the end
of `__post_init__`'s draft-model branch (every release 0.27.0-0.33.0), after the draft's tensor parallelism.
The draft's own length check before it (`draft_max_model_len`) reads the draft checkpoint and is left to vLLM;
for a draft built from the target's config.json (MTP, DSpark) a length above the model's positions fails the
draft's `_get_and_verify_max_len` first, with that check's message: the verdict is the same refusal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import Undecided, derived_max_model_len, lacking, needs, shape
from profilekit.rules.specargs import NO_DRAFT_BRANCH, normalised_method
from profilekit.rules.speculative import POST_INIT_DRAFT, _spec, _unreadable
from profilekit.vllm.constraints import speculative_origin


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def draft_max_model_len(f: RoleFacts) -> int | None:
    """`speculative_config.max_model_len` of a role whose draft vLLM builds (the draft-model branch); None when
    unset or when the draft branch is not reached with it."""
    spec = _spec(f)
    if spec is None or _unreadable(f):
        return None
    length = _int(spec.get("max_model_len"))
    method = normalised_method(spec, f.version)
    if length is None or length < 1 or method is None or method in NO_DRAFT_BRANCH:
        return None
    count = _int(spec.get("num_speculative_tokens"))
    if count is None or (spec.get("model") is None and method not in ("mtp", "dspark")):
        return None  # the draft's n_predict decides first, or speculative-draft-model
    return length


@rule(
    "speculative-max-model-len",
    Severity.ERROR,
    "speculative_config.max_model_len above the target's max_model_len (derived from the config.json when unset)",
    source="vllm/config/speculative.py SpeculativeConfig._maybe_override_draft_max_model_len",
)
def speculative_max_model_len(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    draft = draft_max_model_len(f)
    target = derived_max_model_len(f) if draft is not None else None
    if draft is None or target is None or draft <= target:
        return []
    message = f"speculative_max_model_len={draft} cannot be larger than target_max_model_len={target}"
    written = f.loc("serve", "max_model_len")
    source = "max_model_len" if written else "the model's positions in its config.json"
    return [
        Hit(
            "speculative-max-model-len",
            f"speculative_config.max_model_len = {draft} is more than the target's {target} ({source}); "
            f'vLLM {f.version} refuses to start: "{message}"',
            [
                *f.locs("serve", *speculative_origin(f.serve, "max_model_len")),
                *(written or f.model.locations),
            ],
            f"set speculative_config.max_model_len to {target} or less, or remove it (the draft then takes the "
            "target's)",
            role=f.role.name,
            order=(*order.built("SpeculativeConfig", f.version, POST_INIT_DRAFT), 1),
        )
    ]


@needs
def _speculative_max_model_len_needs(f: RoleFacts) -> list[Undecided]:
    draft = draft_max_model_len(f)
    if draft is None or derived_max_model_len(f) is not None:
        return []
    why = lacking(shape(f), "max_position_embeddings or other length key")
    return [
        Undecided(
            f"speculative_config.max_model_len = {draft} against the target's max_model_len{why}",
            tuple(f.locs("serve", *speculative_origin(f.serve, "max_model_len"))),
        )
    ]
