"""Speculative-decoding options vLLM refuses field by field once the method is known.

Source: `vllm/config/speculative.py`. `SpeculativeConfig.__post_init__` (a custom proposer without its class path;
`index_share_for_mtp_iteration` outside MTP, 0.29.0+; adaptive verification outside DSpark, 0.28.0-0.29.0, or
with `use_local_argmax_reduction`, 0.30.0+) and the model validator `_verify_args` once the token count is known
(`draft_lm_head_quantization` outside EAGLE/MTP, 0.33.0; the synthetic acceptance schedule; the heterogeneous
vocabulary; FLy verification, 0.33.0). Each rule judges the merged table (`--spec-*` included) and stays silent
when an earlier check of `rules/speculative.py` stops vLLM first.
"""

from __future__ import annotations

from typing import Any

from profilekit.errors import Severity
from profilekit.rules.engine import Hit, family_check, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import shown
from profilekit.rules.speculative import (
    POST_INIT_ADAPTIVE,
    POST_INIT_DRAFT,
    POST_INIT_INDEX_SHARE,
    VERIFY_FLY,
    VERIFY_HETEROGENEOUS,
    VERIFY_LM_HEAD,
    VERIFY_SYNTHETIC,
    _hit,
    _int,
    _spec,
    _unreadable,
)
from profilekit.vllm.mtp import is_mtp_method
from profilekit.vllm.versions import at_least

SOURCE = "vllm/config/speculative.py SpeculativeConfig"
SUFFIX_DEPTH = 24  # suffix_decoding_max_tree_depth's default: suffix decoding's count when none is given


def normalised_method(spec: dict[str, Any], version: str) -> str | None:
    """`method` as `__post_init__` leaves it: inferred from the model, MTP aliases folded into "mtp"."""
    method, model = spec.get("method"), spec.get("model")
    if method is None:
        if isinstance(model, str) and _custom_path(model):
            return "custom_class"
        return "ngram" if model in ("ngram", "[ngram]") else "draft_model"
    if not isinstance(method, str):
        return None
    if is_mtp_method(method, version):
        return "mtp"
    return "ngram" if method == "[ngram]" else method


def _custom_path(model: str) -> bool:
    """`SpeculativeConfig._is_custom_proposer_path`: a dotted import path such as `pkg.MyProposer`."""
    if model.startswith(("http://", "https://", "file://")) or "/" in model:
        return False
    parts = model.split(".")
    return len(parts) >= 2 and all(part.isidentifier() for part in parts)


def _count(spec: dict[str, Any], method: str | None) -> int | None:
    """num_speculative_tokens as `_verify_args` sees it (suffix decoding defaults it), if it passes the bound."""
    count = _int(spec.get("num_speculative_tokens"))
    if count is None and method == "suffix" and spec.get("model") is None:
        count = _int(spec.get("suffix_decoding_max_tree_depth", SUFFIX_DEPTH))
    return count if count is not None and count > 0 else None


def verified_count(spec: dict[str, Any], version: str) -> int | None:
    """The token count SpeculativeConfig ends with, when the table alone gives it."""
    return _count(spec, normalised_method(spec, version))


def _true(spec: dict[str, Any], key: str) -> bool:
    return spec.get(key) is True


NO_DRAFT_BRANCH = ("ngram", "ngram_gpu", "suffix", "custom_class", "extract_hidden_states")


def _draft_branch(f: RoleFacts, spec: dict[str, Any], method: str | None) -> Hit | None:
    """The draft-model branch of `__post_init__` (a model-based method whose draft vLLM builds), once the
    token count is known: options that name another method, and the draft's tensor parallelism."""
    model, count = spec.get("model"), _int(spec.get("num_speculative_tokens"))
    if method is None or method in NO_DRAFT_BRANCH or count is None:
        return None  # without a count, the draft checkpoint's n_predict decides first
    if model is None and method not in ("mtp", "dspark"):
        return None  # speculative-draft-model
    topc, topk = spec.get("xpress_topc"), spec.get("dspark_draft_topk")
    if at_least(f.version, "0.33.0") and topc is not None and method != "dflash":
        return _hit(
            f,
            "speculative-method-option",
            POST_INIT_DRAFT,
            f"speculative_config.xpress_topc = {shown(topc)} with method = {shown(method)}",
            "xpress_topc is only supported by XPress",
            fix='remove xpress_topc (XPress drafts under method = "dflash")',
            keys=("xpress_topc", "method"),
        )
    if at_least(f.version, "0.28.0") and topk is not None and method != "dspark":
        return _hit(
            f,
            "speculative-method-option",
            POST_INIT_DRAFT,
            f"speculative_config.dspark_draft_topk = {shown(topk)} with method = {shown(method)}",
            "dspark_draft_topk is only supported by DSpark",
            fix='remove dspark_draft_topk, or use method = "dspark"',
            keys=("dspark_draft_topk", "method"),
        )
    draft_tp, tp = _int(spec.get("draft_tensor_parallel_size")), _int(f.serve.get("tensor_parallel_size", 1))
    if draft_tp is not None and tp is not None and draft_tp not in (1, tp):
        return _hit(
            f,
            "speculative-draft-tensor-parallel",
            POST_INIT_DRAFT,
            f"speculative_config.draft_tensor_parallel_size = {draft_tp} with tensor_parallel_size = {tp}",
            f"speculative_draft_tensor_parallel_size={draft_tp} cannot be other value than 1 or target model "
            "tensor_parallel_size",
            fix=f"set draft_tensor_parallel_size to 1 or {tp} (or omit it: the target's)",
            keys=("draft_tensor_parallel_size",),
        )
    return None


SUFFIX_BOUNDS = (  # _validate_suffix_decoding, in its order: (field, float field, lowest, highest, vLLM's words)
    ("suffix_decoding_max_tree_depth", False, 1, None, "must be >= 1"),
    ("suffix_decoding_max_cached_requests", False, 0, None, "must be >= 0"),
    ("suffix_decoding_max_spec_factor", True, 0, None, "must be >= 0"),
    ("suffix_decoding_min_token_prob", True, 0, 1, "must be in [0, 1]"),
)


def _suffix(f: RoleFacts, spec: dict[str, Any], method: str | None) -> Hit | None:
    """`_validate_suffix_decoding`'s bounds (after its arctic-inference import check, a host matter)."""
    if method != "suffix":
        return None
    for key, is_float, low, high, words in SUFFIX_BOUNDS:
        value = spec.get(key)
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if value < low or (high is not None and value > high):
            shown_value = float(value) if is_float else value
            return _hit(
                f,
                "speculative-suffix-decoding",
                1,
                f"speculative_config.{key} = {shown(value)} with suffix decoding",
                f"{key}={shown_value} {words}",
                fix=f"set {key} {words[5:]}",
                keys=(key,),
            )
    return None


def _post_init(f: RoleFacts, spec: dict[str, Any], method: str | None) -> Hit | None:
    """The checks at the end of `__post_init__`, in its order."""
    model, count = spec.get("model"), spec.get("num_speculative_tokens")
    suffix = _suffix(f, spec, method)
    if suffix is not None:
        return suffix
    in_branch = _draft_branch(f, spec, method)
    if in_branch is not None:
        return in_branch
    if method == "custom_class" and model is None and count is not None:
        return _hit(
            f,
            "speculative-custom-class-model",
            0,
            f'speculative_config.method = "custom_class" and num_speculative_tokens = {shown(count)} without a model',
            "method='custom_class' requires 'model' to contain the custom proposer module path (e.g., "
            "'my_module.MyProposer').",
            fix='name the proposer class in speculative_config.model (e.g. "my_module.MyProposer")',
            keys=("method",),
        )
    share = spec.get("index_share_for_mtp_iteration")
    if at_least(f.version, "0.29.0") and share is not None:
        drafted = model is not None or count is not None  # an MTP draft is built from the model or the target
        if method != "mtp" or not drafted:
            named = f"method = {shown(spec.get('method'))}" if spec.get("method") is not None else "no method"
            return _hit(
                f,
                "speculative-index-share-mtp",
                POST_INIT_INDEX_SHARE,
                f"speculative_config.index_share_for_mtp_iteration = {shown(share)} with {named}"
                + ("" if method != "mtp" else " and no MTP draft (no model and no num_speculative_tokens)"),
                "index_share_for_mtp_iteration is only supported with method='mtp'",
                fix='remove index_share_for_mtp_iteration, or use method = "mtp" with num_speculative_tokens',
                keys=("index_share_for_mtp_iteration", "method"),
            )
    return _adaptive(f, spec, method)


def _adaptive(f: RoleFacts, spec: dict[str, Any], method: str | None) -> Hit | None:
    if method == "dspark" or not _true(spec, "enable_adaptive_verification"):
        return None
    if not at_least(f.version, "0.30.0"):
        return _hit(
            f,
            "speculative-adaptive-verification",
            POST_INIT_ADAPTIVE,
            f"speculative_config.enable_adaptive_verification = true with method = {shown(method)}",
            "Adaptive verification only supported with DSpark",
            fix='use method = "dspark", or remove enable_adaptive_verification',
            keys=("enable_adaptive_verification", "method"),
        )
    if not _true(spec, "use_local_argmax_reduction"):
        return None
    return _hit(
        f,
        "speculative-adaptive-verification",
        POST_INIT_ADAPTIVE,
        "speculative_config.enable_adaptive_verification = true with use_local_argmax_reduction = true",
        "Adaptive verification estimates per-position acceptance from the draft logits, which "
        "use_local_argmax_reduction never materializes. Disable one of them.",
        fix="remove enable_adaptive_verification or use_local_argmax_reduction",
        keys=("enable_adaptive_verification", "use_local_argmax_reduction"),
    )


def _verify_args(f: RoleFacts, spec: dict[str, Any], method: str | None, count: int) -> Hit | None:
    """`_verify_args` after the count is known, in its order."""
    head = spec.get("draft_lm_head_quantization")
    if at_least(f.version, "0.33.0") and head is not None and method not in ("eagle", "eagle3", "mtp"):
        return _hit(
            f,
            "speculative-lm-head-quantization",
            VERIFY_LM_HEAD,
            f"speculative_config.draft_lm_head_quantization = {shown(head)} with method = {shown(method)}",
            f"draft_lm_head_quantization is not supported for method {method!r}.",
            fix='remove draft_lm_head_quantization, or use method = "eagle", "eagle3" or "mtp"',
            keys=("draft_lm_head_quantization", "method"),
        )
    synthetic = _synthetic(f, spec, count)
    if synthetic is not None:
        return synthetic
    return _vocab(f, spec, method) or _fly(f, spec, method, count)


def _floats(value: Any) -> list[float] | None:
    if not isinstance(value, list) or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    return [float(v) for v in value]


def _length(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _synthetic(f: RoleFacts, spec: dict[str, Any], n: int) -> Hit | None:
    """`_resolve_synthetic_acceptance_rates`, or the schedule without the synthetic method."""
    raw_rates, raw_length = spec.get("synthetic_acceptance_rates"), spec.get("synthetic_acceptance_length")
    keys = ("synthetic_acceptance_rates", "synthetic_acceptance_length", "rejection_sample_method")
    fix = (
        "give exactly one of synthetic_acceptance_rates (one rate per speculative token) or synthetic_acceptance_length"
    )
    if spec.get("rejection_sample_method") != "synthetic":
        if raw_rates is None and raw_length is None:
            return None
        given = "synthetic_acceptance_rates" if raw_rates is not None else "synthetic_acceptance_length"
        what = f'speculative_config.{given} without rejection_sample_method = "synthetic"'
        message = (
            "synthetic_acceptance_rates / synthetic_acceptance_length are only valid with "
            "rejection_sample_method='synthetic'."
        )
        return _hit(f, "speculative-synthetic-acceptance", VERIFY_SYNTHETIC, what, message, fix=fix, keys=keys)
    rates, length = _floats(raw_rates), _length(raw_length)
    problem: tuple[str, str] | None = None
    if (raw_rates is None) == (raw_length is None):
        both = "both" if raw_rates is not None else "neither"
        problem = (
            f'speculative_config.rejection_sample_method = "synthetic" with {both} of synthetic_acceptance_rates and '
            "synthetic_acceptance_length",
            "rejection_sample_method='synthetic' requires exactly one of synthetic_acceptance_rates or "
            "synthetic_acceptance_length.",
        )
    elif rates is not None:
        what = f"speculative_config.synthetic_acceptance_rates = {rates} with num_speculative_tokens = {n}"
        if len(rates) != n:
            problem = what, f"synthetic_acceptance_rates must have length {n}, got {rates}."
        elif not all(0.0 <= r <= 1.0 for r in rates):
            problem = what, f"synthetic_acceptance_rates entries must be in [0, 1], got {rates}."
        elif any(rates[i] > rates[i - 1] for i in range(1, n)):
            problem = what, f"synthetic_acceptance_rates must be non-increasing, got {rates}."
    elif length is not None and not 1.0 <= length <= float(n + 1):
        problem = (
            f"speculative_config.synthetic_acceptance_length = {shown(raw_length)} with num_speculative_tokens = {n}",
            f"synthetic_acceptance_length must be in [1, {n + 1}], got {length}.",
        )
    if problem is None:
        return None
    return _hit(f, "speculative-synthetic-acceptance", VERIFY_SYNTHETIC, *problem, fix=fix, keys=keys)


def _vocab(f: RoleFacts, spec: dict[str, Any], method: str | None) -> Hit | None:
    if not _true(spec, "use_heterogeneous_vocab"):
        return None
    keys = ("use_heterogeneous_vocab", "method")
    if method != "draft_model":
        what = f"speculative_config.use_heterogeneous_vocab = true with method = {shown(method)}"
        message = "use_heterogeneous_vocab only works with method='draft_model'"
        fix = 'remove use_heterogeneous_vocab, or draft with a separate model (method = "draft_model")'
    elif spec.get("draft_sample_method", "greedy") != "greedy":
        what = (
            "speculative_config.use_heterogeneous_vocab = true with draft_sample_method = "
            f"{shown(spec.get('draft_sample_method'))}"
        )
        message = (
            "use_heterogeneous_vocab currently only supports greedy draft sampling. Set draft_sample_method='greedy' "
            "(the default) or omit it."
        )
        fix = "remove draft_sample_method (greedy is the default)"
        keys = ("use_heterogeneous_vocab", "draft_sample_method")
    elif at_least(f.version, "0.33.0") and _true(spec, "use_local_argmax_reduction"):
        what = "speculative_config.use_heterogeneous_vocab = true with use_local_argmax_reduction = true"
        message = (
            "use_heterogeneous_vocab is not compatible with use_local_argmax_reduction because token-level "
            "intersection requires the full draft logits."
        )
        fix = "remove use_local_argmax_reduction or use_heterogeneous_vocab"
        keys = ("use_heterogeneous_vocab", "use_local_argmax_reduction")
    else:
        return None
    return _hit(f, "speculative-heterogeneous-vocab", VERIFY_HETEROGENEOUS, what, message, fix=fix, keys=keys)


def _fly(f: RoleFacts, spec: dict[str, Any], method: str | None, count: int) -> Hit | None:
    if not at_least(f.version, "0.33.0") or spec.get("rejection_sample_method") != "fly":
        return None
    window = _int(spec.get("fly_window_size"))
    keys = ("rejection_sample_method", "num_speculative_tokens")
    if method == "extract_hidden_states":
        what = 'speculative_config.rejection_sample_method = "fly" with method = "extract_hidden_states"'
        message = (
            "FLy is not compatible with method='extract_hidden_states', which does not perform speculative decoding."
        )
        fix = "remove rejection_sample_method (FLy verifies speculated tokens; this method speculates none)"
        keys = ("rejection_sample_method", "method")
    elif count < 2:
        what = f'speculative_config.rejection_sample_method = "fly" with num_speculative_tokens = {count}'
        message = "FLy requires num_speculative_tokens to be at least 2."
        fix = "set num_speculative_tokens to 2 or more"
    elif window is not None and window >= count:
        what = f"speculative_config.fly_window_size = {window} with num_speculative_tokens = {count}"
        message = "FLy requires fly_window_size to be smaller than num_speculative_tokens."
        fix = f"set fly_window_size below {count} (or omit it: min(6, num_speculative_tokens - 1))"
        keys = ("fly_window_size", "num_speculative_tokens")
    else:
        return None
    return _hit(f, "speculative-fly", VERIFY_FLY, what, message, fix=fix, keys=keys)


def _failure(f: RoleFacts) -> Hit | None:
    spec = _spec(f)
    if spec is None or _unreadable(f):
        return None
    method = normalised_method(spec, f.version)
    hit = _post_init(f, spec, method)
    if hit is not None:
        return hit
    count = _count(spec, method)
    return None if count is None else _verify_args(f, spec, method, count)


def _failures(f: RoleFacts) -> list[Hit]:
    hit = _failure(f)
    return [hit] if hit is not None else []


for _id, _summary, _where, _releases in (
    (
        "speculative-custom-class-model",
        'method = "custom_class" with a token count but no proposer class path in speculative_config.model',
        "__post_init__",
        "",
    ),
    (
        "speculative-method-option",
        "xpress_topc without method dflash (0.33.0) or dspark_draft_topk without method dspark (0.28.0+), "
        "on a model-based method",
        "__post_init__",
        ">=0.28.0",
    ),
    (
        "speculative-draft-tensor-parallel",
        "draft_tensor_parallel_size other than 1 or the target's tensor_parallel_size, on a model-based method",
        "__post_init__, _verify_and_get_draft_tp",
        "",
    ),
    (
        "speculative-suffix-decoding",
        "suffix decoding with a tree depth below 1, negative cache or spec factor, or a token probability outside [0, 1]",
        "_validate_suffix_decoding",
        "",
    ),
    (
        "speculative-index-share-mtp",
        "index_share_for_mtp_iteration without an MTP draft (0.29.0+)",
        "__post_init__",
        ">=0.29.0",
    ),
    (
        "speculative-adaptive-verification",
        "adaptive verification outside DSpark (0.28.0-0.29.0) or with use_local_argmax_reduction (0.30.0+)",
        "__post_init__",
        ">=0.28.0",
    ),
    (
        "speculative-lm-head-quantization",
        "draft_lm_head_quantization with a method other than eagle, eagle3 or mtp (0.33.0)",
        "_verify_args",
        ">=0.33.0",
    ),
    (
        "speculative-synthetic-acceptance",
        "a synthetic acceptance schedule without the synthetic method, or one that does not fit the token count",
        "_verify_args, _resolve_synthetic_acceptance_rates",
        "",
    ),
    (
        "speculative-heterogeneous-vocab",
        "use_heterogeneous_vocab outside the draft_model method, with probabilistic draft sampling or with "
        "use_local_argmax_reduction (0.33.0)",
        "_verify_args",
        "",
    ),
    (
        "speculative-fly",
        "FLy verification with extract_hidden_states, fewer than 2 tokens or a window not below the count (0.33.0)",
        "_verify_args",
        ">=0.33.0",
    ),
):
    rule(_id, Severity.ERROR, _summary, releases=_releases, source=f"{SOURCE}.{_where}")(family_check(_id, _failures))
