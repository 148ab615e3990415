"""The ReplaySSM rules of every release from 0.27.0 to 0.33.0, as `VllmConfig.validate_mamba_cached_kernel`.

Source: `vllm/config/vllm.py`, `VllmConfig.validate_mamba_cached_kernel`, read in each release's wheel
(reference/vllm-facts.md sections 1.2, 1.3 and 1.3a). The rule set changed at 0.29.0 (Kimi KDA
"RecoverSSM" path), 0.30.0 (FlashInfer backend, Model Runner V1 for Triton), 0.32.0 (Mamba2
speculative decoding on FlashInfer, buffer length, cache mode `all` gone) and 0.33.0 (reworded
prefix-caching messages; KV connectors allowed on the KDA path). The prefix-caching default changed
at 0.28.0 (see facts.py).

vLLM raises at its first failing check. `_failures` walks the same checks in the same order but keeps
going, so a profile author sees every problem at once; the first hit is the one vLLM reports.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from profilekit.errors import Location, Severity
from profilekit.rules.engine import STAGE_VALIDATORS, Context, Hit, family_check, rule
from profilekit.rules.facts import Connector, RoleFacts
from profilekit.vllm.versions import at_least

KDA_ARCHITECTURES = ("KimiLinearForCausalLM", "KimiK3ForConditionalGeneration")

SOURCE = "vllm/config/vllm.py VllmConfig.validate_mamba_cached_kernel"

# vLLM's own messages, by the first release that uses each wording.
MSG_ARCH_NEMOTRON = "--use-replayssm is only supported for Nemotron-H models (got architecture {arch!r})"
MSG_ARCH = "--use-replayssm is not supported for architecture {arch!r}"
MSG_MODE_ALL = "--use-replayssm supports prefix caching only in align mode; pass --mamba-cache-mode align"
MSG_NO_SPEC = "--use-replayssm does not support speculative decoding"
MSG_TRITON = "--use-replayssm requires --mamba-backend triton"
MSG_TRITON_OR_FI = "--use-replayssm requires --mamba-backend triton or flashinfer"
MSG_KV = "--use-replayssm is incompatible with KV connectors (P/D disaggregation, KV cache offload)"
MSG_KDA_ONLY = "RecoverSSM is only supported for Kimi-K3 KDA"
MSG_KDA_ROUNDING = (
    "RecoverSSM supports bfloat16/float32 SSM state caches, not --enable-mamba-cache-stochastic-rounding, "
    "which requires an explicit float16 cache"
)
MSG_KDA_MODES = "RecoverSSM supports only none and align Mamba cache modes"
MSG_KDA_V2_ALIGN = "RecoverSSM with align mode requires VLLM_USE_V2_MODEL_RUNNER=1"
MSG_KDA_V2_PREFIX = "RecoverSSM with prefix caching requires VLLM_USE_V2_MODEL_RUNNER=1"
MSG_KDA_PP = "RecoverSSM currently requires pipeline_parallel_size=1"
MSG_KDA_TRITON = "RecoverSSM requires --mamba-backend triton"
MSG_FI_BUFFER = "FlashInfer ReplaySSM requires --replayssm-buffer-len <= 16"
MSG_SPEC_MODE_032 = "FlashInfer ReplaySSM speculative decoding requires --mamba-cache-mode none"
MSG_SPEC_PREFIX = (
    "FlashInfer ReplaySSM speculative decoding does not support prefix caching; use --disable-prefix-caching"
)
MSG_SPEC_BUFFER = (
    "FlashInfer ReplaySSM speculative decoding requires --replayssm-buffer-len >= 1 + num_speculative_tokens "
    "({need}); got {got}"
)
MSG_SPEC_FI = "Mamba2 ReplaySSM speculative decoding requires --mamba-backend flashinfer"
MSG_FI_ALIGN = "FlashInfer ReplaySSM does not support --mamba-cache-mode align yet; use none"
MSG_FI_PREFIX = "FlashInfer ReplaySSM does not support prefix caching yet; use --disable-prefix-caching"
MSG_TRITON_V1 = "Triton ReplaySSM requires Model Runner V1; use --mamba-backend flashinfer or Model Runner V1"


def _v(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class _Walk:
    """Collects the failures of one role in vLLM's check order."""

    def __init__(self, facts: RoleFacts) -> None:
        self.f = facts
        self.hits: list[Hit] = []
        self.replay = facts.loc("serve", "use_replayssm")

    def add(self, rule_id: str, vllm_message: str, what: str, locations: list[Location], fix: str) -> None:
        message = f'{what}; vLLM {self.f.version} refuses to start: "{vllm_message}"'
        self.hits.append(
            Hit(
                rule_id,
                message,
                [*self.replay, *locations],
                fix,
                role=self.f.role.name,
                order=(STAGE_VALIDATORS, len(self.hits)),
            )
        )

    # -- the values the messages quote, with where they came from -----------------------------

    def backend(self) -> tuple[str, list[Location]]:
        locs = self.f.loc("serve", "mamba_backend")
        shown = f"mamba_backend = {_v(self.f.serve['mamba_backend'])}" if locs else "mamba_backend (default triton)"
        return shown, locs

    def mode(self) -> tuple[str, list[Location]]:
        """How the Mamba cache mode came about: prefix caching on/off (explicit or default) and the mode flag."""
        f = self.f
        locs = [*f.loc("serve", "enable_prefix_caching"), *f.loc("serve", "mamba_cache_mode")]
        if f.prefix_caching_explicit is None:
            pc = f"prefix caching {'on' if f.prefix_caching else 'off'} (vLLM {f.version}'s default for this model)"
        else:
            pc = f"enable_prefix_caching = {_v(f.prefix_caching_explicit)}"
        written = f.serve.get("mamba_cache_mode")
        mode = f"Mamba cache mode {f.mamba_cache_mode!r}"
        if written is not None and written != f.mamba_cache_mode:
            mode += f" (mamba_cache_mode = {_v(written)})"
        elif written is not None:
            mode = f"mamba_cache_mode = {_v(written)}"
        return f"{pc} gives {mode}" if f.prefix_caching else pc, locs

    def spec(self) -> tuple[str, list[Location]]:
        locs = self.f.locs("serve", "speculative_config")
        n = self.f.num_spec
        count = f"num_speculative_tokens = {n}" if n is not None else "speculative_config"
        return f"speculative decoding ({count})", locs

    def buffer(self) -> tuple[str, list[Location]]:
        locs = self.f.loc("serve", "replayssm_buffer_len")
        shown = f"replayssm_buffer_len = {self.f.buffer_len}" if locs else "replayssm_buffer_len (default 16)"
        return shown, locs

    def runner(self) -> tuple[str, list[Location]]:
        locs = self.f.loc("env", "VLLM_USE_V2_MODEL_RUNNER")
        raw = self.f.env_value("VLLM_USE_V2_MODEL_RUNNER")
        if raw is not None:
            return (
                f"VLLM_USE_V2_MODEL_RUNNER = {_v(raw)} selects Model Runner V{'2' if self.f.v2_model_runner else '1'}",
                locs,
            )
        why = "" if self.f.v2_model_runner else " (a feature V2 does not support forces V1)"
        return (
            f"VLLM_USE_V2_MODEL_RUNNER unset: vLLM {self.f.version} on a GPU host picks Model Runner "
            f"V{'2' if self.f.v2_model_runner else '1'}{why}"
        ), locs

    def connector(self) -> tuple[str, list[Location]]:
        f = self.f
        eff = f.effective
        assert eff is not None
        return describe_connector(f, eff), list(eff.locations)


def describe_connector(f: RoleFacts, c: Connector) -> str:
    if c.via == "kv_offloading_size":
        size = f.serve.get("kv_offloading_size")
        text = f'the {c.name} (kv_role "kv_both") that kv_offloading_size = {_v(size)} creates'
        if c.name == "SimpleCPUOffloadConnector":
            text += " with VLLM_USE_SIMPLE_KV_OFFLOAD=1"
        return text
    return f"KV connector {c.name} (kv_role {_v(c.role)}, serve.kv_transfer_config)"


def _failures(f: RoleFacts) -> list[Hit]:
    if f.serve.get("use_replayssm") is not True:
        return []
    w = _Walk(f)
    v = f.version
    arch = f.model.architecture
    info = f.model.info
    spec_on = f.num_spec != 0
    kimi = arch in KDA_ARCHITECTURES
    mode = f.mamba_cache_mode  # None when the model is unknown
    backend = f.backend
    arch_locs = list(f.model.locations)

    # 1. the model class must implement SupportsReplaySSM
    if info is not None and arch is not None and not info.supports_replayssm(v):
        msg = (MSG_ARCH if at_least(v, "0.29.0") else MSG_ARCH_NEMOTRON).format(arch=arch)
        supported = "Nemotron-H (NemotronHForCausalLM)" + (
            " and Kimi KDA models (KimiLinearForCausalLM, KimiK3ForConditionalGeneration)"
            if at_least(v, "0.29.0")
            else ""
        )
        w.add(
            "replayssm-architecture",
            msg,
            f"use_replayssm = true with a {arch} model ({f.model.source})",
            arch_locs,
            f"ReplaySSM runs only on {supported} in vLLM {v}: serve such a model, or remove use_replayssm",
        )
        return w.hits  # the other checks judge a model that cannot run ReplaySSM at all

    if not at_least(v, "0.29.0"):
        _rules_027(w, mode, spec_on, backend)
    else:
        if at_least(v, "0.32.0") and backend == "flashinfer" and f.buffer_len > 16:
            text, locs = w.buffer()
            b, blocs = w.backend()
            w.add(
                "replayssm-buffer-len",
                MSG_FI_BUFFER,
                f"{text} with {b}",
                [*locs, *blocs],
                "set replayssm_buffer_len to 16 or less (its default is 16)",
            )
        kda = spec_on and (kimi or not at_least(v, "0.32.0"))
        if kda and not kimi:
            text, locs = w.spec()
            w.add(
                "replayssm-speculative",
                MSG_KDA_ONLY,
                f"use_replayssm = true with {text} on a {arch or 'model of unknown architecture'} model: vLLM {v} takes "
                "the Kimi KDA RecoverSSM path for any speculative tokens",
                [*locs, *arch_locs],
                f"remove speculative_config: vLLM {v} supports ReplaySSM speculative decoding only for Kimi KDA models",
            )
            _plain_path(w, mode, backend)
        elif kda:
            _kda_path(w, mode, backend)
        elif spec_on:
            _mamba_spec_path(w, mode, backend)
        else:
            _plain_path(w, mode, backend)
        if v == "0.29.0" and backend != "triton":
            b, blocs = w.backend()
            w.add("replayssm-backend", MSG_TRITON, f"use_replayssm = true with {b}", blocs, _fix_backend("triton"))

    # last: the KV-connector rule (exempt on the KDA path from 0.33.0)
    kda_exempt = at_least(v, "0.33.0") and spec_on and kimi
    if f.kv_instance and not kda_exempt:
        text, locs = w.connector()
        fix = (
            "ReplaySSM and KV connectors cannot share a vLLM instance: remove the connector from this role "
            + ("(serve.kv_offloading_size)" if f.implied is not None else "(serve.kv_transfer_config)")
            + ", or turn use_replayssm off"
        )
        if f.replaced is not None:
            locs = [*locs, *f.replaced.locations]
        w.add("replayssm-kv-connector", MSG_KV, f"use_replayssm = true with {text}", locs, fix)
    return w.hits


def _fix_backend(*allowed: str) -> str:
    return "set mamba_backend = " + " or ".join(_v(a) for a in allowed)


def _rules_027(w: _Walk, mode: str | None, spec_on: bool, backend: str) -> None:
    """0.27.0, 0.27.1, 0.28.0: cache mode `all`, no speculative decoding, Triton only."""
    if mode == "all":
        text, locs = w.mode()
        w.add(
            "replayssm-prefix-caching",
            MSG_MODE_ALL,
            f"use_replayssm = true with {text}",
            locs,
            'set mamba_cache_mode = "align" (or turn prefix caching off: enable_prefix_caching = false)',
        )
    if spec_on:
        text, locs = w.spec()
        w.add(
            "replayssm-speculative",
            MSG_NO_SPEC,
            f"use_replayssm = true with {text}",
            locs,
            f"remove speculative_config: vLLM {w.f.version} has no speculative decoding with ReplaySSM",
        )
    if backend != "triton":
        b, blocs = w.backend()
        w.add("replayssm-backend", MSG_TRITON, f"use_replayssm = true with {b}", blocs, _fix_backend("triton"))


def _kda_path(w: _Walk, mode: str | None, backend: str) -> None:
    """Kimi KDA models with speculative tokens: RecoverSSM (0.29.0+)."""
    f, v = w.f, w.f.version
    if f.serve.get("enable_mamba_cache_stochastic_rounding") is True:
        w.add(
            "replayssm-stochastic-rounding",
            MSG_KDA_ROUNDING,
            "use_replayssm = true with speculative decoding on a Kimi KDA model and "
            "enable_mamba_cache_stochastic_rounding = true",
            f.loc("serve", "enable_mamba_cache_stochastic_rounding"),
            "remove enable_mamba_cache_stochastic_rounding (RecoverSSM keeps bfloat16/float32 SSM state caches)",
        )
    if not at_least(v, "0.32.0") and mode == "all":
        text, locs = w.mode()
        w.add(
            "replayssm-prefix-caching",
            MSG_KDA_MODES,
            f"use_replayssm = true with speculative decoding on a Kimi KDA model and {text}",
            locs,
            'set mamba_cache_mode = "align" or "none"',
        )
    if mode == "align" and f.v2_model_runner is False:
        text, locs = w.runner()
        mtext, mlocs = w.mode()
        w.add(
            "replayssm-model-runner",
            MSG_KDA_V2_PREFIX if at_least(v, "0.33.0") else MSG_KDA_V2_ALIGN,
            f"use_replayssm = true with speculative decoding on a Kimi KDA model, {mtext}, and {text}",
            [*locs, *mlocs],
            'set env VLLM_USE_V2_MODEL_RUNNER = "1", or turn prefix caching off (enable_prefix_caching = false)',
        )
    pp = f.serve.get("pipeline_parallel_size", 1)
    if isinstance(pp, int) and pp > 1:
        w.add(
            "replayssm-pipeline-parallel",
            MSG_KDA_PP,
            f"use_replayssm = true with speculative decoding on a Kimi KDA model and pipeline_parallel_size = {pp}",
            f.loc("serve", "pipeline_parallel_size"),
            "set pipeline_parallel_size = 1 (use tensor parallelism instead)",
        )
    if at_least(v, "0.30.0") and backend != "triton":
        b, blocs = w.backend()
        w.add(
            "replayssm-backend",
            MSG_KDA_TRITON,
            f"use_replayssm = true with speculative decoding on a Kimi KDA model and {b}",
            blocs,
            _fix_backend("triton"),
        )


def _mamba_spec_path(w: _Walk, mode: str | None, backend: str) -> None:
    """Mamba2 (Nemotron-H) speculative decoding with ReplaySSM (0.32.0+): FlashInfer, no prefix caching."""
    f, v = w.f, w.f.version
    if mode is not None and mode != "none":
        text, locs = w.mode()
        stext, slocs = w.spec()
        w.add(
            "replayssm-speculative",
            MSG_SPEC_PREFIX if at_least(v, "0.33.0") else MSG_SPEC_MODE_032,
            f"use_replayssm = true with {stext} and {text}",
            [*slocs, *locs],
            "set enable_prefix_caching = false (ReplaySSM speculative decoding needs Mamba cache mode none)",
        )
    if f.num_spec is not None and f.buffer_len < 1 + f.num_spec:
        text, locs = w.buffer()
        stext, slocs = w.spec()
        w.add(
            "replayssm-speculative",
            MSG_SPEC_BUFFER.format(need=1 + f.num_spec, got=f.buffer_len),
            f"use_replayssm = true with {stext} and {text}",
            [*slocs, *locs],
            f"set replayssm_buffer_len to at least {1 + f.num_spec} (and at most 16)",
        )
    if backend != "flashinfer":
        b, blocs = w.backend()
        stext, slocs = w.spec()
        w.add(
            "replayssm-speculative",
            MSG_SPEC_FI,
            f"use_replayssm = true with {stext} and {b}",
            [*slocs, *blocs],
            'set mamba_backend = "flashinfer" (or remove speculative_config)',
        )


def _plain_path(w: _Walk, mode: str | None, backend: str) -> None:
    """No speculative tokens (0.29.0+): cache mode, then the backend branch."""
    f, v = w.f, w.f.version
    if not at_least(v, "0.32.0") and mode == "all":
        text, locs = w.mode()
        w.add(
            "replayssm-prefix-caching",
            MSG_MODE_ALL,
            f"use_replayssm = true with {text}",
            locs,
            'set mamba_cache_mode = "align" (or turn prefix caching off: enable_prefix_caching = false)',
        )
    if not at_least(v, "0.30.0"):
        return  # 0.29.0: the Triton-only check follows the KDA block (see _failures)
    if backend == "flashinfer":
        if mode == "align":
            text, locs = w.mode()
            b, blocs = w.backend()
            w.add(
                "replayssm-prefix-caching",
                MSG_FI_PREFIX if at_least(v, "0.33.0") else MSG_FI_ALIGN,
                f"use_replayssm = true with {b} and {text}",
                [*blocs, *locs],
                'set enable_prefix_caching = false, or mamba_backend = "triton"',
            )
    elif backend != "triton":
        b, blocs = w.backend()
        w.add(
            "replayssm-backend",
            MSG_TRITON_OR_FI,
            f"use_replayssm = true with {b}",
            blocs,
            _fix_backend("triton", "flashinfer"),
        )
    elif f.v2_model_runner:
        text, locs = w.runner()
        b, blocs = w.backend()
        w.add(
            "replayssm-model-runner",
            MSG_TRITON_V1,
            f"use_replayssm = true with {b} and {text}",
            [*blocs, *locs],
            'set env VLLM_USE_V2_MODEL_RUNNER = "0" (Model Runner V1), or mamba_backend = "flashinfer"',
        )


# ---- registration: one rule per id, sharing one walk per role --------------------------------


def failures(f: RoleFacts) -> list[Hit]:
    """The ReplaySSM failures of one role, computed once per role."""
    if "replayssm" not in f.memo:
        f.memo["replayssm"] = _failures(f)
    hits: list[Hit] = f.memo["replayssm"]
    return hits


rule("replayssm-architecture", Severity.ERROR, "the model's architecture does not support ReplaySSM", source=SOURCE)(
    family_check("replayssm-architecture", failures)
)
rule(
    "replayssm-buffer-len",
    Severity.ERROR,
    "FlashInfer ReplaySSM with replayssm_buffer_len above 16",
    releases=">=0.32.0",
    source=SOURCE,
)(family_check("replayssm-buffer-len", failures))
rule(
    "replayssm-speculative",
    Severity.ERROR,
    "speculative decoding in a form ReplaySSM rejects",
    source=SOURCE,
)(family_check("replayssm-speculative", failures))
rule(
    "replayssm-stochastic-rounding",
    Severity.ERROR,
    "Kimi KDA RecoverSSM with enable_mamba_cache_stochastic_rounding",
    releases=">=0.29.0",
    source=SOURCE,
)(family_check("replayssm-stochastic-rounding", failures))
rule(
    "replayssm-prefix-caching",
    Severity.ERROR,
    "a prefix-caching (Mamba cache) mode ReplaySSM rejects",
    source=SOURCE,
)(family_check("replayssm-prefix-caching", failures))
rule(
    "replayssm-model-runner",
    Severity.ERROR,
    "the model runner ReplaySSM needs (V1 for Triton, V2 for Kimi RecoverSSM with prefix caching)",
    releases=">=0.29.0",
    source=SOURCE + "; VllmConfig.use_v2_model_runner",
)(family_check("replayssm-model-runner", failures))
rule(
    "replayssm-pipeline-parallel",
    Severity.ERROR,
    "Kimi KDA RecoverSSM with pipeline_parallel_size > 1",
    releases=">=0.29.0",
    source=SOURCE,
)(family_check("replayssm-pipeline-parallel", failures))
rule(
    "replayssm-backend",
    Severity.ERROR,
    "the mamba backend is not one ReplaySSM accepts",
    source=SOURCE,
)(family_check("replayssm-backend", failures))
rule(
    "replayssm-kv-connector",
    Severity.ERROR,
    "use_replayssm with an active KV connector, explicit or implied",
    source=SOURCE,
)(family_check("replayssm-kv-connector", failures))


@rule(
    "replayssm-tensor-parallel-heads",
    Severity.ERROR,
    "Mamba heads that tensor parallelism does not divide evenly (checked when vLLM builds the model)",
    source="vllm/model_executor/layers/mamba/mamba_mixer2.py MambaMixer2.__init__",
)
def tensor_parallel_heads(ctx: Context, f: RoleFacts) -> Iterable[Hit]:
    """Needs the model's config.json (`[model] config`, or `serve.model` being a local folder)."""
    config = f.model.config
    heads = config.get("mamba_num_heads") if config is not None else None
    tp = f.serve.get("tensor_parallel_size", 1)
    if f.serve.get("use_replayssm") is not True or not isinstance(heads, int) or not isinstance(tp, int) or tp < 1:
        return []
    if heads % tp == 0:
        return []
    return [
        Hit(
            "replayssm-tensor-parallel-heads",
            f"use_replayssm = true with tensor_parallel_size = {tp} and a model with mamba_num_heads = {heads} "
            f'(config.json); vLLM {f.version} refuses to start when it builds the model: "--use-replayssm requires '
            'tensor-parallel heads to divide evenly"',
            [*f.loc("serve", "use_replayssm"), *f.loc("serve", "tensor_parallel_size"), *f.model.locations],
            "set tensor_parallel_size to a divisor of " + str(heads),
            role=f.role.name,
        )
    ]
