"""The draft's `speculative_config.max_model_len` against the target's max_model_len (written, or derived from
the model's config.json), and what a draft built from the target's config.json reads from it: an MTP draft's head
dtype, a DSpark draft's block size, Parse 3.5's single MTP step, and MTP through the Transformers modeling backend
for a model with a separate text config (0.33.0).

Source: `vllm/config/speculative.py` `SpeculativeConfig._maybe_override_draft_max_model_len`, called at the end
of `__post_init__`'s draft-model branch (every release 0.27.0-0.33.0), after the draft's tensor parallelism.
The draft's own length check before it (`draft_max_model_len`) reads the draft checkpoint and is left to vLLM;
for a draft built from the target's config.json (MTP, DSpark) a length above the model's positions fails the
draft's `_get_and_verify_max_len` first, with that check's message: the verdict is the same refusal.
`SpeculativeConfig._verify_args` (0.33.0) reads the draft's `head_dtype` for `draft_lm_head_quantization`
(`vllm/config/model.py` `_get_head_dtype`); for an MTP draft that is the target's config.json key. 0.27.x's
draft-model branch refuses fewer speculative tokens than a DSpark draft's `dspark_block_size` (the target's
config.json when DSpark drafts from the target, as DeepSeek-V4 checkpoints ship it). 0.33.0's `hf_config_override`
turns a Nemotron Parse 3.5 target (`RadioMBartPrefixForCausalLM` whose `decoder.causal_vision_prefix` is set) into a
one-step `ParseAuxMTPModel` draft, and the draft-model branch refuses more speculative tokens.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import Undecided, derived_max_model_len, lacking, needs, shape, shown
from profilekit.rules.specargs import NO_DRAFT_BRANCH, normalised_method
from profilekit.rules.speculative import (
    POST_INIT_DRAFT,
    VERIFY_LM_HEAD,
    _mtp_failure,
    _mtp_target,
    _spec,
    _transformers_mtp,
    _unreadable,
)
from profilekit.vllm.constraints import speculative_origin
from profilekit.vllm.mtp import mtp_draft
from profilekit.vllm.versions import at_least

# `_STR_DTYPE_TO_TORCH_DTYPE` of vllm/config/model.py (0.33.0)
HEAD_DTYPES = ("half", "float16", "float", "float32", "bfloat16")


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


def unknown_head_dtype(f: RoleFacts) -> str | None:
    """vLLM's message when the MTP draft's `head_dtype` (the target's config.json) is no dtype it knows; None when
    the check is not reached or passes."""
    spec = _spec(f)
    config = f.model.config
    if not at_least(f.version, "0.33.0") or spec is None or config is None or _unreadable(f):
        return None
    if spec.get("draft_lm_head_quantization") is None or normalised_method(spec, f.version) != "mtp":
        return None
    draft = mtp_draft(config, f.version)
    if not _mtp_target(f, spec) or draft is None or draft.error is not None or _mtp_failure(f, spec) is not None:
        return None
    if draft.model_type == "gemma4_mtp":
        return None  # speculative-lm-head-quantization: Gemma-4 MTP has no lm_head to share
    head = config.get("head_dtype")
    if head is None or head == "model":
        return None
    if isinstance(head, str):
        return None if head.lower() in HEAD_DTYPES else f"Unknown dtype: {head.lower()!r}"
    return f"Unknown dtype: {head}"  # vLLM formats the attribute as Python shows it


@rule(
    "speculative-head-dtype",
    Severity.ERROR,
    "draft_lm_head_quantization with an MTP draft whose config.json head_dtype is no dtype vLLM knows",
    releases=">=0.33.0",
    source="vllm/config/speculative.py SpeculativeConfig._verify_args (vllm/config/model.py _get_head_dtype)",
)
def speculative_head_dtype(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    message = unknown_head_dtype(f)
    if message is None:
        return []
    head = (f.model.config or {}).get("head_dtype")
    return [
        Hit(
            "speculative-head-dtype",
            f"speculative_config.draft_lm_head_quantization with an MTP draft whose head_dtype is {shown(head)} (in "
            f'the model\'s config.json); vLLM {f.version} refuses to start: "{message}"',
            [*f.locs("serve", *speculative_origin(f.serve, "draft_lm_head_quantization")), *f.model.locations],
            'set head_dtype in the config.json to "model", "bfloat16", "float16" or "float32", or remove '
            "draft_lm_head_quantization",
            role=f.role.name,
            order=(*order.built("SpeculativeConfig", f.version, VERIFY_LM_HEAD), 1),
        )
    ]


def _drafting(f: RoleFacts, method: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(speculative_config, the target's config.json) of a role drafting with `method`; None otherwise."""
    spec = _spec(f)
    config = f.model.config
    if spec is None or config is None or _unreadable(f) or normalised_method(spec, f.version) != method:
        return None
    return spec, config


def _count_hit(f: RoleFacts, rule_id: str, what: str, message: str, *, fix: str, step: int) -> Hit:
    """A refusal of `num_speculative_tokens` in the draft-model branch, before the draft's tensor parallelism."""
    return Hit(
        rule_id,
        f'{what}; vLLM {f.version} refuses to start: "{message}"',
        [*f.locs("serve", *speculative_origin(f.serve, "num_speculative_tokens")), *f.model.locations],
        fix,
        role=f.role.name,
        order=(*order.built("SpeculativeConfig", f.version, POST_INIT_DRAFT - 1), step),
    )


@rule(
    "dspark-block-size",
    Severity.ERROR,
    "num_speculative_tokens below the dspark_block_size of a DSpark draft built from the target's config.json",
    releases="<0.28.0",
    source="vllm/config/speculative.py SpeculativeConfig.__post_init__",
)
def dspark_block_size(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = _drafting(f, "dspark")
    if found is None:
        return []
    spec, config = found
    count, block = _int(spec.get("num_speculative_tokens")), _int(config.get("dspark_block_size"))
    model = spec.get("model")
    if count is None or block is None or count >= block or (model is not None and model != f.model.model):
        return []  # without a count the draft's n_predict decides; a separate draft checkpoint has its own block
    message = (
        f"DSpark requires num_speculative_tokens >= dspark_block_size ({block}); got {count}. Smaller values "
        f"produce incorrect output. Use num_speculative_tokens={block} or larger (e.g. 7)."
    )
    what = (
        f"speculative_config.num_speculative_tokens = {count} with a DSpark draft whose dspark_block_size is {block} "
        "(in the model's config.json)"
    )
    fix = f"set speculative_config.num_speculative_tokens = {block} or more"
    return [_count_hit(f, "dspark-block-size", what, message, fix=fix, step=9)]


@rule(
    "parse-mtp-one-step",
    Severity.ERROR,
    "more than one speculative token with Nemotron Parse 3.5's MTP draft",
    releases=">=0.33.0",
    source="vllm/config/speculative.py SpeculativeConfig.__post_init__ (hf_config_override: ParseAuxMTPModel)",
)
def parse_mtp_one_step(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = _drafting(f, "mtp")
    if found is None:
        return []
    spec, config = found
    count = _int(spec.get("num_speculative_tokens"))
    if count in (None, 1) or not _mtp_target(f, spec) or _transformers_mtp(f, config):
        return []
    draft = mtp_draft(config, f.version)
    if draft is None or "ParseAuxMTPModel" not in draft.architectures:
        return []
    what = (
        f"speculative_config.num_speculative_tokens = {count} with Nemotron Parse 3.5's MTP draft "
        "(decoder.causal_vision_prefix in the model's config.json)"
    )
    message = "Parse 3.5 has only one trained MTP step"
    fix = "set speculative_config.num_speculative_tokens = 1"
    return [_count_hit(f, "parse-mtp-one-step", what, message, fix=fix, step=8)]


@rule(
    "transformers-mtp-multimodal",
    Severity.ERROR,
    'MTP through the Transformers modeling backend (model_impl = "transformers") for a model with a text_config',
    releases=">=0.33.0",
    source="vllm/config/speculative.py SpeculativeConfig.__post_init__",
)
def transformers_mtp_multimodal(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    found = _drafting(f, "mtp")
    if found is None or f.serve.get("model_impl") != "transformers":
        return []  # under model_impl auto, whether the backend is used is the registry's answer for the class
    spec, config = found
    text = config.get("text_config")
    if spec.get("model") is None and _int(spec.get("num_speculative_tokens")) is None:
        return []  # no draft model is set up (speculative-num-tokens)
    if not isinstance(text, dict) or text.get("num_mtp_layers") is None:
        return []
    message = "The Transformers modeling backend does not support MTP for multimodal models yet."
    return [
        Hit(
            "transformers-mtp-multimodal",
            'speculative_config.method = "mtp" with model_impl = "transformers" for a model whose config.json has a '
            f'text_config with num_mtp_layers; vLLM {f.version} refuses to start: "{message}"',
            [
                *f.locs("serve", *speculative_origin(f.serve, "method")),
                *f.loc("serve", "model_impl"),
                *f.model.locations,
            ],
            'leave model_impl unset (or "vllm") to draft with vLLM\'s own MTP implementation, or drop the MTP draft',
            role=f.role.name,
            order=order.built("SpeculativeConfig", f.version, 2),  # with the MTP draft, before the draft branch
        )
    ]
