"""What docs/RULES.md says of every rule id: the section that lists it, its releases in words, and the checks made
outside the rule engine (by the modules that read files, compose stacks and fetch sources).

`tools/gen_rules_doc.py` writes RULES.md from this and the registry; `--format sarif` describes each rule of its
results from the same data (`report.formats`), so a rule's help link names the section RULES.md really has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profilekit.records import record
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
    "declared": "Declared constraints (`rules/declared.py`)",
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
}

# findings made outside the rule engine, by the modules that read files and the flag catalogue
OTHER_CHECKS = [
    ("toml-syntax", "error", "a layer or profilekit.toml is not valid TOML", "`tomlio/read.py`"),
    ("invalid-layer", "error", "a layer does not match the layer schema", "`load/layers.py`, `load/models.py`"),
    ("invalid-config", "error", "profilekit.toml does not match its schema", "`load/layers.py`"),
    ("duplicate-option", "error", "one layer writes an option twice (two spellings)", "`load/layers.py`"),
    (
        "template-error",
        "error",
        "(render) a template fails: bad syntax, an undefined name, an exception, endless recursion, bytes that are "
        "not UTF-8, or a reach the Jinja sandbox refuses; nothing is written",
        "`render/templating.py`",
    ),
    (
        "unknown-layer",
        "error",
        "`extends`, `conflicts`, `requires`, a stack or a `[lint] stacks` entry names no layer",
        "`compose/linearise.py`, `compose/names.py`, `lint/repository.py`",
    ),
    (
        "unknown-capability",
        "error",
        "a `conflicts` or `requires` entry `@X` names a capability profilekit does not derive and no layer of the "
        "repository provides",
        "`compose/names.py`",
    ),
    (
        "unknown-role",
        "error",
        "a `[roles.X]` table that only adds env, for a role no layer of the stack defines ([docs/ROLES.md](ROLES.md))",
        "`compose/roles.py`",
    ),
    (
        "unset-removes-nothing",
        "error",
        "an `unset` entry that names nothing effective at its layer's position",
        "`compose/unsets.py`, `compose/roles.py`",
    ),
    ("extends-cycle", "error", "`extends` forms a cycle", "`compose/linearise.py`"),
    (
        "invalid-source",
        "error",
        "a `[sources.NAME]` git address that carries credentials or names a transport that runs programs, a bad "
        "`rev`, or a commit holding a path out of its folder or a symlink where profilekit reads "
        "([docs/SOURCES.md](SOURCES.md))",
        "`sources/`",
    ),
    (
        "source-unlocked",
        "error",
        "a source has no entry in profilekit.lock (or the lock file cannot be read): run `profilekit lock`",
        "`sources/__init__.py`",
    ),
    (
        "source-lock-stale",
        "error",
        "a source's `git` or `rev` in profilekit.toml is not the one profilekit.lock was written for",
        "`sources/__init__.py`",
    ),
    (
        "source-unavailable",
        "error",
        "a source's locked commit is not in the cache and cannot be fetched, or its `rev` names nothing "
        "(did-you-mean over its tags and branches)",
        "`sources/`",
    ),
    (
        "source-tampered",
        "error",
        "a source's files in the cache, or as fetched, do not match the digest profilekit.lock records",
        "`sources/__init__.py`",
    ),
    (
        "source-config-mismatch",
        "warning",
        "a source's own profilekit.toml targets another vLLM release or lints other combinations, or has sources "
        "of its own (not followed)",
        "`rules/sources.py`",
    ),
    (
        "unknown-reference",
        "error",
        "a `${...}` reference in a `serve`, `env` or `command` string names no value of the stack (with did-you-mean)",
        "`compose/references.py`",
    ),
    (
        "invalid-reference",
        "error",
        "a `${...}` that is not a reference: no closing `}`, a table rather than one value, or an array written "
        "inside a string",
        "`compose/references.py`",
    ),
    ("reference-cycle", "error", "references that name each other in a cycle", "`compose/references.py`"),
    (
        "secret-reference-in-argv",
        "error",
        "a `serve` or `command` string references a secret: its value would be on the command line",
        "`compose/references.py`",
    ),
    (
        "secret-reference-in-env",
        "error",
        "an `env` value references a secret: its value would be written into the rendered files",
        "`compose/references.py`",
    ),
    (
        "undeclared-conflict",
        "warning",
        "(lint) layers that break a rule together, and nothing declares them exclusive",
        "`lint/repository.py`",
    ),
]

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
