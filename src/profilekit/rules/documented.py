"""What docs/RULES.md says of every rule id: the section that lists it, its releases in words, and the checks made
outside the rule engine (by the modules that read files, compose stacks and fetch sources).

`tools/gen_rules_doc.py` writes RULES.md from this and the registry; `--format sarif` describes each rule of its
results from the same data (`report.formats`), so a rule's help link names the section RULES.md really has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profilekit.records import record
from profilekit.rules.outside import OUTSIDE_CHECKS
from profilekit.vllm.versions import SUPPORTED

if TYPE_CHECKING:
    from profilekit.rules.engine import Rule

# a rule module's name -> the title of its section in RULES.md
FAMILIES = {
    "replayssm": "ReplaySSM (`rules/replayssm.py`)",
    "kv": "KV connectors (`rules/kv.py`)",
    "mamba": "Mamba cache (`rules/mamba.py`)",
    "runner": "Model runner (`rules/runner.py`)",
    "pd": "Prefill/decode pairs (`rules/pd.py`)",
    "host": "One host, one resource (`rules/host.py`)",
    "multinode": "Roles larger than one node (`rules/multinode.py`)",
    "wiring": "The wiring between roles (`rules/wiring.py`)",
    "declared": "Declared constraints (`rules/declared.py`)",
    "layering": "The order a stack is written in (`rules/layering.py`)",
    "secrets": "Secrets (`rules/secrets.py`)",
    "env": "The environment (`rules/env.py`)",
    "basic": "The model (`rules/basic.py`)",
    "options": "Options and values (`rules/options.py`, from the flag catalogue and the config classes' constraints)",
    "modelcfg": "The model's config.json: positions, and checks it could not run (`rules/modelcfg.py`)",
    "parallel": "Tensor, pipeline and context parallelism (`rules/parallel.py`)",
    "microbatch": "Microbatching (`rules/microbatch.py`)",
    "experts": "Expert parallelism (`rules/experts.py`)",
    "dataparallel": "Data-parallel launch options (`rules/dataparallel.py`)",
    "scheduler": "Scheduler budgets (`rules/scheduler.py`)",
    "scheduling": "Async scheduling, the speculative token budget, CUDA graph capture sizes and Engram microbatching (`rules/scheduling.py`)",
    "cache": "KV and Mamba cache, CPU offloading (`rules/cache.py`)",
    "speculative": "Speculative decoding (`rules/speculative.py`)",
    "specargs": "Speculative decoding, field by field (`rules/specargs.py`)",
    "specvllm": "Speculative decoding against the engine: watermarking (`rules/specvllm.py`)",
    "compilation": "The compilation config (`rules/compilation.py`)",
    "frontend": "The serve front end (`rules/frontend.py`)",
    "observability": "Observability and structured outputs (`rules/observability.py`)",
    "outputs": "Sampling outputs, metrics and kernel selections (`rules/outputs.py`)",
    "exclusive": "A flag and the config key it feeds, both written (`rules/exclusive.py`)",
    "postinit": "Option pairs `VllmConfig.__post_init__` refuses (`rules/postinit.py`)",
    "configs": "Profiler, encoder-cache transfer and auxiliary outputs (`rules/configs.py`)",
    "multimodal": "Multimodal options, for a multimodal model (`rules/multimodal.py`)",
    "quantpool": "Pooling and online quantization configs (`rules/quantpool.py`)",
    "subconfigs": "Attention, encoder-cache, LoRA and watermark configs (`rules/subconfigs.py`)",
    "features": "Features an executor or backend does not support (`rules/features.py`)",
    "moe_parallel": "Experts, Engram tables, API servers and object storage against the parallel launch (`rules/moe_parallel.py`)",
    "hisparse": "HiSparse sparse-MLA decode hot-buffering (`rules/hisparse.py`)",
    "proton": "The Proton profiler beside CUDA graphs (`rules/proton.py`)",
    "modelfit": "Options refused for the model served: nvfp4 KV cache with MLA, offline data parallelism (`rules/modelfit.py`)",
    "archsupport": "What the model's architecture supports: Transformers backend, LoRA, MoE backends (`rules/archsupport.py`)",
    "modelkind": "Options against what the model is: float16, encoder-decoder, multimodal, Inkling LoRA, runner (`rules/modelkind.py`)",
    "checkpoint": "The checkpoint's own quantization against the options (`rules/checkpoint.py`)",
    "speclen": "The draft's max_model_len against the target's (`rules/speclen.py`)",
    "platforms": "What the declared GPU lets vLLM start: quantization, bfloat16, platform-only features (`rules/platforms.py`)",
    "capacity": "Will the weights and the KV cache fit on the declared GPU (`rules/capacity.py`, docs/CAPACITY.md)",
}

# findings made outside the rule engine, by the modules that read files and the flag catalogue
# findings made outside the rule engine (rules/outside.py: every rule id `select` and `ignore` may name)
OTHER_CHECKS = OUTSIDE_CHECKS

OTHER_SECTION = "Checks outside the rule engine"


def releases_text(spec: str) -> str:
    """A rule's PEP 440 `releases` as RULES.md words it: `all`, `0.29.0–0.33.0`, or one release."""
    from packaging.specifiers import SpecifierSet  # noqa: PLC0415 - only the docs and --format sarif word releases

    if not spec:
        return "all"
    chosen = [v for v in SUPPORTED if SpecifierSet(spec).contains(v)]
    if not chosen:
        return "none of the supported releases"
    return f"{chosen[0]}–{chosen[-1]}" if len(chosen) > 1 else chosen[0]


def family(rule: Rule) -> str:
    """The rule module a registered rule belongs to (`replayssm` for rules/replayssm.py)."""
    return rule.check.__module__.rsplit(".", 1)[-1]


@record(frozen=True, slots=True)
class Documented:
    """One rule id as RULES.md lists it."""

    id: str
    severity: str
    summary: str  # the `what` column, Markdown
    section: str  # the heading it is listed under
    releases: str = "all"
    source: str = ""  # the vLLM source it mirrors, or the profilekit modules that make it (outside the engine)


def documented(rule_id: str, rules: dict[str, Rule]) -> Documented | None:
    """How RULES.md lists `rule_id`; None for an id it does not list."""
    rule = rules.get(rule_id)
    if rule is not None:
        title = FAMILIES.get(family(rule))
        if title is None:
            return None
        return Documented(rule.id, rule.severity.value, rule.summary, title, releases_text(rule.releases), rule.source)
    for other, severity, what, where in OTHER_CHECKS:
        if other == rule_id:
            return Documented(other, severity, what, OTHER_SECTION, "all", where)
    return None
