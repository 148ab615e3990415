"""Options against what the model is, as its config.json says: float16 for a model type that refuses it,
prompt embeddings for an encoder-decoder model, the pooling runner with `convert = "none"` for a generative
model, the generate runner for a model that neither generates nor pools, modality LoRAs for a text-only model,
LoRA on Inkling.

Sources (every release 0.27.0-0.33.0 unless noted): `vllm/config/model.py` `_check_valid_dtype` (its
`_FLOAT16_NOT_SUPPORTED_MODELS` is the same in every release), `ModelConfig.validate_model_config_after`
(0.29.0 and later), `ModelConfig.__post_init__` (the runner against the registry's model kinds;
`_RUNNER_CONVERTS` is the same in every release; the registry's facts per release are package data,
`profilekit.vllm.registry`), `vllm/engine/arg_utils.py` `EngineArgs.create_engine_config` (default_mm_loras) and
`vllm/config/lora.py` `LoRAConfig.verify_with_model_config` (Inkling).
"""

from __future__ import annotations

from collections.abc import Iterable

from profilekit.errors import Severity
from profilekit.rules import order
from profilekit.rules.archsupport import LORA_MODEL, _architectures, registered
from profilekit.rules.configs import _text_only
from profilekit.rules.engine import STAGE_POST_INIT, Context, Hit, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import shown
from profilekit.rules.models import ARCHITECTURES
from profilekit.vllm.modelshape import DTYPES

# `_FLOAT16_NOT_SUPPORTED_MODELS`: model_type -> reason (the same four in every release 0.27.0-0.33.0)
_UNSTABLE = "Numerical instability. Please use bfloat16 or float32 instead."
FLOAT16_NOT_SUPPORTED = {"gemma2": _UNSTABLE, "gemma3": _UNSTABLE, "gemma3_text": _UNSTABLE, "glm4": _UNSTABLE}

# ModelConfig.__post_init__: the runner checks follow the registry's look-up of the architecture (-10)
RUNNER_CHECK = -8
# ... then `_get_and_verify_dtype`, before the positions (0)
DTYPE_CHECK = -5
# ModelConfig's model validator runs once __post_init__ has finished
MODEL_VALIDATOR = 50
# create_engine_config: the default_mm_loras check, after SchedulerConfig is built, right before LoRAConfig
DEFAULT_MM_LORAS = 900


@rule(
    "dtype-float16-model-type",
    Severity.ERROR,
    "dtype = float16 for a model type vLLM runs only in bfloat16 or float32 (Gemma 2/3, GLM-4; needs the config.json)",
    source="vllm/config/model.py _check_valid_dtype",
)
def dtype_float16_model_type(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    written = f.serve.get("dtype")
    raw = f.model.config
    if not isinstance(written, str) or DTYPES.get(written.lower()) != "float16" or raw is None:
        return []
    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in FLOAT16_NOT_SUPPORTED:
        return []  # `--dtype auto` never picks float16 for these: _resolve_auto_dtype skips it
    reason = FLOAT16_NOT_SUPPORTED[model_type]
    message = f"The model type {model_type!r} does not support float16. Reason: {reason}"
    return [
        Hit(
            "dtype-float16-model-type",
            f'dtype = {shown(written)} for a model of type "{model_type}"; vLLM {f.version} refuses to start: '
            f'"{message}"',
            [*f.loc("serve", "dtype"), *f.model.locations],
            'set dtype = "bfloat16" (or "auto", which picks it for this model type)',
            role=f.role.name,
            order=order.built("ModelConfig", f.version, DTYPE_CHECK),
        )
    ]


def _encoder_decoder(raw: dict[str, object]) -> bool:
    """`is_encoder_decoder`: the config's flag, or its text config's."""
    text = raw.get("text_config")
    return raw.get("is_encoder_decoder") is True or (isinstance(text, dict) and text.get("is_encoder_decoder") is True)


@rule(
    "prompt-embeds-encoder-decoder",
    Severity.ERROR,
    "enable_prompt_embeds for an encoder-decoder model (needs the config.json)",
    releases=">=0.29.0",
    source="vllm/config/model.py ModelConfig.validate_model_config_after",
)
def prompt_embeds_encoder_decoder(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    raw = f.model.config
    if f.serve.get("enable_prompt_embeds") is not True or raw is None or not _encoder_decoder(raw):
        return []
    message = "--enable-prompt-embeds is not supported with encoder-decoder models."
    return [
        Hit(
            "prompt-embeds-encoder-decoder",
            f"enable_prompt_embeds = true for an encoder-decoder model (is_encoder_decoder in its config.json); "
            f'vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", "enable_prompt_embeds"), *f.model.locations],
            "set enable_prompt_embeds = false: encoder-decoder models embed their input ids themselves",
            role=f.role.name,
            order=order.built("ModelConfig", f.version, MODEL_VALIDATOR),
        )
    ]


@rule(
    "default-mm-loras-text-model",
    Severity.ERROR,
    "default_mm_loras for a language-only model",
    source="vllm/engine/arg_utils.py EngineArgs.create_engine_config",
)
def default_mm_loras_text_model(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    loras = f.serve.get("default_mm_loras")
    if not loras or not _text_only(f):
        return []
    message = "Default modality-specific LoRA(s) were provided for a non multimodal model"
    return [
        Hit(
            "default-mm-loras-text-model",
            f"default_mm_loras for a {f.model.architecture} model, which takes text only; vLLM {f.version} refuses "
            f'to start: "{message}"',
            [*f.locs("serve", "default_mm_loras"), *f.model.locations],
            "remove default_mm_loras: they apply to image, audio or video inputs, which this model has none of",
            role=f.role.name,
            order=order.before("LoRAConfig", f.version, DEFAULT_MM_LORAS),
        )
    ]


@rule(
    "inkling-lora-multimem",
    Severity.ERROR,
    "enable_lora on an Inkling model without env INKLING_MULTIMEM_AR = 0",
    source="vllm/config/lora.py LoRAConfig.verify_with_model_config",
)
def inkling_lora_multimem(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    archs = _architectures(f)
    if f.serve.get("enable_lora") is not True or archs is None or not any("Inkling" in a for a in archs):
        return []
    if (f.env_value("INKLING_MULTIMEM_AR") or "1") == "0":
        return []
    message = (
        "Inkling LoRA requires INKLING_MULTIMEM_AR=0: the Lamport fused-collective path bypasses the LoRA-wrapped "
        "wo_ud and dense down_proj layers on decode-sized batches, silently dropping their LoRA. Set "
        "INKLING_MULTIMEM_AR=0."
    )
    return [
        Hit(
            "inkling-lora-multimem",
            f'enable_lora = true on an Inkling model ({archs[0]}); vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", "enable_lora"), *f.locs("env", "INKLING_MULTIMEM_AR"), *f.model.locations],
            'set env INKLING_MULTIMEM_AR = "0", or enable_lora = false',
            role=f.role.name,
            order=(STAGE_POST_INIT, LORA_MODEL, 1),  # after the SupportsLoRA check of the same method
        )
    ]


@rule(
    "runner-pooling-convert-none",
    Severity.ERROR,
    'runner = "pooling" with convert = "none" for a generative model profilekit knows',
    source="vllm/config/model.py ModelConfig.__post_init__",
)
def runner_pooling_convert_none(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    # every architecture of rules/models.py is a generative model without a pooling head (not is_pooling_model)
    if f.serve.get("runner") != "pooling" or f.serve.get("convert") != "none":
        return []
    if f.model.architecture not in ARCHITECTURES:
        return []
    message = (
        "This model does not support `--runner pooling`. You can pass `--convert <embed|classify> to adapt it into "
        "a pooling model."
    )
    return [
        Hit(
            "runner-pooling-convert-none",
            f'runner = "pooling" with convert = "none" for a {f.model.architecture} model, which generates text; '
            f'vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", "runner"), *f.loc("serve", "convert"), *f.model.locations],
            'set convert = "embed" or "classify" (or leave it "auto") to adapt the model into a pooling model',
            role=f.role.name,
            order=order.built("ModelConfig", f.version, RUNNER_CHECK),
        )
    ]


# in `_EMBEDDING_MODELS` and not in `_TEXT_GENERATION_MODELS` of vllm/model_executor/models/registry.py, every
# release 0.27.0-0.33.0: pooling-only models (is_pooling_model, not is_text_generation_model)
POOLING_ONLY = frozenset({"BertModel", "RobertaModel", "XLMRobertaModel"})


@rule(
    "runner-embedding-model",
    Severity.ERROR,
    'runner = "generate" or "draft" for an embedding-only model (BERT, RoBERTa, XLM-RoBERTa)',
    source="vllm/config/model.py ModelConfig.__post_init__",
)
def runner_embedding_model(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    runner = f.serve.get("runner")
    if runner not in ("generate", "draft") or f.model.architecture not in POOLING_ONLY:
        return []
    message = (
        f"Embedding models do not support `--runner {runner}`. Use `--runner pooling` or `--runner auto` for "
        "embedding models."
    )
    return [
        Hit(
            "runner-embedding-model",
            f'runner = "{runner}" for a {f.model.architecture} model, which only embeds; vLLM {f.version} refuses to '
            f'start: "{message}"',
            [*f.loc("serve", "runner"), *f.model.locations],
            'set runner = "pooling" (or "auto")',
            role=f.role.name,
            order=order.built("ModelConfig", f.version, RUNNER_CHECK),
        )
    ]


@rule(
    "runner-generate-unsupported",
    Severity.ERROR,
    'runner = "generate" for an architecture vLLM\'s registry marks neither generative nor pooling',
    source="vllm/config/model.py ModelConfig.__post_init__",
)
def runner_generate_unsupported(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.serve.get("runner") != "generate":
        return []
    found = registered(f)
    if found is None:
        return []
    registry, arch = found
    generates = registry.flag(arch, "is_text_generation_model")
    # a pooling-only model fails the embedding-model check first (runner-embedding-model)
    if generates is not False or registry.flag(arch, "is_pooling_model") is not False:
        return []
    message = "This model does not support `--runner generate`."
    return [
        Hit(
            "runner-generate-unsupported",
            f'runner = "generate" for a {arch} model, which vLLM {f.version}\'s registry marks neither generative nor '
            f'pooling; vLLM {f.version} refuses to start: "{message}"',
            [*f.loc("serve", "runner"), *f.model.locations],
            'remove runner (or set it to "auto"): vLLM picks the runner this architecture supports',
            role=f.role.name,
            order=order.built("ModelConfig", f.version, RUNNER_CHECK),
        )
    ]
