"""Where the cross-field checks run in vLLM's start-up: `Hit.order` for each of them.

`EngineArgs.create_engine_config()` (vllm/engine/arg_utils.py) builds the config objects one after the other;
the release's values document ranks them (`construction_ranks`, odd numbers, shared with the value
constraints of rules/options.py, which fail at a config's own rank). A check a config makes once its fields
are valid (`__post_init__`, its model validators) runs at that rank + 1; the data-parallel launch block runs
right before ParallelConfig is built (rank - 1). A third number orders the checks of one such step.

`VllmConfig.__post_init__` then runs its model hook, rejects a mismatched float KV-cache dtype and runs
`ModelConfig.verify_with_parallel_config`, all before the Mamba checks of rules/mamba.py (5 and up, hence
the negative numbers here); its model validators run `validate_mamba_block_size` before
`validate_mamba_cached_kernel` (0 and up).
"""

from __future__ import annotations

from profilekit.rules.engine import STAGE_CONFIG_OBJECTS, Order
from profilekit.vllm.constraints import load_values

# 0.33.0's ranks, for a build that ships no values document
_FALLBACK_RANKS = {
    "ModelConfig": 5,
    "CacheConfig": 9,
    "ParallelConfig": 11,
    "SpeculativeConfig": 13,
    "SchedulerConfig": 19,
    "OffloadConfig": 31,
}

# sub-steps of ParallelConfig once its fields are valid
PARALLEL_POST_INIT = 0  # __post_init__: elastic EP (+0), then the data_parallel_rank range (+5)
PARALLEL_VALIDATORS = 10  # _validate_parallel_config (+ the raise's index)
PARALLEL_VERIFY_ARGS = 40  # _verify_args (nsight)


def _rank(config: str, version: str) -> int:
    values = load_values(version)
    found = values.construction_rank(config) if values is not None else None
    return found if found is not None else _FALLBACK_RANKS[config]


def built(config: str, version: str, step: int = 0) -> Order:
    """A check `config` makes once its fields are valid (its `__post_init__` or a model validator)."""
    return (STAGE_CONFIG_OBJECTS, _rank(config, version) + 1, step)


def fields(config: str, version: str) -> Order:
    """`config`'s field constraints and field validators, checked as it is built (rules/options.py's rank)."""
    return (STAGE_CONFIG_OBJECTS, _rank(config, version))


def before(config: str, version: str, step: int = 0) -> Order:
    """A check `create_engine_config` makes right before it builds `config`."""
    return (STAGE_CONFIG_OBJECTS, _rank(config, version) - 1, step)


# right before SpeculativeConfig: create_speculative_config merges --spec-* (after ParallelConfig's own checks)
SPECULATIVE_SHORTHANDS = 1000

# STAGE_POST_INIT (the Mamba checks of rules/mamba.py and rules/runner.py use 5 and up)
MAMBA_MODEL_HOOK = -60  # try_verify_and_update_config: MambaModelConfig.verify_and_update_config
FLOAT_KV_CACHE = -50  # VllmConfig._reject_mismatched_float_kv_cache (0.33.0)
ATTENTION_HEADS = -40  # ModelConfig.verify_with_parallel_config: heads vs tensor parallelism
EXPERT_PARALLEL_MODEL = -35  # ... expert parallelism vs a model without experts
PIPELINE_SUPPORT = -30  # ... pipeline parallelism vs SupportsPP
CONTEXT_PARALLEL_HEADS = -20  # ... decode context parallelism vs KV heads
CUDA_PLATFORM_HOOK = 7  # CudaPlatformBase.check_and_update_config: after the Mamba dtype check, before the runner
MICROBATCHING = 9  # the use_ubatching all2all assertion: after the runner (8), before the KV transfer post-init (10)

# STAGE_VALIDATORS
MAMBA_BLOCK_SIZE = -10  # VllmConfig.validate_mamba_block_size
