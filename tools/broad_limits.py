"""Cases of the broad corpus that the CPU oracle cannot decide, each with the reason a GPU host differs.

The worker marks some answers `undecidable` itself (a package it does not install, Triton); the broad
corpus also reaches code that asks the platform what it can do, and the oracle's platform is vLLM's CPU
platform. Each limit is tested (tests/oracle/test_broad_verdicts.py): the oracle really answers this way
for the stated reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from verdict_common import Limit
from verdict_report import KNOWN_LIMITS

BROAD_LIMITS: tuple[Limit, ...] = (
    Limit(
        "platform-capability",
        r"not supported on current platform|only supported on CUDA devices|is not supported by cpu"
        r"|requires NVIDIA CUDA",
        "vLLM asks `current_platform` what it can do, and in the oracle that is the CPU platform: sleep mode, "
        "the cumem allocator, HiSparse attention and non-integer device ids are refused there and supported on a "
        "CUDA host (expert-parallel load balancing is judged as on CUDA: tools/oracle/worker.py judge_as_gpu_host)",
    ),
    Limit(
        "no-tokenizer",
        r"tokenizer must be passed to the ReasoningParser|'NoneType' object has no attribute 'encode'",
        "the oracle builds the config with `skip_tokenizer_init` (the dummy models have no tokenizer); 0.33.0 "
        "constructs the reasoning parser while building the config and needs the tokenizer for it, and every "
        "release tokenizes `reasoning_config`'s start and end strings (ReasoningConfig.initialize_token_ids, "
        "called by VllmConfig.__post_init__) with the tokenizer that `cached_tokenizer_from_config` returns as None",
    ),
    Limit(
        "ijson-not-installed",
        r"module 'ijson' is not installed",
        "some reasoning parsers (qwen3) load vllm/parser/mistral.py, which imports ijson; the oracle pins "
        "(tools/oracle/oracle-pins.txt) do not install it",
    ),
    Limit(
        "ray-not-installed",
        r"Failed to import Ray",
        "the Ray executor and data-parallel backend import ray while the config is built; the oracle pins do "
        "not install it (a host that uses Ray has it)",
    ),
    Limit(
        "arctic-inference-not-installed",
        r"Arctic Inference is required for suffix decoding",
        "speculative method 'suffix' imports arctic-inference while the config is built; the oracle pins do "
        "not install it",
    ),
    Limit(
        "python-json-logger-not-installed",
        r"Unable to configure formatter 'vllm_json'",
        "`logging_config` with the json formatter loads pythonjsonlogger, which the oracle pins do not install",
    ),
)

# the dummy models are a config.json alone (tests/oracle/models.py); what vLLM reads from other checkpoint files
# is refused there and found in a real checkpoint of that kind
CHECKPOINT_LIMITS: tuple[Limit, ...] = (
    Limit(
        "checkpoint-quantization-file",
        r"Cannot find the config file for \w+",
        "an offline-quantized method (awq, gptq, modelopt, ...) reads its settings from the checkpoint: the "
        "config.json's quantization_config or the method's own file (quantize_config.json, hf_quant_config.json); "
        "the dummy models have neither, a checkpoint quantized with that method has one "
        "(vllm/model_executor/model_loader/weight_utils.py get_quant_config)",
    ),
    Limit(
        "mistral-params-json",
        r"Failed to load mistral 'params.json' config",
        'config_format = "mistral" reads the checkpoint\'s params.json instead of config.json; the dummy models '
        "have only config.json, a Mistral-format checkpoint ships params.json",
    ),
)

ORACLE_LIMITS: tuple[Limit, ...] = (*KNOWN_LIMITS, *BROAD_LIMITS, *CHECKPOINT_LIMITS)
