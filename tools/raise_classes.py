"""How each `raise` of vLLM's config start-up is classified (used by `raise_inventory.py`; stdlib only).

`TABLE` is read top to bottom; the first entry whose function pattern matches the whole function name (`re.fullmatch`)
and whose message pattern is found in the normalised message (`re.search`, holes are `{}`) decides. A verdict is
`modelled:<rule id>` (a rule of `profilekit.rules.RULES`; `tests/test_raise_inventory.py` checks the ids),
`to-model`, `needs-config-json`, `gpu-or-platform` or `out-of-scope`; the reason is shown in the inventory.
A row no entry matches stops `raise_inventory.py`: a new release's new checks must be classified here.
"""

from __future__ import annotations

import re

ALL = r".*"
CONFIG_ONLY = "decidable from the options and environment alone"
CONFIG_JSON = "needs the model's config.json ({})"
INTERNAL = "internal consistency check of vLLM's own code, not reachable from a user's options"
DRAFT = "needs the draft model's checkpoint config (speculative_config.model), not the target's config.json"
PLATFORM = "depends on the platform vLLM runs on ({})"
HOST = "depends on what is installed on the host ({})"
DECLARED_GPU = "judged on the role's declared GPU ([hardware] gpu); with none declared, hardware-unknown names the GPUs that differ"
NOT_CUDA_OR_ROCM = (
    "raised only off CUDA and ROCm (current_platform.is_cuda_alike() or XPU holds on every GPU profilekit knows): "
    "never on a declarable GPU"
)

# (function, message, verdict, why)
TABLE: list[tuple[str, str, str, str]] = [
    # ---- modelled by profilekit's rules ----
    # rules/frontend.py: validate_parsed_serve_args and --device-ids
    (r"validate_parsed_serve_args", r"--enable-auto-tool-choice requires", "modelled:auto-tool-choice-parser", ""),
    (r"validate_parsed_serve_args", r"--enable-log-outputs requires", "modelled:log-outputs-requests", ""),
    (r"validate_parsed_serve_args", r"--sse-keep-alive-interval", "modelled:sse-keep-alive-interval", ""),
    (r"validate_parsed_serve_args", r"--enable-per-request-metrics", "modelled:per-request-metrics-log-stats", ""),
    (r"validate_grpc_port_arg", ALL, "modelled:grpc-port", ""),
    (r"validate_reasoning_effort_map", ALL, "modelled:reasoning-effort-map", ""),
    (r"validate_multi_port_external_lb_args", ALL, "modelled:data-parallel-multi-port-lb", ""),
    (r"EngineArgs\._resolve_device_ids", r"must not contain duplicates", "modelled:device-ids-duplicates", ""),
    (r"EngineArgs\._resolve_device_ids", r"must not mix integer IDs and UUIDs", "modelled:device-ids-mixed", ""),
    # rules/observability.py
    (r"ObservabilityConfig\._validate_tracing_config", ALL, "modelled:detailed-traces-endpoint", ""),
    (
        r"ObservabilityConfig\._validate_show_hidden_metrics_for_version",
        ALL,
        "modelled:show-hidden-metrics-version",
        "",
    ),
    (r"StructuredOutputsConfig\._validate_structured_output_config", ALL, "modelled:structured-outputs-backend", ""),
    # rules/quantpool.py
    (r"PoolerConfig\.__post_init__", r"Cannot set both|logit_sigma cannot be", "modelled:pooler-config", ""),
    (
        r"QuantizationConfigArgs\._validate_targets",
        r"is not a valid online shorthand name|is not a valid regex",
        "modelled:quantization-config",
        "reported as invalid-value: a field validator",
    ),
    (r"QuantizationConfigArgs\._validate_targets_exclusivity", ALL, "modelled:quantization-config", ""),
    # rules/outputs.py
    (
        r"MambaConfig\.validate_ssu_algorithm",
        r"only supported with the FlashInfer backend",
        "modelled:mamba-ssu-algorithm-backend",
        "",
    ),
    (r"ParallelConfig\.__post_init__", r"nnodes > 1 can only be set", "modelled:nnodes-executor-backend", ""),
    (
        r"VllmConfig\.__post_init__",
        r"Fast prefill optimization for KV sharing is not compatible with EAGLE",
        "modelled:kv-sharing-fast-prefill-eagle",
        "the method a layer writes; one vLLM infers from the draft model is left to vLLM",
    ),
    (r"VllmConfig\._verify_trace_replay_config", ALL, "modelled:trace-replay-v1", ""),
    # rules/modelfit.py, rules/moe_parallel.py: against the model's config.json
    (r"VllmConfig\.validate_nvfp4_kv_cache_with_mla", ALL, "modelled:nvfp4-kv-cache-mla", ""),
    (r"ParallelConfig\.__post_init__", r"dense models", "modelled:offline-data-parallel-dense", ""),
    (
        r"VllmConfig\.__post_init__",
        r"HiSparse is only supported for DSA models",
        "modelled:hisparse-unsupported",
        "index_topk in config.json; a model type whose config class defaults it is left to vLLM; the oracle's CPU "
        "platform refuses HiSparse first",
    ),
    (
        r"VllmConfig\.__post_init__",
        r"moonep all2all backend currently supports",
        "modelled:moonep-all2all",
        "quantization and dtype from the options or the config.json (the name a GPU host may upgrade a method to, "
        "e.g. gptq_marlin, is not modelled in the message)",
    ),
    (
        r"VllmConfig\._validate_profiler_config",
        r"Proton CUDA graph attribution requires",
        "modelled:proton-graph-attribution-v1",
        "the oracle's CPU platform refuses Proton first",
    ),
    (
        r"VllmConfig\.__post_init__|VllmConfig\._validate_profiler_config",
        r"The Proton profiler requires CUDA graphs|Proton PC sampling requires CUDA graphs|"
        r"Proton profiling with CUDA graphs requires",
        "modelled:proton-cuda-graphs",
        "the graph mode the options settle (0.30.0+ resolves it; a compilation mode or optimisation level is left to "
        "vLLM); the oracle's CPU platform refuses Proton first",
    ),
    (
        r"VllmConfig\._validate_v1_model_runner",
        ALL,
        "modelled:model-runner-v1-unsupported",
        "the features the options and config.json decide; with a DFlash or Parse 3.5 MTP draft the draft "
        "checkpoint decides part of the list and it is left to vLLM",
    ),
    # rules/hisparse.py
    (r"VllmConfig\.use_v2_model_runner", r"HiSparse requires Model Runner V2", "modelled:hisparse-model-runner-v1", ""),
    (
        r"VllmConfig\.__post_init__",
        r"HiSparse does not support (pipeline|decode context|cudagraph_mode=FULL)|HiSparse requires --scheduler",
        "modelled:hisparse-unsupported",
        "a GPU host's verdict: the oracle's CPU platform refuses HiSparse first",
    ),
    (
        r"VllmConfig\.__post_init__",
        r"HiSparse requires the hybrid KV cache manager",
        "modelled:hisparse-hybrid-kv-cache-manager",
        "disable_hybrid_kv_cache_manager = true; when vLLM decides (a connector without HMA), the connector class "
        "decides and it is left to vLLM",
    ),
    (
        r"VllmConfig\.__post_init__",
        r"Currently, async scheduling is only supported|Async scheduling is not compatible with disable_padded",
        "modelled:async-scheduling-speculative",
        "the method a layer writes; one vLLM infers from the draft model is left to vLLM",
    ),
    # rules/moe_parallel.py
    (
        r"VllmConfig\.__post_init__",
        r"moonep all2all backend (does not support EPLB|requires linear)",
        "modelled:moonep-all2all",
        "",
    ),
    (r"bind_passthrough_all2all_backend", r"dispatches and combines itself", "modelled:moe-backend-all2all", ""),
    (
        r"EngramConfig\.verify_parallel_config|EngramConfig\.verify_load_config",
        ALL,
        "modelled:engram-parallel",
        "an explicit engram_config; the oracle's dummy Llama config stands in for an Engram model",
    ),
    (
        r"ParallelConfig\._validate_parallel_config",
        r"Fault tolerance requires a single API server",
        "modelled:fault-tolerance-api-servers",
        "the count comes from vllm serve's --api-server-count (cli/serve.py), which the oracle does not run",
    ),
    (
        r"VllmConfig\.try_verify_and_update_config",
        r"To load a model from object storage",
        "modelled:object-storage-load-format",
        "the oracle serves a local folder, so it cannot show an object-store URL",
    ),
    (
        r"VllmConfig\._verify_kv_transfer_compat",
        r"does not support sleep mode",
        "modelled:kv-connector-sleep-mode",
        "the oracle's CPU platform refuses sleep mode first",
    ),
    # rules/scheduling.py
    (
        r"VllmConfig\.__post_init__",
        r"Async scheduling is not supported by the V1 model runner",
        "modelled:async-scheduling-v1-runner",
        "the method a layer writes; one vLLM infers from the draft model is left to vLLM",
    ),
    (
        r"VllmConfig\.__post_init__",
        r"does not support async scheduling yet",
        "modelled:async-scheduling-executor",
        "the Ray V1 executor (< 0.33.0); an executor class named by import path is left to vLLM; the oracle has no Ray",
    ),
    (
        r"VllmConfig\._set_max_num_scheduled_tokens",
        ALL,
        "modelled:speculative-scheduled-tokens",
        "the method a layer writes; DSpark's lookahead (0.33.0) depends on the draft's config and is left to vLLM",
    ),
    (
        r"VllmConfig\._set_cudagraph_sizes",
        r"customized max_cudagraph_capture_size",
        "modelled:cudagraph-capture-size-mismatch",
        "runs only where static CUDA graphs are supported (a CUDA host, not the CPU oracle)",
    ),
    (
        r"VllmConfig\._resolve_and_verify_engram_config",
        r"does not support DBO or microbatching",
        "modelled:engram-microbatching",
        "needs the model's config.json (architecture, engram_layer_ids)",
    ),
    # rules/exclusive.py
    (
        r"EngineArgs\.create_engine_config",
        r"are mutually exclusive|specified via both ir_op_priority",
        "modelled:flag-and-config-key",
        "",
    ),
    (
        r"EngineArgs\.create_engine_config",
        r"--kda-prefill-backend=fused is only available on ROCm",
        "modelled:kda-prefill-backend-platform",
        "on the declared GPU; with none declared profilekit judges a CUDA GPU host, and hardware-unknown names the "
        "ROCm GPUs where fused starts",
    ),
    (
        r"EngineArgs\.create_engine_config",
        r"--kda-prefill-backend=flashkda is only available on CUDA",
        "modelled:kda-prefill-backend-platform",
        DECLARED_GPU,
    ),
    # rules/archsupport.py and rules/runner.py
    (r"validate_flashinfer_moe_ep_model", ALL, "modelled:moe-backend-architecture", ""),
    (r"LoRAConfig\.verify_with_model_config", r"LoRA is not supported for", "modelled:lora-unsupported", ""),
    (
        r"VllmConfig\.__post_init__",
        r"Prefill context parallelism requires Model Runner V2",
        "modelled:prefill-context-parallel-v1",
        "",
    ),
    (
        r"VllmConfig\.__post_init__",
        r"--per-request-spec-decode-metrics requires",
        "modelled:spec-decode-metrics-speculative",
        "",
    ),
    (
        r"VllmConfig\._verify_sampling_replay_config",
        r"Model Runner V2|speculative|logits processors|processed_logprobs",
        "modelled:sampling-replay",
        "",
    ),
    (
        r"EngramConfig\.verify_model_config",
        r"EngramConfig requires a model",
        "modelled:engram-model",
        "the architecture decides; a supported one's layer ids are left to vLLM",
    ),
    # rules/configs.py
    (r"EngramConfig\._validate_shared_memory", ALL, "modelled:engram-config", ""),
    (
        r"ProfilerConfig\._validate_profiler_config",
        r"capture_torch_profiler is only|torch_profiler_activities|torch_profiler_dir|"
        r"only applicable when profiler is set to 'proton'|proton_profiler_dir must be|output requires proton_data|"
        r"proton_graph_attribution",
        "modelled:profiler-config",
        "",
    ),
    (r"ECTransferConfig\.__post_init__", r"Please specify ec_role", "modelled:ec-role-missing", ""),
    (
        r"VllmConfig\._resolve_mm_encoder_only",
        r"EC producer-only instance requires a multimodal model",
        "modelled:ec-producer-multimodal",
        "language-only architectures profilekit knows; others are left to vLLM",
    ),
    (
        r"VllmConfig\.__post_init__",
        r"--enable-return-routed-experts is incompatible with (pipeline|context|KV connectors)",
        "modelled:aux-output-compatibility",
        "",
    ),
    (
        r"VllmConfig\._verify_aux_output_compatibility",
        r"Model Runner V2|generate runners|MoE models|prefix caching|adaptive speculative|pipeline parallelism|"
        r"context parallelism|PD auxiliary output is not supported",
        "modelled:aux-output-compatibility",
        "",
    ),
    # rules/compilation.py and the generated constraints of CompilationConfig's before validators
    (
        r"CompilationConfig\.__post_init__",
        r"for custom op|custom_ops can contain|custom_ops cannot both|Invalid backend for piecewise|"
        r"must be positive|must be non-negative",
        "modelled:compilation-config",
        "",
    ),
    (r"CompilationConfig\.validate_mode_before", ALL, "modelled:invalid-value", ""),
    (r"KVTransferConfig\.__post_init__", r"Please specify kv_role", "modelled:kv-role-missing", ""),
    (r"KVTransferConfig\.__post_init__", r"Unsupported kv_role", "modelled:kv-role-invalid", ""),
    (r"VllmConfig\._verify_kv_transfer_compat", r"PYTORCH_CUDA_ALLOC_CONF", "modelled:kv-expandable-segments", ""),
    (
        r"VllmConfig\.__post_init__",
        r"requires the SSM cache to be float16",
        "modelled:mamba-stochastic-rounding-dtype",
        "",
    ),
    (r"VllmConfig\._validate_v2_model_runner", r"does not yet support", "modelled:model-runner-v2-unsupported", ""),
    (
        r"VllmConfig\.validate_mamba_cached_kernel",
        r"incompatible with KV connectors",
        "modelled:replayssm-kv-connector",
        "",
    ),
    (
        r"VllmConfig\.validate_mamba_cached_kernel",
        r"only supported for Nemotron-H|not supported for architecture",
        "modelled:replayssm-architecture",
        "",
    ),
    (r"VllmConfig\.validate_mamba_cached_kernel", r"buffer-len <= 16", "modelled:replayssm-buffer-len", ""),
    (
        r"VllmConfig\.validate_mamba_cached_kernel",
        r"Model Runner V1|VLLM_USE_V2_MODEL_RUNNER",
        "modelled:replayssm-model-runner",
        "",
    ),
    (
        r"VllmConfig\.validate_mamba_cached_kernel",
        r"speculative|RecoverSSM is only supported for Kimi",
        "modelled:replayssm-speculative",
        "",
    ),
    (
        r"VllmConfig\.validate_mamba_cached_kernel",
        r"RecoverSSM supports bfloat16/float32",
        "modelled:replayssm-stochastic-rounding",
        "",
    ),
    (
        r"VllmConfig\.validate_mamba_cached_kernel",
        r"prefix caching|cache-mode|cache modes",
        "modelled:replayssm-prefix-caching",
        "",
    ),
    (r"VllmConfig\.validate_mamba_cached_kernel", r"mamba-backend", "modelled:replayssm-backend", ""),
    (
        r"VllmConfig\.validate_mamba_cached_kernel",
        r"pipeline_parallel_size",
        "modelled:replayssm-pipeline-parallel",
        "",
    ),
    # cross-field checks (rules/modelcfg.py, parallel.py, experts.py, dataparallel.py, scheduler.py, cache.py,
    # speculative.py)
    (
        r"ModelConfig\.verify_with_parallel_config",
        r"Total number of attention heads",
        "modelled:attention-heads-tensor-parallel",
        "",
    ),
    (
        r"ModelConfig\.verify_with_parallel_config",
        r"Pipeline parallelism is not supported",
        "modelled:pipeline-parallel-unsupported",
        "",
    ),
    (
        r"ModelConfig\.verify_with_parallel_config",
        r"Decode context parallelism for GQA|exceeds the maximum supported value|query heads per KV head",
        "modelled:context-parallel-kv-heads",
        "",
    ),
    (
        r"ModelConfig\._verify_with_expert_parallelism",
        r"Number of experts",
        "modelled:expert-parallel-dense-model",
        "",
    ),
    (
        r"ParallelConfig\._validate_parallel_config",
        r"must be divisible by dcp_size|When PCP is enabled|PCP does not support data parallelism|dcp_comm_backend='a2a'",
        "modelled:context-parallel-size",
        "",
    ),
    (
        r"CudaPlatformBase\.check_and_update_config",
        r"PCP does not support data parallelism on CUDA",
        "modelled:context-parallel-size",
        "",
    ),
    (
        r"ParallelConfig\._validate_parallel_config",
        r"to use EPLB|EPLB requires tensor|num_redundant_experts is set",
        "modelled:expert-parallel-load-balancing",
        "",
    ),
    (r"ParallelConfig\._validate_parallel_config", r"require numa_bind=True", "modelled:numa-bind", ""),
    (
        r"ParallelConfig\._validate_numa_bind_cpus",
        r"entries must not be empty",
        "out-of-scope",
        "argparse turns an empty entry into None first, which ParallelConfig refuses as not a string",
    ),
    (
        r"ParallelConfig\._validate_numa_bind_(nodes|cpus)",
        ALL,
        "modelled:invalid-value",
        "a field validator: rules/parallel.py reports it as invalid-value, before numa-bind",
    ),
    (r"ParallelConfig\._verify_args", r"number of microbatches", "modelled:microbatching-thresholds", ""),
    (r"OffloadConfig\.validate_offload_config", ALL, "modelled:offload-prefetch-group", ""),
    (r"VllmConfig\._validate_batch_sharded_sampling", ALL, "modelled:batch-sharded-sampling", ""),
    (r"ParallelConfig\.__post_init__", r"--elastic-ep-max-dp-size must be", "modelled:elastic-expert-parallel", ""),
    (
        r"EPLBConfig\._validate_eplb_config",
        r"communicator is incompatible with async EPLB",
        "modelled:eplb-async-communicator",
        "",
    ),
    (
        r"EPLBConfig\._validate_eplb_config",
        r"only supported with the default policy|log_balancedness_interval must be greater than 0",
        "out-of-scope",
        "unreachable: `policy` is Literal['default'] and `log_balancedness_interval` has the field bound gt=0",
    ),
    (
        r"ParallelConfig\._validate_parallel_config",
        r"data_parallel_size_local \(",
        "modelled:data-parallel-size-local",
        "",
    ),
    (
        r"ParallelConfig\._validate_parallel_config",
        r"data_parallel_external_lb can only be set",
        "modelled:data-parallel-external-lb",
        "",
    ),
    (
        r"ParallelConfig\.__post_init__",
        r"Elastic EP is (only supported|not supported with pipeline|not compatible)",
        "modelled:elastic-expert-parallel",
        "",
    ),
    (
        r"ParallelConfig\.__post_init__",
        r"data_parallel_rank \(.*must be in the range",
        "modelled:data-parallel-rank",
        "",
    ),
    (r"ParallelConfig\._verify_args", r"nsight profiling", "modelled:ray-nsight", ""),
    (
        r"EngineArgs\.create_engine_config",
        r"Invalid data-parallel launch options|Fault tolerance requires external load balancer",
        "modelled:data-parallel-launch",
        "",
    ),
    (
        r"EngineArgs\.create_engine_config",
        r"Non-MoE models do not support external data parallel",
        "modelled:data-parallel-dense-model",
        "",
    ),
    (
        r"SchedulerConfig\.verify_max_model_len",
        r"is smaller than max_model_len",
        "modelled:max-num-batched-tokens-model-len",
        "",
    ),
    (
        r"SchedulerConfig\.verify_max_model_len",
        r"greater than or equal to max_num_seqs",
        "modelled:max-num-batched-tokens-seqs",
        "",
    ),
    (r"SchedulerConfig\.verify_max_model_len", r"max_num_active_seqs", "modelled:max-num-active-seqs", ""),
    (
        r"SchedulerConfig\.verify_max_model_len",
        r"long_prefill_token_threshold",
        "modelled:long-prefill-token-threshold",
        "",
    ),
    (
        r"VllmConfig\._reject_mismatched_float_kv_cache",
        r"is incompatible with dtype",
        "modelled:kv-cache-dtype-model-dtype",
        "",
    ),
    (
        r"VllmConfig\.validate_mamba_block_size",
        r"mamba-block-size can only be set",
        "modelled:mamba-block-size-prefix-caching",
        "",
    ),
    # rules/modelkind.py
    (r"_check_valid_dtype", r"does not support float16", "modelled:dtype-float16-model-type", ""),
    (r"ModelConfig\.validate_model_config_after", r"encoder-decoder", "modelled:prompt-embeds-encoder-decoder", ""),
    (r"EngineArgs\.create_engine_config", r"non multimodal model", "modelled:default-mm-loras-text-model", ""),
    (r"LoRAConfig\.verify_with_model_config", r"INKLING_MULTIMEM_AR", "modelled:inkling-lora-multimem", ""),
    (r"ModelConfig\.__post_init__", r"support `--runner pooling`", "modelled:runner-pooling-convert-none", ""),
    (r"ModelConfig\.__post_init__", r"Embedding models do not support", "modelled:runner-embedding-model", ""),
    # the raise's message is "{msg} To allow overriding ...", msg being "User-specified max_model_len ..."
    (
        r".*_get_and_verify_max_len",
        r"User-specified max_model_len|To allow overriding this maximum",
        "modelled:max-model-len-positions",
        "",
    ),
    (
        r"SpeculativeConfig\.__post_init__",
        r"provided but without speculative model",
        "modelled:speculative-draft-model",
        "",
    ),
    (r"SpeculativeConfig\.__post_init__", r"prompt_lookup_min=.* must be <=", "modelled:speculative-prompt-lookup", ""),
    (
        r"SpeculativeConfig\._verify_args",
        r"'tensor_parallel_size' is not a valid argument",
        "modelled:speculative-tensor-parallel-size",
        "",
    ),
    (
        r"SpeculativeConfig\._verify_args",
        r"num_speculative_tokens must be provided",
        "modelled:speculative-num-tokens",
        "",
    ),
    # rules/specargs.py
    (
        r"SpeculativeConfig\.__post_init__",
        r"method='custom_class' requires",
        "modelled:speculative-custom-class-model",
        "",
    ),
    (r"SpeculativeConfig\.__post_init__", r"index_share_for_mtp_iteration", "modelled:speculative-index-share-mtp", ""),
    (
        r"SpeculativeConfig\.__post_init__",
        r"Adaptive verification (only supported with DSpark|estimates)",
        "modelled:speculative-adaptive-verification",
        "",
    ),
    (
        r"SpeculativeConfig\._verify_args",
        r"draft_lm_head_quantization is not supported",
        "modelled:speculative-lm-head-quantization",
        "",
    ),
    (
        r"SpeculativeConfig\._verify_args|SpeculativeConfig\._resolve_synthetic_acceptance_rates",
        r"synthetic_acceptance|rejection_sample_method='synthetic'",
        "modelled:speculative-synthetic-acceptance",
        "",
    ),
    (r"SpeculativeConfig\._verify_args", r"use_heterogeneous_vocab", "modelled:speculative-heterogeneous-vocab", ""),
    (r"SpeculativeConfig\._verify_args", r"^FLy ", "modelled:speculative-fly", ""),
    (
        r"VllmConfig\._check_(supports_watermarking|watermarking_unsupported)",
        r"requires draft_sample_method|requires rejection_sample_method|Parallel speculative drafting|"
        r"Watermarking supports only|does not support speculative decoding",
        "modelled:speculative-watermarking",
        "",
    ),
    (
        r"VllmConfig\._check_watermarking_unsupported",
        r"Beam search is not supported",
        "out-of-scope",
        "raised per request (offline beam search passes beam_search=True), never at start-up",
    ),
    (
        r"VllmConfig\._check_supports_watermarking",
        r"DFlash2 and LiLiCorr",
        "out-of-scope",
        DRAFT + ": the drafter's architecture",
    ),
    (
        r"SpeculativeConfig\.__post_init__",
        r"xpress_topc is only supported by XPress|dspark_draft_topk is only supported by DSpark",
        "modelled:speculative-method-option",
        "",
    ),
    (
        r"SpeculativeConfig\._verify_and_get_draft_tp",
        r"cannot be other value than 1",
        "modelled:speculative-draft-tensor-parallel",
        "",
    ),
    (
        r"EngineArgs\.create_engine_config",
        r"Consider increasing max_num_batched_tokens or decreasing num_speculative_tokens",
        "modelled:speculative-lora-batched-tokens",
        "",
    ),
    (
        r"SpeculativeConfig\.__post_init__",
        r"dspark_draft_topk is only supported by Qwen3DSparkModel",
        "out-of-scope",
        DRAFT + ": the drafter's architectures",
    ),
    (
        r"SpeculativeConfig\.__post_init__",
        r"A speculative model was provided, but `num_speculative_tokens` was not provided",
        "out-of-scope",
        DRAFT + ": raised when the named draft's config has no n_predict",
    ),
    (
        r"SpeculativeConfig\.__post_init__",
        r"DSpark requires num_speculative_tokens >= dspark_block_size",
        "modelled:dspark-block-size",
        "the target's config.json when DSpark drafts from the target (a separate draft checkpoint's is vLLM's to read)",
    ),
    (
        r"SpeculativeConfig\.__post_init__",
        r"Transformers modeling backend does not support MTP for multimodal",
        "modelled:transformers-mtp-multimodal",
        "judged for model_impl = transformers (under auto the registry's class decides whether the backend is used)",
    ),
    (
        r"SpeculativeConfig\.__post_init__",
        r"Parse 3\.5 has only one trained MTP step",
        "modelled:parse-mtp-one-step",
        "the target's config.json: RadioMBartPrefixForCausalLM with decoder.causal_vision_prefix",
    ),
    (
        r"SpeculativeConfig\.__post_init__",
        r"MLA DSpark does not currently support decode context parallelism",
        "out-of-scope",
        DRAFT + ": the draft's architectures name K3DSparkModel, a class of the registry's speculative-decoding "
        "models, which a target's config.json names only when a draft checkpoint is served as the target",
    ),
    (
        r"SpeculativeConfig\._maybe_override_draft_max_model_len",
        r"target_max_model_len",
        "modelled:speculative-max-model-len",
        "the target's max_model_len as written, else derived from its config.json",
    ),
    (
        r"VllmConfig\._validate_adaptive_verification",
        r"compatible with LoRA|enforce_eager/cudagraph_mode=none|requires full CUDA graphs|"
        r"compatible with pipeline parallelism",
        "modelled:speculative-adaptive-engine",
        "the CUDA graph mode when enforce_eager or compilation_config.cudagraph_mode says it; vLLM's default is left",
    ),
    (
        r"SpeculativeConfig\._validate_suffix_decoding",
        r"suffix_decoding_",
        "modelled:speculative-suffix-decoding",
        "checked once arctic-inference imports (the oracle has none: unit tests only)",
    ),
    (
        r"SpeculativeConfig\._verify_args",
        r"Expected num_speculative_tokens to be greater than zero",
        "modelled:invalid-value",
        "the field bound gt=0 refuses it first (every release)",
    ),
    (
        r"SpeculativeConfig\.__post_init__",
        r"Either prompt_lookup_max or prompt_lookup_min must be provided",
        "out-of-scope",
        "unreachable: both unset takes the default 5 first, so the branches that raise it never see the other None",
    ),
    (
        r"EngineArgs\.create_speculative_config",
        r"and --speculative-config\[.*\] are mutually exclusive",
        "modelled:speculative-shorthand-conflict",
        "",
    ),
    (
        r"ModelConfig\.validate_model_config_after",
        r"max_model_len must be a positive integer",
        "modelled:invalid-value",
        "",
    ),
    (
        r"SpeculativeConfig\.__post_init__|SpeculativeConfig\.hf_config_override",
        r"Unsupported speculative method|DeepSeek V4\.1 has no classic-MTP|Inkling MTP currently|Inkling checkpoint does "
        r"not contain|mtp_layer_types must have",
        "modelled:speculative-mtp-model",
        "",
    ),
    # rules/options.py (value constraints and registries), rules/subconfigs.py, rules/configs.py,
    # rules/observability.py: the validators of the config families
    (r"CacheConfig\._validate_cache_dtype", ALL, "modelled:invalid-value", "the release's kv_cache_dtype registry"),
    (
        r"ModelConfig\._verify_quantization",
        r"Unknown quantization method",
        "modelled:invalid-value",
        "the release's quantization registry",
    ),
    (r"ModelConfig\._verify_quantization", r"is deprecated", "modelled:quantization-deprecated", ""),
    (r"LoRAConfig\.verify_with_kernel_config", ALL, "modelled:lora-moe-backend", ""),
    (r"QuantizationConfigArgs\._coerce_spec|_coerce_quant_key", ALL, "modelled:quantization-spec", ""),
    (r"QuantizationConfigArgs\._validate_targets", r"targets must be a dict", "modelled:quantization-spec", ""),
    (
        r"QuantizationConfigArgs\._validate_targets",
        r"targets keys must be strings",
        "out-of-scope",
        "unreachable: TOML and JSON keys are strings",
    ),
    (r"_raise_unsupported_error", ALL, "modelled:pipeline-parallel-executor", "EngineArgs._check_feature_supported"),
    (r"AttentionConfig\.validate_backend_per_kind_before", ALL, "modelled:attention-config", ""),
    (
        r"AttentionConfig\.__post_init__",
        r"use_fp4_indexer_cache=True|minimax_m3_indexer_cp",
        "modelled:attention-config",
        "",
    ),
    (r"EncoderCacheManagerConfig\.__post_init__", ALL, "modelled:ec-manager-config", ""),
    (r"WatermarkConfig\.validate_watermark_settings", r"philox keys", "modelled:watermark-key", ""),
    (r"LoRAConfig\._validate_lora_config", r"max_cpu_loras", "modelled:lora-max-cpu-loras", ""),
    (
        r"ObservabilityConfig\._reject_bool_histogram_bounds|ObservabilityConfig\._validate_custom_histogram_buckets",
        ALL,
        "modelled:histogram-buckets",
        "",
    ),
    (
        r"CompilationConfig\.validate_compile_cache_save_format",
        ALL,
        "out-of-scope",
        "unreachable: the field is Literal['binary', 'unpacked'], which refuses any other value first (invalid-value)",
    ),
    (
        r"ECTransferConfig\.__post_init__",
        r"Unsupported ec_role",
        "out-of-scope",
        "unreachable: ec_role is a Literal field, which refuses any other role first (invalid-value)",
    ),
    (
        r"MambaConfig\.validate_ssu_algorithm",
        r"Unknown Mamba SSU algorithm",
        "out-of-scope",
        "unreachable: --mamba-ssu-algorithm has argparse choices, which refuse any other name first (invalid-value)",
    ),
    (
        r"_get_and_verify_dtype",
        r"Unknown dtype",
        "out-of-scope",
        "unreachable: --dtype has argparse choices, all of them known dtypes (invalid-value refuses others)",
    ),
    (
        r"ModelConfig\.validate_model_config_after",
        r"tokenizer must be a string",
        "out-of-scope",
        "unreachable: the argument parser gives a string (profilekit refuses a layer's non-string as invalid-value)",
    ),
    (
        r"PoolerConfig\.reject_removed_parameters",
        ALL,
        "modelled:unknown-option",
        "PoolerConfig has no key normalize in any release: profilekit reports it as an unknown key",
    ),
    (
        r"_get_head_dtype",
        ALL,
        "modelled:speculative-head-dtype",
        "read at start-up only for an MTP/EAGLE draft with draft_lm_head_quantization: the MTP draft's head_dtype "
        "is the target's config.json key (an EAGLE draft checkpoint's is vLLM's to read)",
    ),
    # rules/multimodal.py and rules/options.py (`_multimodal_hits`): for a model whose config.json has an encoder
    (
        r"MultiModalConfig\._validate_mm_encoder_attn_backend",
        ALL,
        "modelled:invalid-value",
        "the value constraint of mm_encoder_attn_backend, judged for a multimodal config.json",
    ),
    (
        r"MultiModalConfig\._validate_multimodal_config",
        r"should only be set when",
        "modelled:mm-shm-cache-object-size",
        "",
    ),
    (
        r"MultiModalConfig\._validate_multimodal_config",
        r"require 'mm_encoder_attn_dtype'|cannot be used with 'mm_encoder_fp8_scale_path'",
        "modelled:mm-encoder-fp8-scale",
        "",
    ),
    (
        r"MultiModalConfig\._validate_multimodal_config",
        r"not found",
        "out-of-scope",
        "checks files on the serving host",
    ),
    (r"MultiModalConfig\.get_mm_processor_device_type", ALL, "modelled:mm-processor-device-invalid", ""),
    (
        r"ModelConfig\.verify_with_parallel_config",
        r"mm_tensor_ipc='torch_shm'",
        "modelled:mm-tensor-ipc-torch-shm-parallel",
        "",
    ),
    (r"VllmConfig\.__post_init__", r"torch_shm is known to fail", "modelled:mm-tensor-ipc-torch-shm-spawn", ""),
    (
        r"VllmConfig\.__post_init__",
        r"--language-model-only is incompatible",
        "modelled:language-model-only-mm-encoder-graphs",
        "",
    ),
    (
        r"MultiModalConfig\.validate_mm_processor_device",
        ALL,
        "modelled:mm-processor-device-accelerator",
        "judged as on a CUDA host; the CPU oracle's platform skips the check",
    ),
    # ---- internal assertions and runtime-only paths ----
    (r"VllmConfig\.__post_init__", r"must be set after applying optimization level defaults", "out-of-scope", INTERNAL),
    (r"ModelConfig\._verify_quantization", r"is an override but", "out-of-scope", INTERNAL),
    (r"get_field", ALL, "out-of-scope", INTERNAL),
    (r"VllmConfig\._check_supports_watermarking", r"Unsupported watermarking config", "out-of-scope", INTERNAL),
    (r"ModelConfig\.get_multimodal_config", ALL, "out-of-scope", INTERNAL),
    (
        r"ParallelConfig\._validate_parallel_config",
        r"_api_process_rank",
        "out-of-scope",
        "set by the API server launcher, not an option",
    ),
    (
        r"ParallelConfig\._verify_args",
        r"Unrecognized distributed executor backend",
        "out-of-scope",
        "the command line always gives a string (a name or an import path); only a Python caller passes another object",
    ),
    (
        r"bind_passthrough_all2all_backend",
        r"is only valid with a moe_backend",
        "out-of-scope",
        "the command line does not offer all2all_backend=passthrough (refused as invalid-value)",
    ),
    (r"PoolerConfig\.__post_init__", r"^\{\}$", "out-of-scope", INTERNAL),
    (r"SpeculativeConfig\.__post_init__", r"target_model_config must be present", "out-of-scope", INTERNAL),
    (r"ReasoningConfig\.initialize_token_ids", ALL, "out-of-scope", "needs the tokenizer"),
    # ---- the declared GPU ([hardware] gpu, gpus_per_node): rules/platforms.py, rules/host.py ----
    (
        r"VllmConfig\._get_quantization_config",
        r"not supported for the current GPU",
        "modelled:quantization-gpu-capability",
        DECLARED_GPU + "; each method's get_min_capability per release in rules/quant-capabilities.json",
    ),
    (
        r"VllmConfig\.__post_init__",
        r"HiSparse currently requires NVIDIA CUDA",
        "modelled:gpu-platform-unsupported",
        DECLARED_GPU,
    ),
    (
        r"VllmConfig\.(__post_init__|_validate_profiler_config)",
        r"Proton profiler currently supports NVIDIA CUDA only",
        "modelled:gpu-platform-unsupported",
        DECLARED_GPU,
    ),
    (
        r"ModelConfig\.verify_with_parallel_config",
        r"--enable-hc-sp currently requires CUDA$",
        "modelled:gpu-platform-unsupported",
        DECLARED_GPU,
    ),
    (
        r"MambaConfig\.__post_init__",
        r"Stochastic rounding for Mamba cache",
        "out-of-scope",
        "not reached by vllm serve: create_engine_config sets --enable-mamba-cache-stochastic-rounding on a copy of "
        "the default MambaConfig without running __post_init__ again, and no flag writes a whole mamba_config "
        "(shown by the oracle's GPU mode)",
    ),
    (r"VllmConfig\.__post_init__", r"ROCm DeepEP", "modelled:gpu-platform-unsupported", DECLARED_GPU),
    (
        r"ParallelConfig\.__post_init__",
        r"number of available GPUs",
        "modelled:host-gpu-count",
        "against CUDA_VISIBLE_DEVICES, else [hardware] gpus_per_node; vLLM checks it on CUDA only",
    ),
    (r"ModelConfig\.verify_with_parallel_config", r"requires CUDA or ROCm", "out-of-scope", NOT_CUDA_OR_ROCM),
    (
        r"ParallelConfig\._validate_parallel_config",
        r"load balancing is only supported on",
        "out-of-scope",
        NOT_CUDA_OR_ROCM,
    ),
    (r"LoRAConfig\._validate_lora_config", r"Dual CUDA streams", "out-of-scope", NOT_CUDA_OR_ROCM),
    (r"ModelConfig\.__post_init__", r"Sleep mode is not supported", "out-of-scope", NOT_CUDA_OR_ROCM),
    (
        r"ModelConfig\.__post_init__",
        r"cumem allocator is not supported",
        "gpu-or-platform",
        HOST.format("vLLM's cumem allocator extension, vllm.device_allocator.cumem"),
    ),
    # ---- the platform, the GPU, the host ----
    (
        ALL,
        r"current platform|CUDA platforms|NVIDIA CUDA|requires (NVIDIA )?CUDA\b(?! graphs)|only available on (CUDA|ROCm)|CUDA devices|compute capability|current GPU|CUDA-alike",
        "gpu-or-platform",
        PLATFORM.format("device type or compute capability"),
    ),
    (ALL, r"requires Triton", "gpu-or-platform", HOST.format("Triton")),
    (
        r"DeviceConfig\.__post_init__",
        ALL,
        "gpu-or-platform",
        HOST.format("the torch build and GPU driver vLLM detects its platform from"),
    ),
    (r"ParallelConfig\.__post_init__", r"requires the NIXL package", "gpu-or-platform", HOST.format("NIXL")),
    (r"ObservabilityConfig\._validate_otlp_traces_endpoint", ALL, "gpu-or-platform", HOST.format("OpenTelemetry")),
    (
        r"SpeculativeConfig\._validate_suffix_decoding",
        r"Arctic Inference",
        "gpu-or-platform",
        HOST.format("arctic-inference"),
    ),
    (r"CompilationConfig\.__post_init__", r"torch>=", "gpu-or-platform", HOST.format("the torch version")),
    (
        r"EngineArgs\._resolve_device_ids",
        r"out of range",
        "modelled:device-ids-out-of-range",
        "against the role's CUDA_VISIBLE_DEVICES; judged as on a CUDA or ROCm host (both read CUDA_VISIBLE_DEVICES), "
        "the CPU oracle's platform skips the check",
    ),
    (
        r"CudaPlatformBase\.check_and_update_config",
        ALL,
        "to-model",
        CONFIG_ONLY + " (CUDA hook; the CUDA host is the one profilekit judges for)",
    ),
    # ---- files and the network ----
    (
        r"MultiModalConfig\._validate_multimodal_config",
        r"not found",
        "out-of-scope",
        "checks files on the serving host",
    ),
    # rules/checkpoint.py: the checkpoint's quantization_config (config.json)
    (
        r"ModelConfig\._verify_quantization",
        r"does not match",
        "modelled:quantization-checkpoint-mismatch",
        "judged where no quantization method's override can reconcile the two (others are left to vLLM)",
    ),
    # ---- the draft model's own config ----
    (r"_validate_qwen3_omni_dspark", ALL, "out-of-scope", DRAFT),
    (r"SpeculativeConfig\.hf_config_override", ALL, "out-of-scope", DRAFT),
    (r"SpeculativeConfig\.verify_equal_vocab_size_if_draft_model", ALL, "out-of-scope", DRAFT),
    (r"SpeculativeConfig\.__post_init__", r"divisible by n_predict|draft vocabulary size", "out-of-scope", DRAFT),
    (r"SpeculativeConfig\._verify_args", r"n_predict parameter|head_dtype", "out-of-scope", DRAFT),
    (r"SpeculativeConfig\._maybe_override_draft_max_model_len", r"draft_max_model_len", "out-of-scope", DRAFT),
    # ---- needs the model's config.json ----
    (
        r"ModelConfig\.verify_with_parallel_config",
        r"attention heads",
        "needs-config-json",
        CONFIG_JSON.format("num_attention_heads"),
    ),
    (
        r"ModelConfig\.verify_with_parallel_config",
        r"KV heads|query heads",
        "needs-config-json",
        CONFIG_JSON.format("num_key_value_heads"),
    ),
    (
        r"ModelConfig\.verify_with_parallel_config",
        r"--enable-hc-sp requires PP=1",
        "modelled:hc-sp-pipeline-parallel",
        "for an architecture the generated registry facts mark hc-sp capable",
    ),
    (
        r"ModelConfig\.verify_with_parallel_config",
        r"hc-sp is not supported",
        "modelled:hc-sp-unsupported",
        "the generated registry facts (supports_hc_sp) of each release",
    ),
    (
        r"ModelConfig\.verify_with_parallel_config|VllmConfig\.__post_init__",
        r"mm_tensor_ipc='torch_shm'|torch_shm is known to fail|--language-model-only is incompatible",
        "needs-config-json",
        CONFIG_JSON.format("architecture: the multimodal config exists only for a multimodal model"),
    ),
    (
        r"ModelConfig\.verify_with_parallel_config",
        r"Pipeline parallelism|hc-sp is not supported",
        "needs-config-json",
        CONFIG_JSON.format("architecture; vLLM's model registry"),
    ),
    (
        r"ModelConfig\._verify_with_expert_parallelism",
        ALL,
        "needs-config-json",
        CONFIG_JSON.format("number of experts"),
    ),
    (
        r"VllmConfig\._get_quantization_config",
        r"is not supported for quantization method",
        "modelled:quantization-dtype-unsupported",
        "judged for fp8 (its activation dtypes are the same in every release) with a dtype a layer writes; other "
        "methods' activation dtypes are vLLM's to check",
    ),
    (
        r"_get_and_verify_max_len",
        ALL,
        "needs-config-json",
        CONFIG_JSON.format("max_position_embeddings and rope scaling"),
    ),
    (r"_check_valid_dtype", ALL, "needs-config-json", CONFIG_JSON.format("model_type")),
    (
        r"ModelConfig\.__post_init__",
        r"Cannot use --renderer-num-workers > 1",
        "modelled:renderer-workers-mm-cache-pooling",
        "multimodal from the generated registry facts; the runner as _get_runner_type resolves it (silent where a "
        "sentence-transformers model folder decides)",
    ),
    (
        r"ModelConfig\.__post_init__",
        r"Video pruning method",
        "modelled:video-pruning-method-unsupported",
        "the generated registry facts (supports_multimodal, supported_video_pruning_methods) of each release",
    ),
    (
        r"ModelConfig\.__post_init__",
        r"This model does not support `--runner generate`",
        "modelled:runner-generate-unsupported",
        "vLLM's own registry facts per release (tools/gen_registry.py)",
    ),
    (
        r"ModelConfig\.__post_init__",
        r"runner|Embedding models|Video pruning|pooling models",
        "needs-config-json",
        CONFIG_JSON.format("architecture; vLLM's model registry"),
    ),
    (
        r"ModelConfig\.validate_model_config_after",
        r"encoder-decoder",
        "needs-config-json",
        CONFIG_JSON.format("architecture"),
    ),
    (
        r"LoRAConfig\.verify_with_model_config",
        r"LoRA is not supported for",
        "needs-config-json",
        CONFIG_JSON.format("architecture; vLLM's model registry"),
    ),
    (r"validate_flashinfer_moe_ep_model", ALL, "needs-config-json", CONFIG_JSON.format("architecture")),
    (r"EngramConfig\.verify_model_config", ALL, "needs-config-json", CONFIG_JSON.format("Engram embeddings")),
    (
        r"SchedulerConfig\.verify_max_model_len",
        r"max_model_len",
        "needs-config-json",
        CONFIG_JSON.format("max_model_len defaults to the model's positions"),
    ),
    (
        r"VllmConfig\.validate_mamba_block_size",
        ALL,
        "needs-config-json",
        CONFIG_JSON.format("max_model_len; prefix caching defaults by model"),
    ),
    (r"VllmConfig\._reject_mismatched_float_kv_cache", ALL, "needs-config-json", CONFIG_JSON.format("torch_dtype")),
    (
        r"VllmConfig\._resolve_mm_encoder_only",
        ALL,
        "needs-config-json",
        CONFIG_JSON.format("architecture: multimodal or not"),
    ),
    (
        r"VllmConfig\.__post_init__",
        r"Hybrid KV cache manager was explicitly enabled",
        "modelled:hybrid-kv-cache-manager-unsupported",
        "attention_chunk_size in the config.json, with an EAGLE-like draft or chunked attention kept off by the env "
        "(judged as on a GPU host, whose platform supports the manager)",
    ),
    (
        r"VllmConfig\._verify_aux_output_compatibility",
        r"only supports MoE models|generate runners",
        "needs-config-json",
        CONFIG_JSON.format("experts; runner by architecture"),
    ),
    (
        r"VllmConfig\._verify_sampling_replay_config",
        r"diffusion models",
        "modelled:sampling-replay",
        "a diffusion model is one whose config.json sets canvas_length (ModelConfig.is_diffusion)",
    ),
    (
        r"SpeculativeConfig\.__post_init__",
        r"DeepSeek V4\.1|Inkling MTP|MLA DSpark",
        "needs-config-json",
        CONFIG_JSON.format("the target's architecture"),
    ),
    (
        r"EngineArgs\.create_engine_config",
        r"Non-MoE models|non multimodal model",
        "needs-config-json",
        CONFIG_JSON.format("experts; multimodal architecture"),
    ),
    (r"VllmConfig\._set_cudagraph_sizes", ALL, "to-model", CONFIG_ONLY),
    # ---- the options and the environment alone ----
    (
        r"LoRAConfig\.verify_with_model_config",
        r"INKLING_MULTIMEM_AR",
        "needs-config-json",
        CONFIG_JSON.format("architecture") + " and the environment",
    ),
    (r"ModelConfig\._verify_quantization", ALL, "to-model", CONFIG_ONLY + " (the release's quantization registry)"),
    (r"_get_and_verify_dtype|_get_head_dtype", ALL, "to-model", CONFIG_ONLY),
    (r"ModelConfig\.validate_model_config_after", ALL, "to-model", CONFIG_ONLY),
    (
        r"VllmConfig\._check_supports_watermarking|VllmConfig\._check_watermarking_unsupported",
        r"custom samplers",
        "out-of-scope",
        "raised only when the GPU model runner loads a model class with its own sampler (custom_sampler=True); "
        "VllmConfig's start-up call passes False",
    ),
    (
        r"(VllmConfig|ParallelConfig|EPLBConfig|SchedulerConfig|SpeculativeConfig|CompilationConfig|CacheConfig|"
        r"AttentionConfig|MambaConfig|LoRAConfig|ObservabilityConfig|OffloadConfig|PoolerConfig|ProfilerConfig|"
        r"QuantizationConfigArgs|StructuredOutputsConfig|MultiModalConfig|EngramConfig|ECTransferConfig|"
        r"EncoderCacheManagerConfig|WatermarkConfig|EngineArgs|ModelConfig)\.\w+",
        ALL,
        "to-model",
        CONFIG_ONLY,
    ),
    (
        r"_coerce_quant_key|bind_passthrough_all2all_backend|validate_grpc_port_arg|validate_parsed_serve_args|validate_reasoning_effort_map|_raise_unsupported_error",
        ALL,
        "to-model",
        CONFIG_ONLY,
    ),
]


def classify(function: str, message: str) -> tuple[str, str] | None:
    """(verdict, why) of one row, or None when no entry matches."""
    for func_pattern, message_pattern, verdict, why in TABLE:
        if re.fullmatch(func_pattern, function) and re.search(message_pattern, message):
            return verdict, why
    return None
