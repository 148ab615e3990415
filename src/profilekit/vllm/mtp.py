"""What vLLM makes of an MTP speculative method: the draft it builds from the target model's config.json.

Source: `vllm/config/speculative.py` of every release 0.27.0-0.33.0. A method named in `MTPModelTypes`
(`"mtp"`, `"deepseek_mtp"`, `"gemma4_mtp"`...) becomes `"mtp"`. With `num_speculative_tokens` and no draft
model, `SpeculativeConfig.__post_init__` takes the target model itself as the draft, and builds its
`ModelConfig` with `hf_config_override`, which rewrites the config.json of a model type or architecture
that carries MTP layers into an `*_mtp` model type. The draft is then accepted when its model type is one
of `MTPModelTypes` (or its name or architecture makes it an EAGLE, DFlash or DSpark draft); anything else
raises "Unsupported speculative method: 'mtp'".

`mtp_draft` replays `hf_config_override` on the config.json as a dict; it answers None wherever vLLM would
read something a config.json does not say (a transformers default, an attribute of a missing sub-config),
so that profilekit never refuses what vLLM might take.
"""

from __future__ import annotations

from typing import Any

from profilekit.records import record
from profilekit.vllm.versions import version_key

_MTP_027 = (
    "deepseek_mtp",
    "mimo_mtp",
    "mimo_v2_mtp",
    "glm4_moe_mtp",
    "glm4_moe_lite_mtp",
    "glm_ocr_mtp",
    "ernie_mtp",
    "nemotron_h_mtp",
    "exaone_moe_mtp",
    "exaone4_5_mtp",
    "qwen3_next_mtp",
    "qwen3_5_mtp",
    "longcat_flash_mtp",
    "minimax_m3_mtp",
    "bailing_hybrid_mtp",
    "mtp",
    "kimi_k3_mtp",
    "pangu_ultra_moe_mtp",
    "step3p5_mtp",
    "hy_v3_mtp",
    "gemma4_mtp",
    "inkling_mtp",
)
# `MTPModelTypes` of each release: the release that added a model type
_MTP_ADDED = {
    "dots3_note_mtp": "0.28.0",
    "bailing_hybrid_v3_mtp": "0.28.0",
    "qwen4_exp_mtp": "0.29.0",
    "hy_v4_mtp": "0.29.0",
    "glm5_next_mtp": "0.30.0",
    "step5_mtp": "0.33.0",
}

UNSUPPORTED = "Unsupported speculative method: 'mtp'"
INKLING_NO_WEIGHTS = "The Inkling checkpoint does not contain MTP weights"
INKLING_ONE_TOKEN = "Inkling MTP currently supports exactly one speculative token"  # 0.27.x
DEEPSEEK_V41 = (
    "DeepSeek V4.1 has no classic-MTP draft: its checkpoints ship DSpark stages under mtp.* "
    "(main_proj/markov_head/confidence_head) and carry no e_proj/h_proj/enorm/hnorm/hc_head weights. Use "
    "speculative method 'dspark' instead of 'mtp'."
)


def _since(version: str, release: str) -> bool:
    return version_key(version) >= version_key(release)


def mtp_model_types(version: str) -> frozenset[str]:
    """`MTPModelTypes` of a release: the method names that mean "mtp" and the draft model types it accepts."""
    return frozenset(_MTP_027) | {t for t, since in _MTP_ADDED.items() if _since(version, since)}


def is_mtp_method(method: Any, version: str) -> bool:
    return isinstance(method, str) and method in mtp_model_types(version)


class _Unknown(Exception):
    """vLLM would read something the config.json does not say, or fail on it another way."""


@record(slots=True)
class _Cfg:
    """The part of a transformers config `hf_config_override` reads: a config.json dict, mutated as vLLM does."""

    raw: dict[str, Any]
    model_type: str
    architectures: list[str] | None

    @classmethod
    def of(cls, raw: Any) -> _Cfg:
        if not isinstance(raw, dict) or not isinstance(raw.get("model_type"), str):
            raise _Unknown  # a sub-config's model type would be its class default
        archs = raw.get("architectures")
        if archs is not None and not (isinstance(archs, list) and all(isinstance(a, str) for a in archs)):
            raise _Unknown
        return cls(raw, raw["model_type"], archs)

    def arch0(self) -> str:
        if not self.architectures:
            raise _Unknown  # `architectures[0]` of a config without them: a TypeError or IndexError
        return self.architectures[0]

    def text(self) -> _Cfg:
        """`getattr(hf_config, "text_config", hf_config)`."""
        return _Cfg.of(self.raw["text_config"]) if "text_config" in self.raw else self

    def sub(self, key: str) -> _Cfg:
        """`hf_config.text_config` where vLLM reads it without a fallback."""
        if key not in self.raw:
            raise _Unknown
        return _Cfg.of(self.raw[key])

    def set(self, model_type: str, architecture: str | None = None) -> None:
        self.model_type = model_type
        if architecture is not None:
            self.architectures = [architecture]

    def int(self, key: str, default: int | None = None) -> int | None:
        value = self.raw.get(key, default)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise _Unknown
        return value


@record(frozen=True, slots=True)
class MtpDraft:
    """The draft vLLM builds from a target config.json for method "mtp", or the error it raises building it."""

    model_type: str = ""
    architectures: tuple[str, ...] = ()
    error: str | None = None  # a raise of hf_config_override, in vLLM's words


def mtp_draft(config: dict[str, Any], version: str) -> MtpDraft | None:
    """`SpeculativeConfig.hf_config_override` on `config` (the target's config.json); None: cannot tell."""
    try:
        cfg = _Cfg.of(config)
        initial = cfg.arch0()
        if _since(version, "0.33.0") and initial == "RadioMBartPrefixForCausalLM":
            decoder = config.get("decoder")
            if isinstance(decoder, dict) and decoder.get("causal_vision_prefix"):
                return MtpDraft("mtp", ("ParseAuxMTPModel",))  # Nemotron Parse 3.5's one-step auxiliary draft
            raise _Unknown  # decided by a transformers sub-config attribute (decoder.causal_vision_prefix)
        error = _rewrite(cfg, initial, version)
    except _Unknown:
        return None
    if error is not None:
        return MtpDraft(error=error)
    return MtpDraft(cfg.model_type, tuple(cfg.architectures or ()))


def _rewrite(cfg: _Cfg, initial: str, version: str) -> str | None:
    """The model types and architectures `hf_config_override` rewrites, in its order; the error it raises.

    One step per family, in the order of vllm/config/speculative.py `SpeculativeConfig.hf_config_override`."""
    problem = _rewrite_dots3(cfg, version)
    if problem is not None:
        return problem
    _rewrite_deepseek(cfg, version)
    _rewrite_pangu_kimi(cfg)
    _rewrite_by_architecture(cfg)
    _rewrite_ernie_nemotron(cfg, version)
    _rewrite_qwen(cfg, version)
    _rewrite_bailing(cfg, initial, version)
    return _rewrite_late(cfg, initial, version)


def _rewrite_dots3(cfg: _Cfg, version: str) -> str | None:
    """dots3_note (0.28.0 on): one `mtp_layer_types` entry per MTP layer, then the MTP model."""
    if not (_since(version, "0.28.0") and cfg.model_type == "dots3_note"):
        return None
    layer_types = cfg.raw.get("mtp_layer_types")
    if layer_types is not None:
        n_predict = cfg.raw.get("num_nextn_predict_layers")
        if not isinstance(layer_types, list) or not isinstance(n_predict, int) or isinstance(n_predict, bool):
            raise _Unknown  # the config class's default count, or a crash
        if len(layer_types) != n_predict:
            return f"mtp_layer_types must have one entry per MTP layer: got {len(layer_types)} for {n_predict} layers"
    if not isinstance(cfg.raw.get("layer_types"), list):
        raise _Unknown  # extended with the MTP layers' types: what the config class derives
    cfg.set("dots3_note_mtp", "Dots3NoteMTPModel")
    return None


def _rewrite_deepseek(cfg: _Cfg, version: str) -> None:
    """DeepSeek V3/V3.2 and GLM-MoE-DSA become deepseek_mtp; V4 (and V4.1 from 0.30.0) keep their own drafts."""
    if cfg.model_type in ("deepseek_v3", "deepseek_v32", "glm_moe_dsa"):
        cfg.model_type = "deepseek_mtp"
    if cfg.model_type == "deepseek_mtp":
        cfg.set("deepseek_mtp", "DeepSeekMTPModel")
    v4 = ("deepseek_v4", "deepseek_v41") if _since(version, "0.30.0") else ("deepseek_v4",)
    if cfg.model_type in v4:
        v41 = cfg.model_type == "deepseek_v41"
        cfg.set("deepseek_mtp", None if v41 else "DeepSeekV4MTPModel")


def _rewrite_pangu_kimi(cfg: _Cfg) -> None:
    if cfg.model_type in "pangu_ultra_moe":  # vLLM tests `in ("pangu_ultra_moe")`: a substring of a string
        cfg.model_type = "pangu_ultra_moe_mtp"
    if cfg.model_type == "pangu_ultra_moe_mtp":
        cfg.set("pangu_ultra_moe_mtp", "OpenPanguMTPModel")
    if cfg.model_type == "kimi_k3":
        cfg.set("kimi_k3_mtp", "KimiK3MTPModel")


def _rewrite_ernie_nemotron(cfg: _Cfg, version: str) -> None:
    """ERNIE 4.5 MoE, then Nemotron-H (the Omni VLMs promote their text_config first, 0.29.0 adds Super Omni)."""
    if cfg.model_type == "ernie4_5_moe":
        cfg.model_type = "ernie_mtp"
    if cfg.model_type == "ernie_mtp":
        cfg.set("ernie_mtp", "ErnieMTPModel")
    omni = ("NemotronH_Super_Omni_Reasoning_V3", "NemotronH_Omni_Reasoning_V3")
    if cfg.arch0() in (omni if _since(version, "0.29.0") else omni[:1]):
        promoted = cfg.sub("text_config")  # "Promote VLM's text_config so MTP detection below fires correctly"
        cfg.raw, cfg.model_type, cfg.architectures = promoted.raw, promoted.model_type, promoted.architectures
    if cfg.model_type in ("nemotron_h", "nemotron_h_puzzle") and (cfg.int("num_nextn_predict_layers") or 0) > 0:
        cfg.model_type = "nemotron_h_mtp"
    if cfg.model_type == "nemotron_h_mtp":
        cfg.set("nemotron_h_mtp", "NemotronHMTPModel")


def _rewrite_qwen(cfg: _Cfg, version: str) -> None:
    """Qwen3-Next, then Qwen4-exp (0.29.0 on, which reads text_config.hc_count)."""
    if cfg.model_type == "qwen3_next":
        cfg.model_type = "qwen3_next_mtp"
    if cfg.model_type == "qwen3_next_mtp":
        cfg.set("qwen3_next_mtp", "Qwen3NextMTP")
    if _since(version, "0.29.0") and cfg.model_type in ("qwen4_exp", "qwen4_exp_text", "qwen4_exp_mtp"):
        if cfg.text().int("hc_count") is None:
            raise _Unknown  # int(text_config.hc_count): a transformers default at best
        cfg.set("qwen4_exp_mtp", "Qwen4ExpMTP")


def _rewrite_by_architecture(cfg: _Cfg) -> None:
    """MiMo and GLM: chosen by `architectures[0]` (unchanged in every release)."""
    by_arch = {
        "MiMoForCausalLM": ("mimo_mtp", "MiMoMTPModel"),
        "MiMoV2ForCausalLM": ("mimo_v2_mtp", "MiMoV2MTPModel"),
        "MiMoV2OmniForCausalLM": ("mimo_v2_mtp", "MiMoV2OmniMTPModel"),
        "MiMoV2FlashForCausalLM": ("mimo_v2_mtp", "MiMoV2MTPModel"),
        "Glm4MoeForCausalLM": ("glm4_moe_mtp", "Glm4MoeMTPModel"),
        "Glm4MoeLiteForCausalLM": ("glm4_moe_lite_mtp", "Glm4MoeLiteMTPModel"),
        "GlmOcrForConditionalGeneration": ("glm_ocr_mtp", "GlmOcrMTPModel"),
    }
    for arch, (model_type, draft) in by_arch.items():
        if cfg.arch0() == arch:
            cfg.set(model_type, draft)


def _rewrite_bailing(cfg: _Cfg, initial: str, version: str) -> None:
    archs = cfg.architectures or []
    v3 = ("BailingMoeV3ForCausalLM", "BailingMoeV3VLForConditionalGeneration")
    if _since(version, "0.30.0") and initial == v3[1]:
        if not isinstance(cfg.raw.get("text_config"), dict):
            raise _Unknown  # `copy.deepcopy(hf_config.text_config)`
        _promote_text(cfg)
    if _since(version, "0.28.0") and initial in (v3 if _since(version, "0.30.0") else v3[:1]):
        cfg.model_type = "bailing_hybrid_v3_mtp"
    elif cfg.model_type == "bailing_hybrid" or "BailingMoeV2_5ForCausalLM" in archs:
        cfg.model_type = "bailing_hybrid_mtp"
    if cfg.model_type == "bailing_hybrid_mtp":
        cfg.set("bailing_hybrid_mtp", "BailingMoeV25MTPModel")
    if cfg.model_type == "bailing_hybrid_v3_mtp":
        cfg.set("bailing_hybrid_v3_mtp", "BailingMoeV3MTPModel")


def _rewrite_late(cfg: _Cfg, initial: str, version: str) -> str | None:
    """The end of `SpeculativeConfig.hf_config_override` (vllm/config/speculative.py), after Bailing; the error.

    One step per family, in vLLM's order: EXAONE, Qwen3.5 and Intern-S2, LongCat, Step 3.5 and Step 5,
    Mistral Large 3, HY, Inkling (whose missing MTP weights stop the rewriting), Gemma 4, MiniMax M3 and
    GLM-5 Next.
    """
    _rewrite_exaone(cfg)
    _rewrite_qwen3_5(cfg, version)
    _rewrite_longcat(cfg, version)
    _rewrite_step(cfg, version)
    _rewrite_mistral_large3(cfg, initial)
    _rewrite_hy(cfg, version)
    error = _rewrite_inkling(cfg)
    if error is not None:
        return error
    _rewrite_gemma4(cfg)
    _rewrite_minimax_m3(cfg, initial)
    _rewrite_glm5_next(cfg, version)
    return None


def _rewrite_exaone(cfg: _Cfg) -> None:
    """EXAONE MoE and EXAONE 4.5: by model type."""
    if cfg.model_type == "exaone_moe":
        cfg.model_type = "exaone_moe_mtp"
    if cfg.model_type == "exaone_moe_mtp":
        cfg.set("exaone_moe_mtp", "ExaoneMoeMTP")
    if "exaone4_5" in cfg.model_type:
        cfg.set("exaone4_5_mtp", "Exaone4_5_MTP")


def _rewrite_qwen3_5(cfg: _Cfg, version: str) -> None:
    """Qwen3.5 (its text-only model types since 0.28.0), then the Intern-S2 models built on it."""
    qwen3_5 = ("qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text")
    if cfg.model_type in (qwen3_5 if _since(version, "0.28.0") else qwen3_5[:2]):
        cfg.set("qwen3_5_mtp", "Qwen3_5MoeMTP" if "moe" in cfg.model_type else "Qwen3_5MTP")
    interns2 = ("intern_s2_preview", "interns2_mobius") if _since(version, "0.28.0") else ("intern_s2_preview",)
    if cfg.model_type in interns2:
        text = cfg.raw.get("text_config")
        expert_keys = ("mtp_num_experts", "mtp_num_experts_per_tok")
        if cfg.model_type == "interns2_mobius" and not (isinstance(text, dict) and all(k in text for k in expert_keys)):
            raise _Unknown  # asserted, and its MTP expert counts read
        cfg.set("qwen3_5_mtp", "Qwen3_5MTP")


def _rewrite_longcat(cfg: _Cfg, version: str) -> None:
    """LongCat Flash (and its n-gram variant before 0.32.0)."""
    longcat = ("longcat_flash",) if _since(version, "0.32.0") else ("longcat_flash", "longcat_flash_ngram")
    if cfg.model_type in longcat:
        cfg.set("longcat_flash_mtp", "LongCatFlashMTPModel")


def _rewrite_step(cfg: _Cfg, version: str) -> None:
    """Step 3.5 / 3.7 and (since 0.33.0) Step 5: by model type or architecture, on the promoted text config."""
    if cfg.model_type in ("step3p5", "step3p7") or cfg.arch0() in (
        "Step3p5ForCausalLM",
        "Step3p7ForConditionalGeneration",
    ):
        _promote_text(cfg)
        cfg.set("step3p5_mtp", "Step3p5MTP")
    step5 = {"Step5ForCausalLM", "Step5ForConditionalGeneration"}
    if _since(version, "0.33.0") and (cfg.model_type in ("step5", "step5_vl") or step5 & set(cfg.architectures or [])):
        _promote_text(cfg)
        cfg.set("step5_mtp", "Step5MTP")


def _rewrite_mistral_large3(cfg: _Cfg, initial: str) -> None:
    """Mistral Large 3: its EAGLE draft architecture, by the target's first architecture."""
    if initial == "MistralLarge3ForCausalLM":
        cfg.architectures = ["EagleMistralLarge3ForCausalLM"]


def _rewrite_hy(cfg: _Cfg, version: str) -> None:
    """HY V3, and HY V4 since 0.29.0."""
    if cfg.model_type == "hy_v3":
        cfg.set("hy_v3_mtp", "HYV3MTPModel")
    if _since(version, "0.29.0") and cfg.model_type == "hy_v4":
        cfg.set("hy_v4_mtp", "HYV4MTPModel")


def _rewrite_inkling(cfg: _Cfg) -> str | None:
    """Inkling: the draft depth its `mtp_config` declares; vLLM's error when it declares none."""
    if cfg.model_type not in ("inkling_mm_model", "inkling_model"):
        return None
    mtp_config = cfg.raw.get("mtp_config") or {}
    depths = mtp_config.get("num_nextn_predict_layers", 0) if isinstance(mtp_config, dict) else None
    if not isinstance(depths, int) or isinstance(depths, bool):
        raise _Unknown
    if depths < 1:
        return INKLING_NO_WEIGHTS
    _promote_text(cfg)
    cfg.set("inkling_mtp", "InklingMTPModel")
    return None


def _rewrite_gemma4(cfg: _Cfg) -> None:
    """Gemma 4's assistant models."""
    if cfg.model_type in ("gemma4_assistant", "gemma4_unified_assistant"):
        cfg.set("gemma4_mtp", "Gemma4MTPModel")


def _rewrite_minimax_m3(cfg: _Cfg, initial: str) -> None:
    """MiniMax M3: the VL checkpoint on its promoted text config, or a standalone MTP checkpoint as it is."""
    if cfg.model_type == "minimax_m3_vl" or initial == "MiniMaxM3SparseForConditionalGeneration":
        _promote_text(cfg)
        cfg.set("minimax_m3_mtp", "MiniMaxM3MTP")
    elif cfg.model_type == "minimax_m3_mtp" or initial == "MiniMaxM3MTP":
        cfg.set(cfg.model_type, "MiniMaxM3MTP")


def _rewrite_glm5_next(cfg: _Cfg, version: str) -> None:
    """GLM-5 Next (since 0.30.0), whose MTP layer count vLLM reads without a default."""
    if _since(version, "0.30.0") and cfg.model_type == "glm5_next":
        counted = cfg.text() if _since(version, "0.32.0") else cfg  # 0.32.0: `get_text_config()`
        if counted.int("num_nextn_predict_layers") is None:
            raise _Unknown  # read without a default
        cfg.set("glm5_next_mtp", "Glm5NextMTPModel")


def _promote_text(cfg: _Cfg) -> None:
    """`hf_config = getattr(hf_config, "text_config", hf_config)` right before vLLM sets its model type."""
    text = cfg.raw.get("text_config", cfg.raw)
    if not isinstance(text, dict):
        raise _Unknown
    archs = text.get("architectures")
    cfg.raw, cfg.architectures = text, archs if isinstance(archs, list) else None


def detected_method(draft: MtpDraft, model: str, version: str) -> str | None:
    """The method `__post_init__` detects for the draft of method "mtp"; None: "Unsupported ... 'mtp'".

    `model`: the draft model's name (the target's, for an MTP draft), which vLLM also reads.
    """
    name = model.lower()
    archs = set(draft.architectures)
    if "eagle-" in name:
        return "eagle"
    if "eagle3" in name:
        return "eagle3"
    if "dflash" in name or (_since(version, "0.28.0") and "MuseGlimmerAssistantModel" in archs):
        return "dflash"
    dspark = {"Qwen3DSparkModel", "Gemma4DSparkModel"}
    if _since(version, "0.29.0"):
        dspark.add("Qwen3OmniDSparkModel")
    if _since(version, "0.33.0"):
        dspark.add("MuseSparkDSparkModel")
    qwen3_dspark = _since(version, "0.29.0") and "DSparkDraftModel" in archs and draft.model_type == "qwen3"
    if "dspark" in name or dspark & archs or qwen3_dspark:
        return "dspark"
    if not _since(version, "0.33.0") and draft.model_type in ("medusa", "mlp_speculator"):
        return draft.model_type
    if draft.model_type in mtp_model_types(version):
        return "mtp"
    return None
