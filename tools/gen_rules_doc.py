#!/usr/bin/env python3
"""Write docs/RULES.md from the rule registry (`profilekit.rules.RULES`); tests/rules/test_rules_doc.py keeps it in sync.

python3 tools/gen_rules_doc.py
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from profilekit.rules import RULES  # noqa: E402
from profilekit.rules.outside import OUTSIDE_CHECKS  # noqa: E402
from profilekit.vllm.versions import SUPPORTED  # noqa: E402

DOC = REPO / "docs" / "RULES.md"

FAMILIES = {
    "replayssm": "ReplaySSM (`rules/replayssm.py`)",
    "kv": "KV connectors (`rules/kv.py`)",
    "mamba": "Mamba cache (`rules/mamba.py`)",
    "runner": "Model runner (`rules/runner.py`)",
    "pd": "Prefill/decode pairs (`rules/pd.py`)",
    "host": "One host, one resource (`rules/host.py`)",
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
}

# DESIGN section 6's order for the ReplaySSM family; others keep their registration order
ORDER = [
    "replayssm-kv-connector",
    "replayssm-architecture",
    "replayssm-backend",
    "replayssm-prefix-caching",
    "replayssm-speculative",
    "replayssm-buffer-len",
    "replayssm-model-runner",
    "replayssm-stochastic-rounding",
    "replayssm-pipeline-parallel",
    "replayssm-tensor-parallel-heads",
]

# findings made outside the rule engine, by the modules that read files and the flag catalogue
OTHER_CHECKS = OUTSIDE_CHECKS

PREAMBLE = f"""# profilekit rules

Every finding has a stable rule id. Rules run on each role's effective configuration (or on the whole stack)
for the targeted vLLM release; a rule lists the releases it applies to. Where vLLM has a message for the same
failure, the finding's message quotes vLLM's own text for that release. Supported releases:
{", ".join(SUPPORTED)}.

profilekit reports every failing rule; vLLM stops at its first. `profilekit.rules.vllm_verdict` names the rule
vLLM would report first, and the oracle suite (`tests/oracle/test_verdicts.py`, figures in
`tests/oracle/results/verdicts-X.json`) proves that this verdict equals what vLLM's own
`create_engine_config()` does, release by release.

This file is generated by `tools/gen_rules_doc.py` from the rule registry. A minimal failing example of every
rule id, with its output, is in [RULE-EXAMPLES.md](RULE-EXAMPLES.md).

## Choosing rules

`check`, `lint` and `render` show every rule's findings unless told otherwise, as ruff does:

- `[lint] select = [...]` in profilekit.toml keeps only the warnings of the rules it names; `[lint] ignore =
  [...]` leaves rules out. On the command line, `--select` and `--ignore` (repeatable, or comma-separated ids)
  come over profilekit.toml: `--select` starts over with exactly the rules it names (so `--select X` shows X
  even where profilekit.toml ignores it), `--ignore` adds to what is left out.
- A layer leaves a rule out for the findings reported at it (whose first location is in that file), with the
  reason why: `[layer] ignore = {{ "model-facts-missing" = "served from a local mirror the checks cannot read" }}`.
  An ignore without a reason is an error (`invalid-layer`) whose fix shows the form; `--select` does not undo it.
- An id that names no rule is an error with a did-you-mean: `unknown-rule` in profilekit.toml or a layer, a
  usage error (exit 2) on the command line.
- The warnings left out are counted: `0 errors, 1 warning, 3 ignored` in text, `summary.ignored` and
  `summary.ignored_by_rule` in JSON, and in SARIF as results with a `suppressions` entry (`inSource` with the
  layer's reason, or `external`).
- **Errors are never ignored.** An error is a start-up vLLM refuses, a file profilekit cannot read or compose
  (`toml-syntax`, `invalid-layer`, `unknown-layer`, ...), or a constraint the layers themselves declare; it is
  always shown, fails `check` and `lint`, and stops `render`, whatever the selection, so ignoring a refusal never
  makes a broken deployment render. An error of a rule an ignore names says so in a note (`not ignored: ...`).
  Select and ignore choose among warnings: with `--strict`, what is left fails the run.
"""

REPLAYSSM_NOTES = """
### How the ReplaySSM rules change between releases

Source: `VllmConfig.validate_mamba_cached_kernel` in `vllm/config/vllm.py` of each release's wheel.

| release | architecture | prefix caching | speculative decoding | backend | KV connector |
| --- | --- | --- | --- | --- | --- |
| 0.27.0, 0.27.1 | Nemotron-H only ("only supported for Nemotron-H models") | off by default for hybrid models; turned on, mode `all` is refused ("pass --mamba-cache-mode align") | refused | triton | refused |
| 0.28.0 | as 0.27 | on by default, mode `align`; explicit `all` refused | refused | triton | refused |
| 0.29.0 | + Kimi KDA models ("not supported for architecture") | as 0.28 | any speculative tokens take the Kimi RecoverSSM path; other models: "RecoverSSM is only supported for Kimi-K3 KDA"; RecoverSSM with align mode needs Model Runner V2 | triton | refused |
| 0.30.0, 0.31.0 | as 0.29 | + FlashInfer refuses align mode | as 0.29; RecoverSSM needs triton | triton or flashinfer; Triton needs Model Runner V1 | refused |
| 0.32.0 | as 0.29 | `all` gone (argparse refuses it) | Mamba2 models: FlashInfer, mode none, buffer >= 1 + N | FlashInfer buffer <= 16 | refused |
| 0.33.0 | as 0.29 | messages say "prefix caching" | as 0.32 | as 0.32 | allowed on the Kimi KDA path |

On a GPU host with `VLLM_USE_V2_MODEL_RUNNER` unset, vLLM 0.30+ picks Model Runner V2 unless a feature V2 lacks
forces V1 (some speculative methods, per release); profilekit judges for such a host.
"""


LIMITS = """
## Known limits

- **Host-dependent checks.** profilekit judges for a GPU host with Triton. It does not check
  what depends on the GPU model: stochastic rounding of the Mamba cache with the Triton backend needs compute
  capability 10.0 (`vllm/config/mamba.py`).
- **Model Runner V2, chosen automatically.** With `VLLM_USE_V2_MODEL_RUNNER` unset, profilekit models the
  features that make vLLM fall back to V1 that a profile can express (speculative methods per release, Mamba
  cache mode `all` in 0.30/0.31); others (custom logits-processor plugins installed on the host, stock
  torch.compile, dual batch overlap) are not visible in a profile. Set the variable explicitly in ReplaySSM
  layers, as the example `replayssm` layer does.
- **Checks vLLM makes when it builds the model.** `replayssm-tensor-parallel-heads` needs the model's
  `config.json` (`[model] config`, or `serve.model` being a local folder). An unknown connector name with
  `disable_hybrid_kv_cache_manager` set is refused only when vLLM builds the connector; profilekit reports it
  all the same.
- **One host.** The `host-*` rules take every role of a stack for one host, unless two roles' `VLLM_NIXL_SIDE_CHANNEL_HOST`
  name different addresses. They compare GPUs only between roles that list `CUDA_VISIBLE_DEVICES` (a role without
  it may get its devices from a launcher such as Kubernetes), a command role's port only where its command says
  `--port`, and they do not judge the GPU count of multi-node (`nnodes` > 1), Ray or external-launcher
  deployments, nor the ports data parallelism opens besides the side channel (`data_parallel_rpc_port`). Roles
  that list one GPU are an error only when their `gpu_memory_utilization` adds up to 1 or more.
- **The model's config.json.** The cross-field rules read the model's shape (heads, KV heads, layers, experts,
  positions, RoPE scaling, dtype) from the config.json of `[model] config` (a file or a folder), or of
  `serve.model` when that is a local folder, also when `[model] architecture` is declared; else from the
  `[models."ORG/NAME"]` entry of profilekit.toml for the model's id (once for the repository); else from the
  keys of it profilekit ships for the models of its examples and tests (`rules/model-configs.json`: Qwen3
  0.6B and 8B, Llama 3.1 8B Instruct, Nemotron-H 8B, each with the file it was transcribed from). A check
  whose inputs are set but whose model facts are missing does not pass silently: `model-facts-missing` names
  it, once per model for the whole run, with every check it skipped and the stacks and roles it skipped them
  for (`--strict` fails on it; `[lint] ignore` or a layer's `[layer] ignore` leaves it out). A key absent from
  the config.json counts as unknown, not as transformers' default for the model type. profilekit does not read
  `tokenizer_config.json`, whose `model_max_length` can lower vLLM's derived `max_model_len`.
- **Scheduler defaults** are those of `vllm serve` on a GPU host whose device cannot be queried
  (`get_batch_defaults`: 2048 batched tokens, 256 sequences): an H100/H200 (8192) or a >= 160 GB device
  (16384 tokens, 1024 sequences) raises them, so a `max_num_seqs` above 2048 without `max_num_batched_tokens`
  is judged as refused.
- **Not modelled yet**: speculative methods per architecture (`mtp` needs MTP layers in the model's config;
  draft models are read over the network), LoRA support of the architecture, and the multimodal and
  encoder-decoder adjustments of chunked prefill. More pipeline stages than hidden layers is only checked by
  vLLM when it builds the model, hence a warning (`pipeline-parallel-layers`).
- **The CPU oracle** (`tests/oracle/`) cannot decide cases that import LMCache (compiled CUDA code) or, in
  0.27.0-0.29.0, MooncakeConnector (its module needs `httpx`, which the oracle pins leave out). They are counted
  as *undecidable* in `tests/oracle/results/verdicts-X.json`, never as agreements, and each must match a known
  limit (`tools/verdict_report.py`). vLLM's EPLB platform check ("Expert parallelism load balancing is only
  supported on CUDA devices ...") answers as a CUDA host there (tools/oracle/worker.py `judge_as_gpu_host`), so
  the oracle judges `expert-parallel-load-balancing` like the other rules.
  HiSparse and the Proton profiler are refused off NVIDIA CUDA before their other checks, and the CPU platform
  has no static CUDA graphs (adaptive verification then stops at its graph check): `hisparse-unsupported`,
  `hisparse-hybrid-kv-cache-manager`, `proton-cuda-graphs` and the pipeline check of
  `speculative-adaptive-engine` give a GPU host's verdict, tested against vLLM's source and, on the oracle, as
  that limit (`tests/oracle/test_hisparse_verdicts.py`, `test_proton_verdicts.py`, `test_adaptive_runner_verdicts.py`).
"""


def _releases(spec: str) -> str:
    from packaging.specifiers import SpecifierSet

    if not spec:
        return "all"
    chosen = [v for v in SUPPORTED if SpecifierSet(spec).contains(v)]
    return f"{chosen[0]}–{chosen[-1]}" if len(chosen) > 1 else chosen[0]


def render() -> str:
    unlisted = sorted({r.check.__module__.rsplit(".", 1)[-1] for r in RULES.values()} - set(FAMILIES))
    if unlisted:  # a module missing here would silently drop its rules from docs/RULES.md
        raise SystemExit(f"gen_rules_doc: rule modules without a family in FAMILIES: {', '.join(unlisted)}")
    lines = [PREAMBLE]
    for family, title in FAMILIES.items():
        rules = [r for r in RULES.values() if r.check.__module__.rsplit(".", 1)[-1] == family]
        rules.sort(key=lambda r: ORDER.index(r.id) if r.id in ORDER else len(ORDER))
        if not rules:
            continue
        lines.append(f"## {title}\n")
        lines.append("| id | severity | releases | what | vLLM source |")
        lines.append("| --- | --- | --- | --- | --- |")
        for r in rules:
            lines.append(
                f"| `{r.id}` | {r.severity.value} | {_releases(r.releases)} | {r.summary} | {r.source or '—'} |"
            )
        lines.append("")
        if family == "replayssm":
            lines.append(REPLAYSSM_NOTES)
    lines.append(LIMITS)
    lines.append("## Checks outside the rule engine\n")
    lines.append("| id | severity | what | where |")
    lines.append("| --- | --- | --- | --- |")
    for rule_id, severity, what, where in OTHER_CHECKS:
        lines.append(f"| `{rule_id}` | {severity} | {what} | {where} |")
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    DOC.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC.relative_to(REPO)} ({len(RULES)} rules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
