#!/usr/bin/env python3
"""A seeded corpus of layer compositions around the ReplaySSM and KV-connector rules, and vLLM's messages
mapped to profilekit rule ids (DESIGN section 6).

The verdict agreement suite (tests/oracle/test_verdicts.py) writes each case's layers into one profile
repository, composes the stack with profilekit, asks profilekit for its verdict, renders the argv and env,
and asks vLLM's real `create_engine_config()` (the oracle) for its own.

Each case varies: the architecture (Nemotron-H, Llama, Qwen3, Kimi Linear) and how profilekit learns it,
`use_replayssm`, the mamba backend, prefix caching on/off/unset, the Mamba cache mode, the ReplaySSM
buffer length, speculative decoding, every connector form (explicit roles, MultiConnector, the offload
flags with native/simple/lmcache backends, a missing role or connector name, unknown names), HMA,
pipeline parallelism, and the env vars VLLM_USE_V2_MODEL_RUNNER, VLLM_USE_SIMPLE_KV_OFFLOAD and
PYTORCH_CUDA_ALLOC_CONF. The values are spread over one to three layers, with overrides and `unset`s, so
composition is exercised too.

Usage: python3 tools/verdict_corpus.py 0.33.0 --count 5 (prints the cases as JSON).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from verdict_common import Case, split_layers

ARCHITECTURES = {
    "NemotronHForCausalLM": 0.5,
    "KimiLinearForCausalLM": 0.2,
    "LlamaForCausalLM": 0.15,
    "Qwen3ForCausalLM": 0.15,
}
# how profilekit learns the architecture: declared in [model], or from the well-known model id table
WELL_KNOWN_IDS = {
    "NemotronHForCausalLM": "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
    "LlamaForCausalLM": "meta-llama/Llama-3.2-1B",
    "Qwen3ForCausalLM": "Qwen/Qwen3-0.6B",
    "KimiLinearForCausalLM": "moonshotai/Kimi-Linear-48B-A3B-Instruct",
}


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def _pick(rng: random.Random, weighted: dict[Any, float]) -> Any:
    keys = list(weighted)
    return rng.choices(keys, weights=[weighted[k] for k in keys])[0]


def _connector(rng: random.Random, version: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """(serve keys, extra serve keys, env) for one connector form."""
    form = _pick(
        rng,
        {
            "none": 0.34,
            "explicit": 0.2,
            "multi": 0.07,
            "offload": 0.13,
            "offload+explicit": 0.05,
            "missing-role": 0.04,
            "unknown": 0.04,
            "role-only": 0.03,
            "bad-role": 0.02,
            "offload-explicit-connector": 0.08,
        },
    )
    serve: dict[str, Any] = {}
    env: dict[str, str] = {}
    role = rng.choice(["kv_producer", "kv_consumer", "kv_both"])
    if form == "explicit":
        name = rng.choice(["NixlConnector", "LMCacheConnectorV1", "ExampleConnector", "MooncakeConnector"])
        serve["kv_transfer_config"] = {"kv_connector": name, "kv_role": role}
        if name == "NixlConnector" and rng.random() < 0.5:
            serve["kv_transfer_config"]["kv_load_failure_policy"] = "fail"
    elif form == "offload-explicit-connector":
        name = rng.choice(["OffloadingConnector", "SimpleCPUOffloadConnector"])
        serve["kv_transfer_config"] = {
            "kv_connector": name,
            "kv_role": "kv_both",
            "kv_connector_extra_config": {"cpu_bytes_to_use": 1 << 30},
        }
    elif form == "multi":
        serve["kv_transfer_config"] = {
            "kv_connector": "MultiConnector",
            "kv_role": rng.choice(["kv_both", "kv_producer"]),
            "kv_connector_extra_config": {
                "connectors": [
                    {"kv_connector": "NixlConnector", "kv_role": role},
                    {
                        "kv_connector": "OffloadingConnector",
                        "kv_role": "kv_both",
                        "kv_connector_extra_config": {"cpu_bytes_to_use": 1 << 30},
                    },
                ]
            },
        }
    elif form in ("offload", "offload+explicit"):
        serve["kv_offloading_size"] = rng.choice([1, 4, 16])
        backend = _pick(rng, {None: 0.4, "native": 0.4, "lmcache": 0.2})
        if backend is not None:
            serve["kv_offloading_backend"] = backend
        if rng.random() < 0.4:
            env["VLLM_USE_SIMPLE_KV_OFFLOAD"] = rng.choice(["0", "1"])
        if form == "offload+explicit":
            serve["kv_transfer_config"] = {"kv_connector": "NixlConnector", "kv_role": role}
    elif form == "missing-role":
        serve["kv_transfer_config"] = {"kv_connector": rng.choice(["NixlConnector", "OffloadingConnector"])}
    elif form == "unknown":
        name = rng.choice(["SharedStorageConnector", "P2pNcclConnector", "NixlConector"])
        serve["kv_transfer_config"] = {"kv_connector": name, "kv_role": role}
    elif form == "role-only":
        serve["kv_transfer_config"] = {"kv_role": role}
    elif form == "bad-role":
        serve["kv_transfer_config"] = {"kv_connector": "NixlConnector", "kv_role": "kv_sender"}
    if "kv_transfer_config" in serve and rng.random() < 0.15:
        serve["disable_hybrid_kv_cache_manager"] = rng.choice([True, False])
    return serve, {}, env


def generate(version: str, count: int, seed: int) -> list[Case]:
    """`count` cases for `version`; the same arguments always give the same cases."""
    rng = random.Random(f"{seed}-{version}")
    before_032 = _version_key(version) < (0, 32, 0)
    cases: list[Case] = []
    for n in range(count):
        arch = _pick(rng, ARCHITECTURES)
        serve: dict[str, Any] = {}
        env: dict[str, str] = {}
        model: dict[str, Any] = {}
        files: dict[str, str] = {}
        source = _pick(rng, {"declared": 0.7, "well-known": 0.2, "config.json": 0.1})
        if source == "declared":
            serve["model"] = f"dummy/{arch}"
            model["architecture"] = arch
        elif source == "well-known":
            serve["model"] = WELL_KNOWN_IDS[arch]
        else:
            serve["model"] = f"dummy/{arch}"
            model["config"] = f"models/{arch}/config.json"
            files[model["config"]] = json.dumps({"architectures": [arch]}) + "\n"
        serve["max_model_len"] = 512
        replay = _pick(rng, {True: 0.85, False: 0.1, None: 0.05})
        if replay is not None:
            serve["use_replayssm"] = replay
        backend = _pick(
            rng, {None: 0.35, "triton": 0.2, "flashinfer": 0.3, "cpu": 0.08, "FlashInfer": 0.05, "bogus": 0.02}
        )
        if backend is not None:
            serve["mamba_backend"] = backend
        pc = _pick(rng, {None: 0.4, True: 0.3, False: 0.3})
        if pc is not None:
            serve["enable_prefix_caching"] = pc
        modes = {None: 0.6, "align": 0.15, "none": 0.1, "all": 0.15 if before_032 else 0.03}
        mode = _pick(rng, modes)
        if mode is not None:
            serve["mamba_cache_mode"] = mode
        buffer = _pick(rng, {None: 0.5, 1: 0.05, 2: 0.1, 4: 0.1, 8: 0.05, 16: 0.08, 17: 0.06, 32: 0.06})
        if buffer is not None:
            serve["replayssm_buffer_len"] = buffer
        spec = _pick(rng, {None: 0.55, 1: 0.1, 2: 0.1, 3: 0.1, 5: 0.08, 15: 0.04, 16: 0.03})
        if spec is not None:
            serve["speculative_config"] = {
                "method": "ngram",
                "num_speculative_tokens": spec,
                "prompt_lookup_max": 4,
                "prompt_lookup_min": 2,
            }
        if arch == "KimiLinearForCausalLM" and rng.random() < 0.2:
            serve["pipeline_parallel_size"] = 2
        if rng.random() < 0.06:
            serve["enable_mamba_cache_stochastic_rounding"] = True
            if rng.random() < 0.6:
                serve["mamba_ssm_cache_dtype"] = "float16"
        kv_serve, _extra, kv_env = _connector(rng, version)
        serve.update(kv_serve)
        env.update(kv_env)
        v2 = _pick(rng, {None: 0.45, "0": 0.35, "1": 0.2})
        if v2 is not None:
            env["VLLM_USE_V2_MODEL_RUNNER"] = v2
        alloc = _pick(
            rng, {None: 0.87, "expandable_segments:True": 0.08, "expandable_segments:False,max_split_size_mb:512": 0.05}
        )
        if alloc is not None:
            env["PYTORCH_CUDA_ALLOC_CONF"] = alloc
        roles: dict[str, Any] = {}
        if rng.random() < 0.12:
            roles = _pd_roles(rng, serve)
        cid = f"c{n:05d}"
        layers, stack = split_layers(rng, cid, serve=serve, env=env, model=model, roles=roles)
        cases.append(
            Case(
                f"{version}/{cid}",
                arch,
                stack,
                layers,
                {"serve": serve, "env": env, "model": model, "roles": roles},
                files,
            )
        )
    return cases


def _pd_roles(rng: random.Random, serve: dict[str, Any]) -> dict[str, Any]:
    """Prefill and decode roles with their own connector (and a proxy command role)."""
    serve.pop("kv_transfer_config", None)
    serve.pop("kv_offloading_size", None)
    serve.pop("kv_offloading_backend", None)
    name = rng.choice(["NixlConnector", "NixlConnector", "LMCacheConnectorV1"])
    roles: dict[str, Any] = {}
    for role, kv_role, port in (("prefill", "kv_producer", 8100), ("decode", "kv_consumer", 8200)):
        kv: dict[str, Any] = {"kv_connector": name, "kv_role": _pick(rng, {kv_role: 0.85, "kv_both": 0.15})}
        # each role declared where it is defined (docs/ROLES.md): split_layers keeps a role's table in one layer
        table: dict[str, Any] = {"kind": "vllm", "serve": {"port": port, "kv_transfer_config": kv}}
        if rng.random() < 0.3:
            table["env"] = {"VLLM_USE_V2_MODEL_RUNNER": rng.choice(["0", "1"])}
        roles[role] = table
    if rng.random() < 0.5:
        roles["proxy"] = {"kind": "command", "command": ["vllm-router", "--port", "8192"]}
    return roles


# ---- vLLM's messages and the rule ids they belong to (DESIGN section 6; vllm-facts.md 1.2, 1.3a) -----

MESSAGE_RULES: list[tuple[str, str]] = [
    # argparse and parse-time config validation
    (r"unrecognized arguments", "unknown-option"),
    (r"invalid choice", "invalid-value"),
    (r"Unknown Mamba SSU backend", "invalid-value"),
    # --device-ids: a list of names reaches the platform's device_control_id_to_physical_device_id
    # (EngineArgs._resolve_device_ids): CUDA looks a name up as a GPU UUID (the GPU oracle answers as NVML for its
    # declared devices), ROCm refuses every name
    (r"no GPU has UUID|Non-integer device ID", "device-ids-unknown"),
    (r"Please specify kv_role when kv_connector is set", "kv-role-missing"),
    (r"Unsupported kv_role|kv_role\s+Input should be", "kv-role-invalid"),
    (r"Stochastic rounding for Mamba cache requires the SSM cache to be float16", "mamba-stochastic-rounding-dtype"),
    (r"Model Runner V2 does not yet support", "model-runner-v2-unsupported"),
    (r"Model Runner V1 does not support: ", "model-runner-v1-unsupported"),
    (r"Prefill context parallelism requires Model Runner V2", "prefill-context-parallel-v1"),
    (r"The Transformers implementation of '\w+' is not compatible with vLLM", "transformers-backend-incompatible"),
    (r"LoRA is not supported for \w+ \(", "lora-unsupported"),
    (r"speculative_max_model_len=\d+ cannot be larger than target_max_model_len", "speculative-max-model-len"),
    (r"is not supported for quantization method \w+\. Supported dtypes", "quantization-dtype-unsupported"),
    (r"Quantization method specified in the model config \(.*\) does not match", "quantization-checkpoint-mismatch"),
    (r"is only supported for DeepSeek-V4 models", "moe-backend-architecture"),
    (r"Unknown vLLM environment variable detected", "unknown-env-var"),
    (r"Attention backend 'XFORMERS' has been removed", "invalid-value"),
    (r"'mm_shm_cache_max_object_size_mb' should only be set when", "mm-shm-cache-object-size"),
    (r"'mm_encoder_fp8_scale_path' and 'mm_encoder_fp8_scale_save_path' require", "mm-encoder-fp8-scale"),
    (r"'mm_encoder_fp8_scale_save_path' cannot be used with", "mm-encoder-fp8-scale"),
    (r'Invalid "device" in mm_processor_kwargs', "mm-processor-device-invalid"),
    (r"Cannot run the multi-modal processor on", "mm-processor-device-accelerator"),
    (r"mm_tensor_ipc='torch_shm' is not supported with", "mm-tensor-ipc-torch-shm-parallel"),
    (r"torch_shm is known to fail without VLLM_WORKER_MULTIPROC_METHOD", "mm-tensor-ipc-torch-shm-spawn"),
    (r"--language-model-only is incompatible with cudagraph_mm_encoder", "language-model-only-mm-encoder-graphs"),
    # config classes' field constraints and registries (rules/options.py, vllm/constraints.py); after the
    # kv_role pattern, which rules/kv.py words itself
    (r"Unexpected keyword argument", "unknown-option"),
    (r"Input should be (greater|less) than|Input should be a multiple of", "invalid-value"),
    (r"Input should be (a valid|an object|a dictionary or an instance of)", "invalid-value"),
    (r"Input should be ('|-?\d)", "invalid-value"),  # Literal and enum fields
    (r"(String|List|Set|Tuple|Dictionary) should have at (least|most)", "invalid-value"),
    (r"Field required", "invalid-value"),  # a config class's key without a default
    (r"Invalid kv_cache_dtype", "invalid-value"),
    # CompilationConfig's before validators: an unknown mode name; an unknown cudagraph_mode name escapes
    # pydantic as a bare KeyError of the upper-cased name (vllm_rule prefixes the exception's type)
    (r"Invalid compilation mode: ", "invalid-value"),
    (r"(?m)^KeyError: '[^'\n]*'$", "invalid-value"),
    # ParallelConfig's field validators (rules/parallel.py numa-bind reports them as invalid-value)
    (r"numa_bind_(nodes|cpus) (must not be empty|must contain non-negative|entries must|ranges must)", "invalid-value"),
    (r"data_parallel_backend can only be ray or mp", "invalid-value"),  # an assert before ParallelConfig
    (r"Unknown quantization method", "invalid-value"),
    (r"Unknown attention backend: '", "invalid-value"),  # AttentionBackendEnum[name.upper()]
    (r"Unknown MLA prefill backend: '", "invalid-value"),  # MLAPrefillBackendEnum[name.upper()]
    (r"Unknown config format `", "invalid-value"),  # get_config_parser
    (r"max_model_len must be a positive integer", "invalid-value"),  # ModelConfig.validate_model_config_after
    # Executor.get_class: a backend name that is neither built in nor a dotted class path
    (r"not enough values to unpack \(expected 2, got 1\)", "invalid-value"),
    (r"Reasoning parser '.*' not found|invalid reasoning parser", "invalid-value"),
    (r"invalid tool call parser", "invalid-value"),
    # VllmConfig.__post_init__
    (r"Unsupported connector type", "kv-connector-unknown"),
    (r"Connector name is not set in KVTransferConfig", "kv-connector-missing"),
    (r"incompatible with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "kv-expandable-segments"),
    # validate_mamba_cached_kernel, every release 0.27.0-0.33.0
    (r"only supported for Nemotron-H models", "replayssm-architecture"),
    (r"not supported for architecture", "replayssm-architecture"),
    (r"FlashInfer ReplaySSM requires --replayssm-buffer-len <= 16", "replayssm-buffer-len"),
    (r"--use-replayssm does not support speculative decoding", "replayssm-speculative"),
    (r"RecoverSSM is only supported for Kimi-K3 KDA", "replayssm-speculative"),
    (r"speculative decoding does not support prefix caching", "replayssm-speculative"),
    (r"speculative decoding requires --mamba-cache-mode none", "replayssm-speculative"),
    (r"speculative decoding requires --mamba-backend flashinfer", "replayssm-speculative"),
    (r"requires --replayssm-buffer-len >= 1 \+ num_speculative_tokens", "replayssm-speculative"),
    (r"RecoverSSM supports bfloat16/float32", "replayssm-stochastic-rounding"),
    (r"RecoverSSM supports only none and align Mamba cache modes", "replayssm-prefix-caching"),
    (r"supports prefix caching only in align mode", "replayssm-prefix-caching"),
    (r"FlashInfer ReplaySSM does not support --mamba-cache-mode align yet", "replayssm-prefix-caching"),
    (r"FlashInfer ReplaySSM does not support prefix caching yet", "replayssm-prefix-caching"),
    (r"RecoverSSM requires --mamba-backend triton", "replayssm-backend"),
    (r"requires --mamba-backend triton or flashinfer", "replayssm-backend"),
    (r"requires --mamba-backend triton", "replayssm-backend"),
    (r"Triton ReplaySSM requires Model Runner V1", "replayssm-model-runner"),
    (r"RecoverSSM with (align mode|prefix caching) requires VLLM_USE_V2_MODEL_RUNNER=1", "replayssm-model-runner"),
    (r"RecoverSSM currently requires pipeline_parallel_size=1", "replayssm-pipeline-parallel"),
    (r"--use-replayssm is incompatible with KV connectors", "replayssm-kv-connector"),
    # ParallelConfig.__post_init__ on a GPU host (the CPU oracle never reaches it)
    (r"is larger than the number of available GPUs", "host-gpu-count"),
    # cross-field checks from configuration and the model's config.json (issue 8; rules/modelcfg.py, parallel.py,
    # dataparallel.py, scheduler.py, cache.py, speculative.py)
    (
        r"Total number of attention heads \(\d+\) must be divisible by tensor parallel size",
        "attention-heads-tensor-parallel",
    ),
    (r"Pipeline parallelism is not supported for this model", "pipeline-parallel-unsupported"),
    (r"Decode context parallelism for GQA/MQA requires", "context-parallel-kv-heads"),
    (r"`--decode-context-parallel-size` \(\d+\) exceeds the maximum supported value", "context-parallel-kv-heads"),
    (r"number of query heads per KV head \(\d+\) must be divisible", "context-parallel-kv-heads"),
    (r"tp_size=\d+ must be divisible by dcp_size=", "context-parallel-size"),
    (r"When PCP is enabled, DCP must be disabled", "context-parallel-size"),
    (r"PCP does not support data parallelism (on (CUDA|ROCm) )?yet", "context-parallel-size"),
    (r"dcp_comm_backend='a2a' requires decode_context_parallel_size > 1", "context-parallel-size"),
    (r"enable_expert_parallel must be True to use EPLB", "expert-parallel-load-balancing"),
    (r"EPLB requires tensor, prefill-context, or data parallelism", "expert-parallel-load-balancing"),
    (r"num_redundant_experts is set to \d+ but EPLB is not enabled", "expert-parallel-load-balancing"),
    (r"Invalid data-parallel launch options", "data-parallel-launch"),
    (r"Fault tolerance requires external load balancer mode", "data-parallel-launch"),
    (r"Non-MoE models do not support external data parallel mode", "data-parallel-dense-model"),
    (r"data_parallel_rank \(-?\d+\) must be in the range", "data-parallel-rank"),
    (r"data_parallel_size_local \(\d+\) must be <= data_parallel_size", "data-parallel-size-local"),
    (r"data_parallel_external_lb can only be set when data_parallel_size > 1", "data-parallel-external-lb"),
    (r"User-specified max_model_len \(\d+\) is greater than the derived max_model_len", "max-model-len-positions"),
    (r"--mamba-block-size can only be set with --enable-prefix-caching", "mamba-block-size-prefix-caching"),
    # rules/modelkind.py
    (r"The model type '\w+' does not support float16", "dtype-float16-model-type"),
    (r"--enable-prompt-embeds is not supported with encoder-decoder models", "prompt-embeds-encoder-decoder"),
    (r"Default modality-specific LoRA\(s\) were provided for a non multimodal model", "default-mm-loras-text-model"),
    (r"Inkling LoRA requires INKLING_MULTIMEM_AR=0", "inkling-lora-multimem"),
    (r"This model does not support `--runner pooling`", "runner-pooling-convert-none"),
    (r"Embedding models do not support `--runner \w+`", "runner-embedding-model"),
    (r"This model does not support `--runner generate`", "runner-generate-unsupported"),
    (r"--enable-hc-sp is not supported for this model", "hc-sp-unsupported"),
    (r"--enable-hc-sp requires PP=1", "hc-sp-pipeline-parallel"),
    (r"Video pruning method '\w+' is not supported by", "video-pruning-method-unsupported"),
    (r"Cannot use --renderer-num-workers > 1 with the multimodal processor cache", "renderer-workers-mm-cache-pooling"),
    (r"Hybrid KV cache manager was explicitly enabled but is not supported", "hybrid-kv-cache-manager-unsupported"),
    (r"^Unknown dtype: ", "speculative-head-dtype"),
    (r"DSpark requires num_speculative_tokens >= dspark_block_size", "dspark-block-size"),
    (r"Parse 3\.5 has only one trained MTP step", "parse-mtp-one-step"),
    (r"The Transformers modeling backend does not support MTP for multimodal models", "transformers-mtp-multimodal"),
    (r"max_num_batched_tokens \(\d+\) is smaller than max_model_len", "max-num-batched-tokens-model-len"),
    (r"max_num_batched_tokens \(\d+\) must be greater than or equal to max_num_seqs", "max-num-batched-tokens-seqs"),
    (r"max_num_active_seqs \(\d+\) cannot be greater than max_num_seqs", "max-num-active-seqs"),
    (r"long_prefill_token_threshold \(\d+\) cannot be greater than the max_model_len", "long-prefill-token-threshold"),
    (r'kv_cache_dtype="\w+" is incompatible with dtype=', "kv-cache-dtype-model-dtype"),
    (r"num_speculative_tokens was provided but without speculative model", "speculative-draft-model"),
    (r"prompt_lookup_min=\d+ must be <= prompt_lookup_max=", "speculative-prompt-lookup"),
    (r"num_speculative_tokens must be provided with speculative model", "speculative-num-tokens"),
    (r"method='custom_class' requires 'model' to contain", "speculative-custom-class-model"),
    (r"index_share_for_mtp_iteration is only supported with method='mtp'", "speculative-index-share-mtp"),
    (
        r"Adaptive verification (only supported with DSpark|estimates per-position acceptance)",
        "speculative-adaptive-verification",
    ),
    (r"draft_lm_head_quantization is not supported for method", "speculative-lm-head-quantization"),
    (
        r"synthetic_acceptance_(rates|length)[ /].*(only valid with|must (have|be)|entries must)|"
        r"rejection_sample_method='synthetic' requires exactly one",
        "speculative-synthetic-acceptance",
    ),
    (
        r"use_heterogeneous_vocab (only works|currently only supports|is not compatible)",
        "speculative-heterogeneous-vocab",
    ),
    (
        r"(Speculative decoding with watermarking requires|Parallel speculative drafting is not supported with "
        r"watermarking|Watermarking supports only (dflash|autoregressive)|watermarking algorithm does not support "
        r"speculative decoding)",
        "speculative-watermarking",
    ),
    (
        r"xpress_topc is only supported by XPress|dspark_draft_topk is only supported by DSpark",
        "speculative-method-option",
    ),
    (
        r"speculative_draft_tensor_parallel_size=\d+ cannot be other value than 1",
        "speculative-draft-tensor-parallel",
    ),
    (
        r"Consider increasing max_num_batched_tokens or decreasing num_speculative_tokens",
        "speculative-lora-batched-tokens",
    ),
    (
        r"Adaptive verification (is not currently compatible with (LoRA|enforce_eager|pipeline parallelism)|requires full CUDA graphs)",
        "speculative-adaptive-engine",
    ),
    (r"suffix_decoding_\w+=\S+ must be (>=|in \[0, 1\])", "speculative-suffix-decoding"),
    (r"FLy (is not compatible with method|requires (num_speculative_tokens|fly_window_size))", "speculative-fly"),
    (r"'tensor_parallel_size' is not a valid argument in the speculative_config", "speculative-tensor-parallel-size"),
    (r"Unsupported speculative method: 'mtp'", "speculative-mtp-model"),
    (r"The Inkling checkpoint does not contain MTP weights", "speculative-mtp-model"),
    (r"mtp_layer_types must have one entry per MTP layer", "speculative-mtp-model"),
    (r"DeepSeek V4\.1 has no classic-MTP draft", "speculative-mtp-model"),
    (
        r"--spec-(method|model|tokens) and --speculative-config\['\w+'\] are mutually exclusive",
        "speculative-shorthand-conflict",
    ),
    (r"numa_bind_nodes and numa_bind_cpus require numa_bind=True", "numa-bind"),
    (
        r"Elastic EP is (only supported with enable_eplb|not supported with pipeline|not compatible with)"
        r"|--elastic-ep-max-dp-size must be greater than or equal to",
        "elastic-expert-parallel",
    ),
    (r"Unable to use nsight profiling unless workers run with Ray", "ray-nsight"),
    (r"Number of experts in the model must be greater than 0 when expert parallelism", "expert-parallel-dense-model"),
    (r"communicator is incompatible with async EPLB", "eplb-async-communicator"),
    (r"Microbatching currently only supports the deepep_low_latency", "microbatching-all2all-backend"),
    # the platform checks of the declared GPU (rules/platforms.py)
    (r"is not supported for the current GPU\. Minimum capability", "quantization-gpu-capability"),
    (r"quantization is currently not supported in rocm", "quantization-rocm-unsupported"),
    (r"Bfloat16 is only supported on GPUs with compute capability", "bfloat16-gpu-capability"),
    (r"HiSparse currently requires NVIDIA CUDA", "gpu-platform-unsupported"),
    (r"The Proton profiler currently supports NVIDIA CUDA only", "gpu-platform-unsupported"),
    (r"--enable-hc-sp currently requires CUDA$", "gpu-platform-unsupported"),
    (r"Async scheduling is not compatible with ROCm DeepEP", "gpu-platform-unsupported"),
    (r"Maximum cudagraph size should be greater than or equal to 1", "max-cudagraph-capture-size-zero"),
    (r"Unrecognized size type in compile_sizes", "compile-sizes-name"),
    (r"dbo_decode_token_threshold and dbo_prefill_token_threshold must be at least", "microbatching-thresholds"),
    (r"offload_num_in_group \(\d+\) must be <= offload_group_size", "offload-prefetch-group"),
    (r"offload_prefetch_step \(-?\d+\) must be >= 1 when prefetch offloading", "offload-prefetch-group"),
    (
        r"Chunked prefill is required for (Mamba prefix caching|mamba cache mode 'align')",
        "mamba-prefix-caching-chunked-prefill",
    ),
    # validate_parsed_serve_args and the front end (rules/frontend.py)
    (r"--enable-auto-tool-choice requires --tool-call-parser", "auto-tool-choice-parser"),
    (r"--reasoning-effort-map (must be a JSON object|has unknown efforts)", "reasoning-effort-map"),
    (r"--enable-log-outputs requires --enable-log-requests", "log-outputs-requests"),
    (r"--sse-keep-alive-interval must be a non-negative integer", "sse-keep-alive-interval"),
    (r"--enable-per-request-metrics requires engine statistics logging", "per-request-metrics-log-stats"),
    (r"--grpc-port (requires|is incompatible|must)|--grpc and --grpc-port are mutually exclusive", "grpc-port"),
    (
        r"--data-parallel-multi-port-external-lb (does not|currently|manages|cannot|requires)|"
        r"--ssl-keyfile and --ssl-certfile must be provided together|"
        r"--data-parallel-size-local cannot exceed|--data-parallel-size must be divisible by --data-parallel-size-local",
        "data-parallel-multi-port-lb",
    ),
    (r"--device-ids must not contain duplicates", "device-ids-duplicates"),
    (r"--device-ids must not mix integer IDs and UUIDs", "device-ids-mixed"),
    (r"--device-ids index \d+ is out of range", "device-ids-out-of-range"),
    # ObservabilityConfig and StructuredOutputsConfig (rules/observability.py)
    (r"Invalid version: ", "show-hidden-metrics-version"),
    (r"collect_detailed_traces requires `--otlp-traces-endpoint`", "detailed-traces-endpoint"),
    (
        r"disable_any_whitespace is only supported for xgrammar|disable_additional_properties is only supported",
        "structured-outputs-backend",
    ),
    # PoolerConfig and QuantizationConfigArgs validators, resolve_quantization_config (rules/quantpool.py)
    (r"Cannot set both `pooling_type` and `(seq|tok)_pooling_type`|logit_sigma cannot be 0", "pooler-config"),
    (r"targets\[.*\] = .* is not a valid online shorthand name|targets key .* is not a valid regex", "invalid-value"),
    (
        r"quantization_config\.targets is mutually exclusive with|quantization_config is only supported when quantization",
        "quantization-config",
    ),
    # sampling outputs, metrics and kernel selections (rules/outputs.py)
    (r"Mamba SSU algorithm selection is only supported with the FlashInfer backend", "mamba-ssu-algorithm-backend"),
    (r"--kda-prefill-backend=(fused|flashkda) is only available on (ROCm|CUDA)", "kda-prefill-backend-platform"),
    (r"nnodes > 1 can only be set when distributed executor backend", "nnodes-executor-backend"),
    (r"Fast prefill optimization for KV sharing is not compatible with EAGLE", "kv-sharing-fast-prefill-eagle"),
    (r"trace replay requires Model Runner V2", "trace-replay-v1"),
    (
        r"Currently, async scheduling is only supported with|Async scheduling is not compatible with "
        r"disable_padded_drafter_batch",
        "async-scheduling-speculative",
    ),
    (r"Proton CUDA graph attribution requires the V2 model runner", "proton-graph-attribution-v1"),
    # async scheduling, the speculative token budget, CUDA graph sizes, Engram microbatching (rules/scheduling.py)
    (r"Async scheduling is not supported by the V1 model runner with", "async-scheduling-v1-runner"),
    (r"` does not support async scheduling yet", "async-scheduling-executor"),
    (
        r"based on the speculative decoding settings, which does not allow any tokens|VllmConfig (received "
        r"max_num_scheduled_tokens but it )?does not have enough slots",
        "speculative-scheduled-tokens",
    ),
    (r"customized max_cudagraph_capture_size\(=\d+\) should be consistent", "cudagraph-capture-size-mismatch"),
    (r"DeepSeek V4.1 Engram does not support DBO or microbatching", "engram-microbatching"),
    # HiSparse (rules/hisparse.py)
    (r"HiSparse requires Model Runner V2", "hisparse-model-runner-v1"),
    (
        r"HiSparse does not support (pipeline parallelism|decode context parallelism|cudagraph_mode=FULL)|"
        r"HiSparse requires --scheduler-reserve-full-isl|HiSparse is only supported for DSA models with index_topk",
        "hisparse-unsupported",
    ),
    (r"HiSparse requires the hybrid KV cache manager", "hisparse-hybrid-kv-cache-manager"),
    # Proton beside CUDA graphs (rules/proton.py)
    (
        r"The Proton profiler requires CUDA graphs to be disabled|Proton PC sampling requires CUDA graphs to be "
        r"disabled|Proton profiling with CUDA graphs requires proton_graph_attribution",
        "proton-cuda-graphs",
    ),
    (
        r"(attention_backend|enable_flashinfer_autotune|cudagraph_capture_sizes|max_cudagraph_capture_size) and "
        r"\w+\.\w+ are mutually exclusive|specified via both ir_op_priority and KernelConfig",
        "flag-and-config-key",
    ),
    (r"--per-request-spec-decode-metrics requires speculative decoding", "spec-decode-metrics-speculative"),
    (
        r"sampling distribution replay (requires|does not support (speculative|custom logits|diffusion)|with speculative)",
        "sampling-replay",
    ),
    (r"Batch-sharded sampling was explicitly enabled", "batch-sharded-sampling"),
    (r"EngramConfig requires a model with supported Engram embeddings", "engram-model"),
    (r"(dp_shared_memory|use_thp) requires cpu_offload=True", "engram-config"),
    # ProfilerConfig, ECTransferConfig, AuxOutput (rules/configs.py)
    (
        r"(torch_profiler_activities|torch_profiler_dir|capture_torch_profiler) is only applicable when profiler|"
        r"only applicable when profiler is set to 'proton'|torch_profiler_activities must not contain duplicates|"
        r"(torch_profiler_dir|proton_profiler_dir) must be set when profiler is|"
        r"proton_profiler_dir must be a local directory|output requires proton_data=|"
        r"proton_graph_attribution (requires proton_data|is incompatible with periodic_flushing)",
        "profiler-config",
    ),
    (r"Please specify ec_role when ec_connector is set", "ec-role-missing"),
    (
        r"Unknown KV cache group kind|use_fp4_indexer_cache=True conflicts|minimax_m3_indexer_cp requires",
        "attention-config",
    ),
    (r"manager_config requires encoder_cache_manager_cls", "ec-manager-config"),
    (r"philox keys must fit in 64 bits", "watermark-key"),
    (r"The quantization method %s is deprecated", "quantization-deprecated"),
    (r"Pipeline Parallelism without Ray distributed executor", "pipeline-parallel-executor"),
    (r"LoRA is not supported with moe_backend=", "lora-moe-backend"),
    (
        r"unknown quantization name|does not define a (linear|moe) spec|"
        r"argument --quantization-config: invalid _optional_type value",
        "quantization-spec",
    ),
    (r"max_cpu_loras \(\d+\) must be >= max_loras", "lora-max-cpu-loras"),
    (r"custom_histogram_buckets(\[.*?\])?: (unknown bucket family|bounds? |bucket list)", "histogram-buckets"),
    (r"Parameter `normalize` was removed", "unknown-option"),
    # CompilationConfig.__post_init__ and VllmConfig._set_compile_ranges (rules/compilation.py)
    (
        r"Invalid syntax '.*' for custom op|custom_ops can contain only one base mode|"
        r"custom_ops cannot both enable and disable|Invalid backend for piecewise compilation|"
        r"All (decoder_replay_cudagraph_capture_sizes|encoder_cudagraph_token_budgets) must be positive|"
        r"encoder_cudagraph_max_(vision_items|frames)_per_batch must be non-negative|Empty module name",
        "compilation-config",
    ),
    (r"Invalid compile range endpoint: ", "compile-range-endpoint"),
    (r"An EC producer-only instance requires a multimodal model", "ec-producer-multimodal"),
    (
        r"AuxOutput Connector (requires|only supports)|--enable-return-routed-experts is incompatible with "
        r"(adaptive|pipeline parallelism|context parallelism|KV connectors)|PD auxiliary output is not supported",
        "aux-output-compatibility",
    ),
    # rules/moe_parallel.py
    (
        r"The moonep all2all backend (does not support EPLB|requires linear expert placement|currently supports)",
        "moonep-all2all",
    ),
    # the model served (rules/modelfit.py)
    (r"nvfp4 KV cache is not supported with MLA", "nvfp4-kv-cache-mla"),
    (r"Offline data parallel mode is not supported/useful for dense models", "offline-data-parallel-dense"),
    (r"dispatches and combines itself and cannot be paired with all2all_backend", "moe-backend-all2all"),
    (
        r"dp_shared_memory requires (data_parallel_size > 1|load_format)|dp_shared_memory is not supported with "
        r"elastic EP|Engram embedding_across_dp is not supported with elastic EP",
        "engram-parallel",
    ),
    (r"Fault tolerance requires a single API server process", "fault-tolerance-api-servers"),
    (r"^\w+ does not support sleep mode\.", "kv-connector-sleep-mode"),
    (r"To load a model from object storage \(S3/GCS/Azure\), 'load_format' must be", "object-storage-load-format"),
]


def rule_for_message(message: str) -> str | None:
    """The profilekit rule id of a vLLM error message, or None when no rule claims it."""
    for pattern, rule_id in MESSAGE_RULES:
        if re.search(pattern, message):
            return rule_id
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20261129)
    args = parser.parse_args(argv)
    json.dump([c.as_dict() for c in generate(args.version, args.count, args.seed)], sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
