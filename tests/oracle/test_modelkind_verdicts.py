"""rules/modelkind.py gives vLLM's verdict: a triggering and a non-triggering case per rule and release.

The cases run as tests/oracle/test_crossfield.py's do: one layer whose `[model] config` is the dummy config.json
(with the case's changes) that the oracle's model folder holds too; profilekit's verdict must equal vLLM's and the
verdict the case expects.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle.conftest import OraclePool, applicable
from tests.oracle.test_crossfield import LLAMA, Case, _verdicts

# a BERT embedding model: the dummy Llama's sizes under BERT's names
BERT = {"architectures": ["BertModel"], "model_type": "bert", "type_vocab_size": 2, "torch_dtype": "float32"}
# a ModernBERT encoder: registered, but its class neither generates nor pools (vLLM adapts it with --convert)
MODERNBERT = {"architectures": ["ModernBertModel"], "model_type": "modernbert"}
MM_LORAS = {"image": "/srv/loras/vision"}

CASES = [
    # _check_valid_dtype: float16 for Gemma 2/3 and GLM-4 model types
    Case("f16-gemma2", "dtype-float16-model-type", LLAMA, {"dtype": "float16"}, config={"model_type": "gemma2"}),
    Case("f16-half-glm4", "dtype-float16-model-type", LLAMA, {"dtype": "half"}, config={"model_type": "glm4"}),
    Case("bf16-gemma2", None, LLAMA, {"dtype": "bfloat16"}, config={"model_type": "gemma2"}),
    Case("f16-llama", None, LLAMA, {"dtype": "float16"}),
    # ModelConfig.validate_model_config_after (0.29.0 and later)
    Case(
        "prompt-embeds-enc-dec",
        "prompt-embeds-encoder-decoder",
        LLAMA,
        {"enable_prompt_embeds": True},
        config={"is_encoder_decoder": True},
        releases=">=0.29.0",
    ),
    Case("prompt-embeds-decoder-only", None, LLAMA, {"enable_prompt_embeds": True}),
    # ModelConfig.__post_init__: the pooling runner for a generative model, unconverted
    Case("pooling-unconverted", "runner-pooling-convert-none", LLAMA, {"runner": "pooling", "convert": "none"}),
    Case("pooling-embed", None, LLAMA, {"runner": "pooling", "convert": "embed"}),
    # ... and a generative runner for an embedding-only model
    Case("bert-generate", "runner-embedding-model", LLAMA, {"runner": "generate"}, config=BERT),
    Case("bert-pooling", None, LLAMA, {"runner": "pooling"}, config=BERT),
    # ... and the generate runner for a model the registry marks neither generative nor pooling
    Case("modernbert-generate", "runner-generate-unsupported", LLAMA, {"runner": "generate"}, config=MODERNBERT),
    Case("modernbert-auto", None, LLAMA, {}, config=MODERNBERT),
    # EngineArgs.create_engine_config: modality LoRAs for a text-only model
    Case("mm-loras-text", "default-mm-loras-text-model", LLAMA, {"default_mm_loras": MM_LORAS}),
    Case("mm-loras-empty", None, LLAMA, {"default_mm_loras": {}}),
    # LoRAConfig.verify_with_model_config: Inkling needs INKLING_MULTIMEM_AR=0. Before 0.33.0 vLLM's Inkling model
    # imports numba, which a GPU host has and the CPU oracle lacks ("failed to be inspected"): judged on 0.33.0
    Case(
        "inkling-lora",
        "inkling-lora-multimem",
        LLAMA,
        {"enable_lora": True},
        config={"architectures": ["InklingForCausalLM"]},
        releases=">=0.33.0",
    ),
    Case(
        "inkling-lora-ar-off",
        None,
        LLAMA,
        {"enable_lora": True},
        env={"INKLING_MULTIMEM_AR": "0"},
        config={"architectures": ["InklingForCausalLM"]},
        releases=">=0.33.0",
    ),
]


@pytest.mark.oracle
@pytest.mark.parametrize(("version", "case"), applicable(CASES), ids=[f"vllm-{v}-{c.id}" for v, c in applicable(CASES)])
def test_profilekit_gives_vllms_verdict(oracle_pool: OraclePool, version: str, case: Case, tmp_path: Path) -> None:
    predicted, actual, message = _verdicts(case, version, oracle_pool.get(version), tmp_path)
    expected = case.expected(version)
    assert (predicted, actual) == (expected, expected), message


def test_every_rule_has_a_triggering_and_an_accepted_case() -> None:
    from profilekit.rules import RULES

    modelkind = {r.id for r in RULES.values() if r.check.__module__.endswith(".modelkind")}
    triggered = {c.expected(v) for c in CASES for v in ("0.27.0", "0.33.0")}
    assert triggered == {*modelkind, None}
