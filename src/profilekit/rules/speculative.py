"""Speculative-decoding options that contradict each other inside `speculative_config`.

Source: `vllm/config/speculative.py` `SpeculativeConfig.__post_init__` and `_verify_args` (every release
0.27.0-0.33.0): a count without a draft model, n-gram prompt lookup bounds, an MTP method on a model whose
config.json gives vLLM no MTP draft (`profilekit.vllm.mtp` replays `hf_config_override`), and no count where
nothing can supply one. vLLM merges `--spec-method`, `--spec-model` and `--spec-tokens` into the table first
(`EngineArgs.create_speculative_config`), refusing a shorthand whose key the table also sets; the rules
judge the merged table (`profilekit.vllm.constraints.speculative_view`). Field constraints (`num_speculative_tokens > 0`, the method names) are `invalid-value`'s.
"""

from __future__ import annotations

from typing import Any

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.engine import Hit, family_check, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import Undecided, needs, shown
from profilekit.vllm.constraints import speculative_conflicts, speculative_origin, speculative_view
from profilekit.vllm.mtp import (
    DEEPSEEK_V41,
    INKLING_ONE_TOKEN,
    UNSUPPORTED,
    MtpDraft,
    detected_method,
    is_mtp_method,
    mtp_draft,
)
from profilekit.vllm.versions import at_least

SOURCE = "vllm/config/speculative.py SpeculativeConfig.__post_init__"
# methods that work without a model when a count is given: the MTP methods and dspark take the target, the
# others need no weights (a custom class fails earlier without its path); any other method needs a draft model
NO_DRAFT_MODEL = ("dspark", "ngram", "[ngram]", "ngram_gpu", "suffix", "extract_hidden_states", "custom_class")


def _needs_draft_model(method: Any) -> bool:
    if method is None:
        return True  # vLLM infers "draft_model"
    if not isinstance(method, str):
        return False
    return not (method == "mtp" or method.endswith("_mtp") or method in NO_DRAFT_MODEL)


# SpeculativeConfig's checks in vLLM's order (`order.built` steps): __post_init__ (the draft model 0, the n-gram
# bounds 1, the MTP draft 2, then rules/specargs.py's), then the model validator _verify_args
POST_INIT_DRAFT = 3  # the draft-model branch after the draft is built
POST_INIT_INDEX_SHARE = 4
POST_INIT_ADAPTIVE = 5
VERIFY_TENSOR_PARALLEL = 9  # _verify_args: the target's key before the count
VERIFY_NUM_TOKENS = 10
VERIFY_LM_HEAD = 11
VERIFY_SYNTHETIC = 12
VERIFY_HETEROGENEOUS = 13
VERIFY_FLY = 14

NGRAM = ("ngram", "[ngram]", "ngram_gpu")
# without a model (a draft to read n_predict from) every method needs num_speculative_tokens but suffix decoding,
# which defaults it to suffix_decoding_max_tree_depth: the MTP methods and dspark take the target as their model
# only when a count is given (SpeculativeConfig.__post_init__, _verify_args; every release 0.27.0-0.33.0)
COUNT_DEFAULTED = ("suffix",)


def _spec(f: RoleFacts) -> dict[str, Any] | None:
    """The table SpeculativeConfig is built from (`--spec-*` merged in); `{}` too, which vLLM builds."""
    return speculative_view(f.serve)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _method(spec: dict[str, Any]) -> str | None:
    """The method after vLLM's inference: `model = "ngram"` alone means the n-gram method."""
    method = spec.get("method")
    if method is None and spec.get("model") in ("ngram", "[ngram]"):
        return "ngram"
    return method if isinstance(method, str) or method is None else None


def _hit(f: RoleFacts, rule_id: str, index: int, what: str, message: str, *, fix: str, keys: tuple[str, ...]) -> Hit:
    locs = [loc for key in keys for loc in f.locs("serve", *speculative_origin(f.serve, key))]
    return Hit(
        rule_id,
        f'{what}; vLLM {f.version} refuses to start: "{message}"',
        locs or f.locs("serve", "speculative_config"),
        fix,
        role=f.role.name,
        order=order.built("SpeculativeConfig", f.version, index),
    )


def _failure(f: RoleFacts) -> Hit | None:
    conflicts = speculative_conflicts(f.serve)
    if conflicts:
        dest, key, option = conflicts[0]
        return Hit(
            "speculative-shorthand-conflict",
            f"{dest} and speculative_config.{key} both set the speculative {key}; vLLM {f.version} refuses to "
            f"start: \"{option} and --speculative-config['{key}'] are mutually exclusive\"",
            [*f.locs("serve", dest), *f.locs("serve", "speculative_config", key)],
            f"remove {dest}, or remove {key} from speculative_config",
            role=f.role.name,
            order=order.before("SpeculativeConfig", f.version, order.SPECULATIVE_SHORTHANDS),
        )
    spec = _spec(f)
    if spec is None or _unreadable(f):
        return None
    method = _method(spec)
    raw_method = spec.get("method")
    count = spec.get("num_speculative_tokens")
    model = spec.get("model")
    if model is None and count is not None and _needs_draft_model(raw_method):
        named = f"method = {shown(raw_method)}" if raw_method is not None else "no method"
        return _hit(
            f,
            "speculative-draft-model",
            0,
            f"speculative_config has num_speculative_tokens = {shown(count)} and {named} but no draft model",
            "num_speculative_tokens was provided but without speculative model.",
            fix='name the draft model (speculative_config.model), or use a method that needs none (method = "ngram")',
            keys=("num_speculative_tokens", "method"),
        )
    if method in NGRAM:
        low, high = _int(spec.get("prompt_lookup_min")), _int(spec.get("prompt_lookup_max"))
        if low is None and high is None:
            low = high = 5
        low = low if low is not None else high
        high = high if high is not None else low
        if low is not None and high is not None and low > high:
            return _hit(
                f,
                "speculative-prompt-lookup",
                1,
                f"speculative_config.prompt_lookup_min = {low} is above prompt_lookup_max = {high}",
                f"prompt_lookup_min={low} must be <= prompt_lookup_max={high}",
                fix="set prompt_lookup_min to at most prompt_lookup_max (an n-gram match needs min <= max tokens)",
                keys=("prompt_lookup_min", "prompt_lookup_max"),
            )
    mtp = _mtp_failure(f, spec)
    if mtp is not None:
        return mtp
    # _verify_args (a model validator: after __post_init__) refuses the target's key before it asks for a count
    if spec.get("tensor_parallel_size") is not None:
        return _hit(
            f,
            "speculative-tensor-parallel-size",
            VERIFY_TENSOR_PARALLEL,
            f"speculative_config.tensor_parallel_size = {shown(spec['tensor_parallel_size'])}",
            "'tensor_parallel_size' is not a valid argument in the speculative_config. Please pass "
            "'draft_tensor_parallel_size' instead.",
            fix="rename speculative_config.tensor_parallel_size to draft_tensor_parallel_size (1 or the target's "
            "tensor_parallel_size)",
            keys=("tensor_parallel_size",),
        )
    if count is None and model is None and method not in COUNT_DEFAULTED:
        return _hit(
            f,
            "speculative-num-tokens",
            VERIFY_NUM_TOKENS,
            f"speculative_config with {f'method = {shown(method)}' if method is not None else 'no method'}, no draft "
            "model and no num_speculative_tokens",
            "num_speculative_tokens must be provided with speculative model unless the draft model config contains "
            "an n_predict parameter.",
            fix="set speculative_config.num_speculative_tokens (how many tokens to propose per step)",
            keys=("method",),
        )
    return None


MTP_FIX = (
    "serve a model whose checkpoint has MTP layers vLLM can draft with (DeepSeek-V3, Qwen3-Next, GLM-4.5, "
    'MiMo, ...), or use a method with a separate draft model (method = "eagle3" and speculative_config.model) '
    'or none (method = "ngram")'
)


def _mtp_target(f: RoleFacts, spec: dict[str, Any]) -> bool:
    """An MTP method whose draft vLLM builds from the served model's own config.json (it takes the target when
    a count is given without a model)."""
    count, model = _int(spec.get("num_speculative_tokens")), spec.get("model")
    if not is_mtp_method(spec.get("method"), f.version):
        return False
    return (model is None and count is not None and count > 0) or (model is not None and model == f.model.model)


def _transformers_mtp(f: RoleFacts, config: dict[str, Any]) -> bool:
    """0.33.0: the Transformers modeling backend drafts from `num_mtp_layers` itself (whether the backend is
    used is the model registry's answer, which profilekit does not know unless `model_impl = "vllm"`)."""
    text = config.get("text_config")
    text = text if isinstance(text, dict) else config
    return (
        at_least(f.version, "0.33.0") and text.get("num_mtp_layers") is not None and f.serve.get("model_impl") != "vllm"
    )


def _mtp_failure(f: RoleFacts, spec: dict[str, Any]) -> Hit | None:
    """`__post_init__` builds the MTP draft from the target's config.json and names its method."""
    config = f.model.config
    if not _mtp_target(f, spec) or config is None or _transformers_mtp(f, config):
        return None
    draft = mtp_draft(config, f.version)
    problem = _mtp_problem(f, spec, config, draft) if draft is not None else None
    if problem is None:
        return None
    what, message, fix = problem
    hit = _hit(f, "speculative-mtp-model", 2, what, message, fix=fix, keys=("method",))
    hit.locations += f.model.locations
    return hit


def _mtp_problem(f: RoleFacts, spec: dict[str, Any], config: dict[str, Any], draft: MtpDraft) -> tuple[str, ...] | None:
    """(what, vLLM's message, the fix) of the first check the MTP draft fails, in `__post_init__`'s order."""
    raw = shown(spec.get("method"))
    if draft.error is not None:
        what = f"speculative_config.method = {raw} drafts with the model's own MTP layers, which vLLM cannot build"
        return what, draft.error, MTP_FIX
    method = detected_method(draft, f.model.model or "", f.version)
    if method is None:
        what = (
            f"speculative_config.method = {raw} drafts with the model's own MTP layers, and vLLM {f.version} has "
            f'none for a "{config.get("model_type")}" model ({config["architectures"][0]})'
        )
        return what, UNSUPPORTED, MTP_FIX
    if method == "mtp" and at_least(f.version, "0.30.0") and config.get("model_type") == "deepseek_v41":
        what = f"speculative_config.method = {raw} on DeepSeek V4.1, whose checkpoints have no classic MTP draft"
        return what, DEEPSEEK_V41, 'use method = "dspark" (DeepSeek V4.1 ships DSpark stages)'
    count = spec.get("num_speculative_tokens")
    if not at_least(f.version, "0.28.0") and draft.model_type == "inkling_mtp" and count not in (None, 1):
        what = f"speculative_config.num_speculative_tokens = {shown(count)} with Inkling's MTP draft"
        return what, INKLING_ONE_TOKEN, "set speculative_config.num_speculative_tokens = 1"
    return None


@needs
def _mtp_needs(f: RoleFacts) -> list[Undecided]:
    spec = _spec(f)
    if spec is None or not _mtp_target(f, spec):
        return []
    config = f.model.config
    if config is not None and (_transformers_mtp(f, config) or mtp_draft(config, f.version) is not None):
        return []
    why = "" if config is None else " (the config.json leaves what vLLM reads to the model's config class)"
    method = shown(spec.get("method"))
    return [
        Undecided(
            f"speculative_config.method = {method} against the model's MTP layers{why}",
            tuple(f.locs("serve", *speculative_origin(f.serve, "method"))),
        )
    ]


def _unreadable(f: RoleFacts) -> bool:
    """A shorthand value argparse refuses first (invalid-value): a wrong type, or None for --spec-method."""
    method, model, count = (f.serve.get(k) for k in ("spec_method", "spec_model", "spec_tokens"))
    return (
        (method is not None and (not isinstance(method, str) or method in ("", "None")))
        or (model is not None and not isinstance(model, str))
        or (count is not None and _int(count) is None)
    )


def _failures(f: RoleFacts) -> list[Hit]:
    hit = _failure(f)
    return [hit] if hit is not None else []


rule(
    "speculative-shorthand-conflict",
    Severity.ERROR,
    "--spec-method, --spec-model or --spec-tokens together with the same key in speculative_config",
    source="vllm/engine/arg_utils.py EngineArgs.create_speculative_config",
)(family_check("speculative-shorthand-conflict", _failures))
rule(
    "speculative-draft-model",
    Severity.ERROR,
    "speculative_config with a token count but no draft model for a method that needs one",
    source=SOURCE,
)(family_check("speculative-draft-model", _failures))
rule(
    "speculative-prompt-lookup",
    Severity.ERROR,
    "n-gram speculative decoding with prompt_lookup_min above prompt_lookup_max",
    source=SOURCE,
)(family_check("speculative-prompt-lookup", _failures))
rule(
    "speculative-mtp-model",
    Severity.ERROR,
    "an MTP speculative method on a model without MTP layers vLLM can draft with (needs the config.json)",
    source=SOURCE + ", hf_config_override",
)(family_check("speculative-mtp-model", _failures))
rule(
    "speculative-tensor-parallel-size",
    Severity.ERROR,
    "speculative_config.tensor_parallel_size (the draft's size is draft_tensor_parallel_size)",
    source="vllm/config/speculative.py SpeculativeConfig._verify_args",
)(family_check("speculative-tensor-parallel-size", _failures))
rule(
    "speculative-num-tokens",
    Severity.ERROR,
    "speculative decoding without num_speculative_tokens and without a draft model to read it from",
    source="vllm/config/speculative.py SpeculativeConfig._verify_args",
)(family_check("speculative-num-tokens", _failures))
