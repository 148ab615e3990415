"""Sampling outputs, metrics and kernel selections `create_engine_config()` and `VllmConfig.__post_init__` refuse.

Sources: `vllm/engine/arg_utils.py` `EngineArgs.create_engine_config` (`MambaConfig.validate_ssu_algorithm`
right after `--mamba-backend` is converted, every release; the `--kda-prefill-backend` platform check before
VllmConfig is built, 0.30.0 and later); `vllm/config/vllm.py` `VllmConfig._verify_sampling_replay_config`
(0.28.0 and later), the `--per-request-spec-decode-metrics` check of `__post_init__` (0.29.0 and later) and
`_validate_batch_sharded_sampling` (0.29.0 and later).

The `--kda-prefill-backend` check follows the role's GPU (`[hardware] gpu`): `fused` is refused off ROCm, `flashkda`
off CUDA. Where no GPU is declared profilekit judges a CUDA GPU host, as the oracle does (`fused` refused), and
`hardware-unknown` (rules/platforms.py) names the GPUs that would give the other verdict.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.errors import Location, Severity
from profilekit.rules.engine import STAGE_CONFIG_OBJECTS, STAGE_POST_INIT, Context, Hit, Order, rule
from profilekit.rules.facts import RoleFacts
from profilekit.rules.modelcfg import serve_int, shown
from profilekit.rules.scheduler import budget
from profilekit.vllm.constraints import load_values
from profilekit.vllm.versions import at_least

MSG_SSU = (
    "Mamba SSU algorithm selection is only supported with the FlashInfer backend. Please set `--mamba-backend "
    "flashinfer`, or omit `--mamba-ssu-algorithm`."
)
MSG_KDA_FUSED = "--kda-prefill-backend=fused is only available on ROCm."
MSG_KDA_FLASHKDA = "--kda-prefill-backend=flashkda is only available on CUDA."
MSG_SPEC_METRICS = (
    "--per-request-spec-decode-metrics requires speculative decoding to be enabled (via --speculative-config)."
)
MSG_REPLAY_LOGPROBS = (
    "sampling distribution replay requires logprobs_mode='processed_logprobs' so that returned logprobs are "
    "normalized over the same nucleus as the sampling mask"
)

# VllmConfig.__post_init__, against the steps rules/order.py names
SAMPLING_REPLAY = -10  # after verify_with_parallel_config, before the Mamba dtype check (5)
SPEC_DECODE_METRICS = 6  # after the Mamba dtype check, before the platform hook (7)
BATCH_SHARDED = (8, 2)  # right after the model runner check (8)


def _read_at(dest: str, version: str, fallback: int) -> int:
    values = load_values(version)
    found = values.first_read(dest) if values is not None else None
    return found if found is not None else fallback


def _hit(f: RoleFacts, rule_id: str, what: str, message: str, locs: list[Location], *, fix: str, at: Order) -> Hit:
    return Hit(
        rule_id, f'{what}; vLLM {f.version} refuses to start: "{message}"', locs, fix, role=f.role.name, order=at
    )


# vllm/config/mamba.py MambaSSUAlgorithm (every release 0.27.0-0.33.0)
SSU_ALGORITHMS = ("auto", "simple", "vertical", "horizontal")


@rule(
    "mamba-ssu-algorithm-backend",
    Severity.ERROR,
    "mamba_ssu_algorithm without mamba_backend = flashinfer",
    source="vllm/config/mamba.py MambaConfig.validate_ssu_algorithm",
)
def mamba_ssu_algorithm_backend(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    algorithm = f.serve.get("mamba_ssu_algorithm")
    backend = f.serve.get("mamba_backend", "triton")
    if algorithm not in SSU_ALGORITHMS or not isinstance(backend, str) or backend.lower() == "flashinfer":
        return []  # another name fails the argument parser's choices first (invalid-value)
    written = f"mamba_backend = {shown(backend)}" if "mamba_backend" in f.serve else "mamba_backend (default triton)"
    return [
        _hit(
            f,
            "mamba-ssu-algorithm-backend",
            f"mamba_ssu_algorithm = {shown(algorithm)} with {written}",
            MSG_SSU,
            [*f.loc("serve", "mamba_ssu_algorithm"), *f.loc("serve", "mamba_backend")],
            fix='set mamba_backend = "flashinfer", or remove mamba_ssu_algorithm',
            at=(STAGE_CONFIG_OBJECTS, _read_at("mamba_ssu_algorithm", f.version, 22), 1),
        )
    ]


@rule(
    "kda-prefill-backend-platform",
    Severity.ERROR,
    "kda_prefill_backend = fused (ROCm only) on a CUDA GPU, or flashkda (CUDA only) on a ROCm GPU",
    releases=">=0.30.0",
    source="vllm/engine/arg_utils.py EngineArgs.create_engine_config",
)
def kda_prefill_backend_platform(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    backend = f.serve.get("kda_prefill_backend")
    gpu = f.gpu
    if backend == "fused" and (gpu is None or gpu.platform == "cuda"):
        on = f"on {gpu.name} (CUDA)" if gpu is not None else "on a CUDA GPU host"
        message, fix = (
            MSG_KDA_FUSED,
            'set kda_prefill_backend = "auto", "triton", "flashkda" or "flashinfer" (fused needs ROCm)',
        )
    elif backend == "flashkda" and gpu is not None and gpu.platform != "cuda":
        on = f"on {gpu.name} (ROCm)"
        message, fix = MSG_KDA_FLASHKDA, 'set kda_prefill_backend = "auto", "triton" or "fused" (flashkda needs CUDA)'
    else:
        return []
    return [
        _hit(
            f,
            "kda-prefill-backend-platform",
            f"kda_prefill_backend = {shown(backend)} {on}",
            message,
            [*f.loc("serve", "kda_prefill_backend"), *f.loc("hardware", "gpu")],
            fix=fix,
            at=(STAGE_CONFIG_OBJECTS, _read_at("kda_prefill_backend", f.version, 32), 1),
        )
    ]


def _speculative(f: RoleFacts) -> bool:
    return f.num_spec != 0


def _adaptive(f: RoleFacts) -> bool:
    spec: Any = f.serve.get("speculative_config")
    return _speculative(f) and isinstance(spec, dict) and spec.get("enable_adaptive_verification") is True


@rule(
    "spec-decode-metrics-speculative",
    Severity.ERROR,
    "per_request_spec_decode_metrics without speculative decoding",
    releases=">=0.29.0",
    source="vllm/config/vllm.py VllmConfig.__post_init__",
)
def spec_decode_metrics_speculative(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    metrics = f.serve.get("per_request_spec_decode_metrics")
    if metrics in (None, "none") or _speculative(f):
        return []
    return [
        _hit(
            f,
            "spec-decode-metrics-speculative",
            f"per_request_spec_decode_metrics = {shown(metrics)} without speculative decoding",
            MSG_SPEC_METRICS,
            f.loc("serve", "per_request_spec_decode_metrics"),
            fix='set speculative_config, or per_request_spec_decode_metrics = "none"',
            at=(STAGE_POST_INIT, SPEC_DECODE_METRICS),
        )
    ]


def _diffusion(f: RoleFacts) -> bool:
    """`ModelConfig.is_diffusion`: the model's config.json sets `canvas_length` (a discrete diffusion LM)."""
    config = f.model.config
    return isinstance(config, dict) and config.get("canvas_length") is not None


def _replay_failure(f: RoleFacts) -> tuple[str, str, list[str]] | None:
    """`_verify_sampling_replay_config`: (what, vLLM's message, keys) of its first failure; None: passes or unknown."""
    if f.v2_model_runner is None:
        return None
    if not f.v2_model_runner:
        return (
            "return_sampling_mask = true on Model Runner V1",
            "sampling distribution replay requires Model Runner V2",
            ["return_sampling_mask"],
        )
    if not at_least(f.version, "0.32.0") and _speculative(f):
        return (
            "return_sampling_mask = true with speculative decoding",
            "sampling distribution replay does not support speculative decoding",
            ["return_sampling_mask", "speculative_config"],
        )
    if at_least(f.version, "0.32.0") and _adaptive(f):
        return (
            "return_sampling_mask = true with adaptive verification",
            "sampling distribution replay with speculative decoding requires fixed verification boundaries; "
            "disable adaptive verification",
            ["return_sampling_mask", "speculative_config"],
        )
    if _diffusion(f):
        return (
            f"return_sampling_mask = true for the diffusion model {f.model.architecture} (config.json canvas_length)",
            "sampling distribution replay does not support diffusion models",
            ["return_sampling_mask"],
        )
    if f.serve.get("logits_processors"):
        return (
            "return_sampling_mask = true with logits_processors",
            "sampling distribution replay does not support custom logits processors",
            ["return_sampling_mask", "logits_processors"],
        )
    mode = f.serve.get("logprobs_mode", "raw_logprobs")
    if mode != "processed_logprobs":
        written = (
            f"logprobs_mode = {shown(mode)}" if "logprobs_mode" in f.serve else 'logprobs_mode "raw_logprobs" (default)'
        )
        return (
            f"return_sampling_mask = true with {written}",
            MSG_REPLAY_LOGPROBS,
            ["return_sampling_mask", "logprobs_mode"],
        )
    return None


@rule(
    "sampling-replay",
    Severity.ERROR,
    "return_sampling_mask (sampling distribution replay) with settings it does not support",
    releases=">=0.28.0",
    source="vllm/config/vllm.py VllmConfig._verify_sampling_replay_config",
)
def sampling_replay(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.serve.get("return_sampling_mask") is not True:
        return []
    found = _replay_failure(f)
    if found is None:
        return []
    what, message, keys = found
    locs = [loc for key in keys for loc in f.loc("serve", key)]
    return [
        _hit(
            f,
            "sampling-replay",
            what,
            message,
            locs,
            fix='set logprobs_mode = "processed_logprobs" and drop what vLLM names, or remove return_sampling_mask',
            at=(STAGE_POST_INIT, SAMPLING_REPLAY),
        )
    ]


def _batch_sharded_blockers(f: RoleFacts) -> list[str] | None:
    """`_validate_batch_sharded_sampling`'s reasons; None when an input is unknown."""
    tp = serve_int(f, "tensor_parallel_size", 1)
    logprobs = serve_int(f, "max_logprobs", 20)
    if tp is None or logprobs is None:
        return None
    blockers: list[str] = []
    if tp <= 1:
        blockers.append("tensor_parallel_size is 1, so there is nothing to shard")
    else:
        b = budget(f)
        if b is None:
            return None
        if b.seqs < tp:
            blockers.append(f"max_num_seqs ({b.seqs}) is below tensor_parallel_size ({tp})")
    if logprobs < 0:
        blockers.append("max_logprobs is -1, allowing vocab-size logprob requests")
    if at_least(f.version, "0.30.0") and f.serve.get("return_sampling_mask") is True:
        blockers.append("return_sampling_mask is set and the batch-sharded gather does not forward sampling masks")
    if not at_least(f.version, "0.33.0") and _adaptive(f):
        blockers.append(
            "it does not yet work with adaptive verification, which decides the per-request logits counts on the "
            "GPU, where the CPU-side shard plan cannot see them"
        )
    return blockers


@rule(
    "batch-sharded-sampling",
    Severity.ERROR,
    "enable_batch_sharded_sampling where vLLM cannot shard the sampler",
    releases=">=0.29.0",
    source="vllm/config/vllm.py VllmConfig._validate_batch_sharded_sampling",
)
def batch_sharded_sampling(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if f.serve.get("enable_batch_sharded_sampling") is not True:
        return []
    blockers = _batch_sharded_blockers(f)
    if not blockers:
        return []
    message = (
        "Batch-sharded sampling was explicitly enabled via the --enable-batch-sharded-sampling flag, but is not "
        f"supported in this configuration for the following reason(s): {'; '.join(blockers)}."
    )
    keys = ["enable_batch_sharded_sampling", "tensor_parallel_size", "max_num_seqs", "max_logprobs"]
    return [
        _hit(
            f,
            "batch-sharded-sampling",
            "enable_batch_sharded_sampling = true",
            message,
            [loc for key in keys for loc in f.loc("serve", key)],
            fix="remove enable_batch_sharded_sampling, or remove what vLLM names",
            at=(STAGE_POST_INIT, *BATCH_SHARDED),
        )
    ]


# EngramConfig._NGRAM_LAYER_FIELDS (0.30.0-0.33.0): the architectures with n-gram embeddings
ENGRAM_ARCHITECTURES = frozenset({"DeepseekV41ForCausalLM", "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration"})
ENGRAM = -45  # VllmConfig.__post_init__: after the float KV-cache check (-50), before verify_with_parallel_config


def _engram_message(version: str) -> str:
    base = "EngramConfig requires a model with supported Engram embeddings"
    if version == "0.30.0":
        return f"{base}, non-empty n-gram layer ids, and CUDA."
    if version == "0.31.0":
        return f"{base}, non-empty n-gram layer ids, and a CUDA-alike device (CUDA or ROCm)."
    return f"{base} and non-empty n-gram layer ids."


@rule(
    "engram-model",
    Severity.ERROR,
    "engram_config for a model without Engram (n-gram) embeddings",
    releases=">=0.30.0",
    source="vllm/config/engram.py EngramConfig.verify_model_config",
)
def engram_model(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    if not isinstance(f.serve.get("engram_config"), dict):
        return []
    arch = f.model.architecture
    if arch is None or arch in ENGRAM_ARCHITECTURES:
        return []  # a supported architecture still needs its layer ids in config.json: left to vLLM
    return [
        _hit(
            f,
            "engram-model",
            f"engram_config for a {arch} model",
            _engram_message(f.version),
            [*f.loc("serve", "engram_config"), *f.model.locations],
            fix="remove engram_config: only DeepSeek-V4.1 and Qwen4-Exp models have Engram embeddings",
            at=(STAGE_POST_INIT, ENGRAM),
        )
    ]
