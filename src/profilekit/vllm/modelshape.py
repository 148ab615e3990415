"""What vLLM reads from a model's config.json: heads, KV heads, layers, dtype, positions (its `text_config` for
multimodal models). One reading for the rules (rules/modelcfg.py) and the capacity stage (capacity/).

Sources: `vllm/transformers_utils/model_arch_config_convertor.py` (heads, KV heads, layers, the keys
`derive_max_model_len_and_key` reads), `vllm/config/model.py` `_get_and_verify_max_len` and `ModelArchConfigConvertorBase.get_torch_dtype`
(every release 0.27.0-0.33.0; the RoPE types whose factor scales the length change in 0.30.0).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profilekit.records import record
from profilekit.vllm.versions import version_key

# `derive_max_model_len_and_key`: the smallest of these keys is the model's length
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads")  # transformers' attribute maps (GPT-2, MPT)
KV_HEAD_KEYS = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups")
EXPERT_KEYS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")
# experts a config class gives a model type whose config.json does not say (transformers'
# NemotronHConfig: n_routed_experts = 8, so vLLM counts every Nemotron-H as a mixture of experts)
EXPERT_DEFAULTS = {"nemotron_h": 8}
# `get_dtype_size`: bytes per element of the dtypes a checkpoint or a KV cache is stored in
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}
DTYPES = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32", "float32": "float32"}


def as_int(value: Any) -> int | None:
    """An integer as config.json writes it (a bool is not one); None otherwise."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_num(value: Any) -> float | None:
    """A number as config.json writes it (a bool is not one); None otherwise."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@record(frozen=True, slots=True)
class ModelShape:
    """What vLLM reads from a config.json (its `text_config` for multimodal models); None: not in the file."""

    raw: dict[str, Any]
    text: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any]) -> ModelShape:
        text = raw.get("text_config")
        return cls(raw, text if isinstance(text, dict) else raw)

    def first(self, keys: Iterable[str]) -> tuple[int, str] | None:
        """The first of `keys` the file sets to an integer, and that key."""
        for key in keys:
            value = as_int(self.text.get(key))
            if value is not None:
                return value, key
        return None

    def first_int(self, keys: Iterable[str]) -> int | None:
        found = self.first(keys)
        return found[0] if found is not None else None

    @property
    def model_type(self) -> str:
        value = self.raw.get("model_type")
        return value if isinstance(value, str) else ""

    @property
    def heads(self) -> int | None:
        return self.first_int(HEAD_KEYS)

    @property
    def kv_heads(self) -> int | None:
        """`get_total_num_kv_heads`: the first alias present, else the attention heads."""
        value = self.first_int(KV_HEAD_KEYS)
        return value if value is not None else self.heads

    @property
    def layers(self) -> int | None:
        return as_int(self.text.get("num_hidden_layers"))

    @property
    def mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-style `kv_lora_rank`): vLLM skips the GQA context-parallel checks."""
        return self.text.get("kv_lora_rank") is not None

    @property
    def moe(self) -> bool:
        if any((as_int(self.text.get(k)) or 0) > 0 for k in EXPERT_KEYS):
            return True
        # a key the file leaves out takes the default of transformers' config class, which vLLM reads
        return not any(k in self.text for k in EXPERT_KEYS) and EXPERT_DEFAULTS.get(self.model_type, 0) > 0

    @property
    def dtype(self) -> str | None:
        """The checkpoint's dtype (`dtype`, or `torch_dtype` before transformers v5; the text config's when the
        top level has none, as `ModelArchConfigConvertorBase.get_torch_dtype` reads it; its further fallbacks to a
        vision or encoder config are not followed); None when absent."""
        for source in (self.raw, self.text):
            for key in ("dtype", "torch_dtype"):
                value = source.get(key)
                if isinstance(value, str):
                    return value.removeprefix("torch.")
        return None

    def rope(self) -> list[dict[str, Any]]:
        """The RoPE parameter sets (`rope_parameters`, or `rope_scaling` before transformers v5)."""
        params = self.raw.get("rope_parameters", self.raw.get("rope_scaling"))
        if not isinstance(params, dict) or not params:
            return []
        sets = list(params.values()) if all(isinstance(v, dict) for v in params.values()) else [params]
        return [{**p, "rope_type": p.get("rope_type", p.get("type", "default"))} for p in sets]

    def positions(self, version: str, *, disable_sliding_window: bool = False) -> tuple[float, str] | None:
        """`_get_and_verify_max_len`: (the derived max_model_len, the config key it came from).

        None when config.json names none of the keys: vLLM would then read transformers' default for the
        model type, which profilekit does not know.
        """
        derived: float | None = None
        key = ""
        for name in MAX_LEN_KEYS:
            value = as_num(self.text.get(name))
            if value is not None and (derived is None or value < derived):
                derived, key = value, name
        if mml := as_num(self.text.get("model_max_length")):
            derived, key = mml, "model_max_length"
        if derived is None:
            return None
        window = as_num(self.text.get("sliding_window"))
        if disable_sliding_window and window is not None and window < derived:
            derived, key = window, "sliding_window"
        if "gemma3" in self.model_type:
            return derived, key
        # the RoPE types whose `factor` already counts in max_position_embeddings (0.30.0 added the YaRN family)
        unscaled: tuple[str, ...] = ("su", "longrope", "llama3")
        if version_key(version) >= version_key("0.30.0"):
            unscaled += ("yarn", "deepseek_yarn", "deepseek_llama_scaling")
        factor: Any = 1.0
        for rp in self.rope():
            if rp["rope_type"] not in unscaled:
                factor = rp.get("factor", factor)
                if rp["rope_type"] == "yarn":  # before 0.30.0: YaRN scales its original length
                    orig = as_num(rp.get("original_max_position_embeddings"))
                    derived = orig if orig is not None else derived
        return derived * (as_num(factor) or 1.0), key
