"""Where the cross-field checks run in vLLM's start-up: the second element of `Hit.order` per stage.

`EngineArgs.create_engine_config()` (vllm/engine/arg_utils.py, every release 0.27.0-0.33.0) builds, in this
order, the ModelConfig, the CacheConfig, the data-parallel launch options, the ParallelConfig, the
SpeculativeConfig and the SchedulerConfig, and only then converts enum-typed options such as
`mamba_backend`; those conversions use small non-negative numbers (rules/__init__.py), so the config
objects built before them take negative ones. `VllmConfig.__post_init__` then rejects a mismatched float
KV-cache dtype and runs `ModelConfig.verify_with_parallel_config` before the Mamba checks (5 and up, so
these take negative numbers), and
its model validators run `validate_mamba_block_size` before `validate_mamba_cached_kernel` (0 and up).
"""

from __future__ import annotations

# STAGE_CONFIG_OBJECTS
MODEL_CONFIG = -600  # ModelConfig: max_model_len against the model's positions
DATA_PARALLEL_LAUNCH = -500  # the data-parallel launch block before ParallelConfig (+ the raise's index)
PARALLEL_POST_INIT = -420  # ParallelConfig.__post_init__ (elastic EP, then the data_parallel_rank range)
PARALLEL_VALIDATORS = -400  # ParallelConfig._validate_parallel_config (+ the raise's index), then _verify_args (+20)
SPECULATIVE_CONFIG = -300  # SpeculativeConfig.__post_init__ (+ the raise's index)
SCHEDULER_CONFIG = -200  # SchedulerConfig.verify_max_model_len (+ the raise's index)

# STAGE_POST_INIT (the Mamba checks of rules/mamba.py and rules/runner.py use 5 and up)
MAMBA_MODEL_HOOK = -60  # try_verify_and_update_config: MambaModelConfig.verify_and_update_config
FLOAT_KV_CACHE = -50  # VllmConfig._reject_mismatched_float_kv_cache (0.33.0)
ATTENTION_HEADS = -40  # ModelConfig.verify_with_parallel_config: heads vs tensor parallelism
EXPERT_PARALLEL_MODEL = -35  # ... expert parallelism vs a model without experts
PIPELINE_SUPPORT = -30  # ... pipeline parallelism vs SupportsPP
CONTEXT_PARALLEL_HEADS = -20  # ... decode context parallelism vs KV heads
CUDA_PLATFORM_HOOK = 7  # CudaPlatformBase.check_and_update_config: after the Mamba dtype check, before the runner

# STAGE_VALIDATORS
MAMBA_BLOCK_SIZE = -10  # VllmConfig.validate_mamba_block_size
