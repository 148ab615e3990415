"""Which model a role serves: its architecture, its config.json, and what vLLM knows about that architecture.

vLLM reads the model's shape and architecture (`architectures[0]`) from its `config.json`. profilekit reads that
file, in this order, from `[model] config` of a layer, from `serve.model` when it is a local folder, from the
`[models."ORG/NAME"]` entry of profilekit.toml for the model's id, or from the keys of it profilekit ships for
well-known Hugging Face ids (`model-configs.json`, each with its source). The architecture is `[model]
architecture` when a layer declares it, else the config.json's, else that of a shipped table of well-known ids.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from collections.abc import Iterable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profilekit.cache.record import probe
from profilekit.errors import Finding, Location, Severity
from profilekit.records import record
from profilekit.vllm.versions import version_key

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig


@record(frozen=True, slots=True)
class ArchInfo:
    """What vLLM's model registry says about one architecture (`vllm/model_executor/models/registry.py`).

    `hybrid`: implements `IsHybrid` (attention + Mamba/linear-attention layers).
    `mamba_prefix_caching`: implements `SupportsMambaPrefixCaching` (Mamba cache mode `all`).
    `replayssm_since`: the first release whose class implements `SupportsReplaySSM`.
    `pipeline_parallel`: implements `SupportsPP` (`ModelConfig.verify_with_parallel_config`).
    `lora`: implements `SupportsLoRA` in 0.33.0, the only release that checks it (`LoRAConfig.verify_with_model_config`).
    `transformers_backend`: transformers' class of that name sets `_supports_attention_backend`, which
    `--model-impl transformers` requires before 0.30.0 (registry `_try_resolve_transformers`; transformers 5.24.0,
    as the oracle pins it; the hybrid models' classes never set it).
    """

    hybrid: bool = False
    mamba_prefix_caching: bool = False
    replayssm_since: str | None = None
    pipeline_parallel: bool = True
    lora: bool = True
    transformers_backend: bool = True

    def supports_replayssm(self, version: str) -> bool:
        return self.replayssm_since is not None and version_key(version) >= version_key(self.replayssm_since)


_NEMOTRON_H = ArchInfo(hybrid=True, mamba_prefix_caching=True, replayssm_since="0.27.0", transformers_backend=False)
# vllm/models/kimi_k3/nvidia/model.py: SupportsReplaySSM from 0.29.0; no SupportsMambaPrefixCaching, no SupportsLoRA
_KIMI = ArchInfo(hybrid=True, mamba_prefix_caching=False, replayssm_since="0.29.0", lora=False)
_HYBRID = ArchInfo(hybrid=True)
# hybrid models whose transformers class leaves `_supports_attention_backend` unset
_HYBRID_NO_TRANSFORMERS = ArchInfo(hybrid=True, transformers_backend=False)
# hybrid models whose class implements SupportsMambaPrefixCaching (Mamba cache mode `all` before 0.32.0), found
# by the capacity oracle (tests/oracle/test_capacity_kv.py compares the mode vLLM 0.27.x picks)
_HYBRID_PREFIX = ArchInfo(hybrid=True, mamba_prefix_caching=True)
_HYBRID_PREFIX_NO_TRANSFORMERS = ArchInfo(hybrid=True, mamba_prefix_caching=True, transformers_backend=False)
_PLAIN = ArchInfo()

ARCHITECTURES: dict[str, ArchInfo] = {
    "NemotronHForCausalLM": _NEMOTRON_H,
    # the registry maps it to NemotronHForCausalLM; transformers has no class of that name (not modelled)
    "NemotronHPuzzleForCausalLM": ArchInfo(hybrid=True, mamba_prefix_caching=True, replayssm_since="0.27.0"),
    "KimiLinearForCausalLM": ArchInfo(
        hybrid=True, mamba_prefix_caching=False, replayssm_since="0.29.0", lora=False, transformers_backend=False
    ),
    "KimiK3ForConditionalGeneration": _KIMI,
    # hybrid models without ReplaySSM (classes implementing IsHybrid)
    "NemotronH_Nano_VL_V2": _HYBRID,
    "Qwen3NextForCausalLM": _HYBRID_NO_TRANSFORMERS,
    "Qwen3_5ForCausalLM": _HYBRID_NO_TRANSFORMERS,
    "Qwen3_5MoeForCausalLM": _HYBRID_NO_TRANSFORMERS,
    "Qwen3_5ForConditionalGeneration": _HYBRID_NO_TRANSFORMERS,
    "Qwen3_5MoeForConditionalGeneration": _HYBRID_NO_TRANSFORMERS,
    "JambaForCausalLM": _HYBRID_PREFIX_NO_TRANSFORMERS,
    "FalconH1ForCausalLM": _HYBRID_PREFIX_NO_TRANSFORMERS,
    "GraniteMoeHybridForCausalLM": _HYBRID_PREFIX,
    # vllm/model_executor/models/zamba2.py: no SupportsPP in any release 0.27.0-0.33.0, no SupportsLoRA (0.33.0)
    "Zamba2ForCausalLM": ArchInfo(
        hybrid=True, mamba_prefix_caching=True, pipeline_parallel=False, lora=False, transformers_backend=False
    ),
    "BambaForCausalLM": _HYBRID_NO_TRANSFORMERS,
    "Lfm2ForCausalLM": _HYBRID,
    "Lfm2MoeForCausalLM": _HYBRID,
    "Plamo2ForCausalLM": _HYBRID,
    "BailingMoeV3ForCausalLM": ArchInfo(hybrid=True, lora=False),  # no SupportsLoRA (0.33.0)
    "MiniMaxText01ForCausalLM": _HYBRID,
    # attention-only models that often appear in profiles
    "LlamaForCausalLM": _PLAIN,
    "MistralForCausalLM": _PLAIN,
    "Qwen2ForCausalLM": _PLAIN,
    "Qwen3ForCausalLM": _PLAIN,
    "Qwen3MoeForCausalLM": _PLAIN,
    "GptOssForCausalLM": _PLAIN,
    "DeepseekV3ForCausalLM": _PLAIN,
    "Gemma3ForCausalLM": _PLAIN,
    "Gemma3ForConditionalGeneration": _PLAIN,
    "MixtralForCausalLM": _PLAIN,
    "Phi3ForCausalLM": _PLAIN,
}

# Well-known Hugging Face model ids (compared case-insensitively) and the architecture their
# config.json names. Extend with `[model] architecture` in a layer rather than here.
WELL_KNOWN_MODELS: dict[str, str] = {
    key.lower(): arch
    for arch, keys in {
        "NemotronHForCausalLM": [
            "nvidia/Nemotron-H-4B-Base-8K",
            "nvidia/Nemotron-H-4B-Instruct-128K",
            "nvidia/Nemotron-H-8B-Base-8K",
            "nvidia/Nemotron-H-8B-Reasoning-128K",
            "nvidia/Nemotron-H-47B-Base-8K",
            "nvidia/Nemotron-H-47B-Reasoning-128K",
            "nvidia/Nemotron-H-56B-Base-8K",
            "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
            "nvidia/NVIDIA-Nemotron-Nano-12B-v2",
            "nvidia/NVIDIA-Nemotron-Nano-9B-v2-Base",
            "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
            "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8",
            "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
            "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
            "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
            "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
            "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4",
            "RedHatAI/NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8-block",
        ],
        "KimiLinearForCausalLM": [
            "moonshotai/Kimi-Linear-48B-A3B-Instruct",
            "moonshotai/Kimi-Linear-48B-A3B-Base",
        ],
        "Qwen3NextForCausalLM": [
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "Qwen/Qwen3-Next-80B-A3B-Thinking",
        ],
        "Qwen3ForCausalLM": [
            "Qwen/Qwen3-0.6B",
            "Qwen/Qwen3-1.7B",
            "Qwen/Qwen3-4B",
            "Qwen/Qwen3-8B",
            "Qwen/Qwen3-14B",
            "Qwen/Qwen3-32B",
        ],
        "Qwen3MoeForCausalLM": ["Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-235B-A22B"],
        "Qwen2ForCausalLM": [
            "Qwen/Qwen2.5-0.5B-Instruct",
            "Qwen/Qwen2.5-1.5B-Instruct",
            "Qwen/Qwen2.5-7B-Instruct",
            "Qwen/Qwen2.5-72B-Instruct",
        ],
        "LlamaForCausalLM": [
            "meta-llama/Llama-3.1-8B-Instruct",
            "meta-llama/Meta-Llama-3.1-8B-Instruct",
            "meta-llama/Llama-3.1-70B-Instruct",
            "meta-llama/Llama-3.2-1B",
            "meta-llama/Llama-3.2-1B-Instruct",
            "meta-llama/Llama-3.2-3B-Instruct",
            "meta-llama/Llama-3.3-70B-Instruct",
        ],
        "MistralForCausalLM": ["mistralai/Mistral-7B-Instruct-v0.3"],
        "GptOssForCausalLM": ["openai/gpt-oss-20b", "openai/gpt-oss-120b"],
        "DeepseekV3ForCausalLM": ["deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1"],
        "GraniteMoeHybridForCausalLM": ["ibm-granite/granite-4.0-h-small", "ibm-granite/granite-4.0-h-tiny"],
        "JambaForCausalLM": ["ai21labs/AI21-Jamba-Mini-1.7", "ai21labs/AI21-Jamba-Large-1.7"],
        "FalconH1ForCausalLM": ["tiiuae/Falcon-H1-7B-Instruct", "tiiuae/Falcon-H1-34B-Instruct"],
    }.items()
    for key in keys
}


@record(frozen=True, slots=True)
class ModelFacts:
    """The model one vLLM role serves, as far as profilekit can tell without the network."""

    model: str | None
    architecture: str | None
    # how the architecture was found: "declared", "config.json", "config.json shipped with profilekit" (model-configs.json),
    # "well-known id", or "" when unknown
    source: str
    locations: tuple[Location, ...] = field(default_factory=tuple)
    problem: str = ""  # why a config.json could not be read
    config: dict[str, Any] | None = None  # the local config.json, when profilekit read one

    @property
    def known(self) -> bool:
        return self.architecture is not None

    @property
    def info(self) -> ArchInfo | None:
        if self.architecture is None:
            return None
        return ARCHITECTURES.get(self.architecture, _PLAIN)

    @property
    def hybrid(self) -> bool | None:
        info = self.info
        return None if info is None else info.hybrid


def _read_config(path: Path, shown: str = "") -> tuple[str | None, dict[str, Any] | None, str]:
    """(architecture, the config, why not) of a config.json (named `shown` in the why, else by its path)."""
    name = shown or str(path)
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, None, f"{name} does not exist"
    except (OSError, UnicodeDecodeError) as exc:
        return None, None, f"{name} cannot be read ({exc})"
    except json.JSONDecodeError as exc:
        return None, None, f"{name} is not valid JSON ({exc.msg} at line {exc.lineno})"
    except (ValueError, RecursionError) as exc:  # an integer of more digits than Python converts, deep nesting
        return None, None, f"{name} is not JSON profilekit can read ({type(exc).__name__}: {exc})"
    if not isinstance(raw, dict):
        return None, None, f"{name} does not hold a JSON object"
    archs = raw.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0], raw, ""
    return None, raw, f"{name} has no `architectures` list"


def _local_path(text: str) -> Path:
    """`text` as a local path, `~` expanded as vLLM's `os.path.expanduser` does: `~name` of an unknown user
    stays as written (pathlib's expanduser raises there), and so does a value no path can hold (a NUL)."""
    try:
        return Path(os.path.expanduser(text))
    except ValueError:
        return Path(text)


def model_facts(role: RoleConfig, root: Path | None, known: ModelConfigs | None = None) -> ModelFacts:
    """Resolve a role's model, its architecture and, when there is one to read, its config.json; never raises.

    The config.json comes from `[model] config` (a file or a folder), else from `serve.model` when that is
    a local folder, else from `known` (profilekit.toml's `[models]`, then the shipped keys of well-known ids).
    The architecture comes from `[model] architecture`, else from that config.json, else from the table of
    well-known model ids. A declared architecture does not stop profilekit reading the config.json: the
    cross-field rules need the model's shape (heads, layers, positions, dtype).
    """
    model_entry = role.entry("serve", "model")
    model = model_entry.value if model_entry is not None and isinstance(model_entry.value, str) else None
    model_locs = (model_entry.origin,) if model_entry is not None else ()

    problem = ""
    raw: dict[str, Any] | None = None
    arch: str | None = None
    config_locs: tuple[Location, ...] = ()
    found = "config.json"
    config = role.entry("model", "config")
    if config is not None and isinstance(config.value, str):
        path = _local_path(config.value)
        if not path.is_absolute() and root is not None:
            path = root / path
        probe(path)
        if path.is_dir():
            path = path / "config.json"
        arch, raw, problem = _read_config(path)
        config_locs = (config.origin,)
    elif model is not None:
        folder = _local_path(model)
        if not folder.is_absolute() and root is not None:
            probe(root / folder)
            if (root / folder).is_dir():
                folder = root / folder
        probe(folder)
        if folder.is_dir():
            arch, raw, problem = _read_config(folder / "config.json")
            config_locs = model_locs
        else:
            arch, raw, problem, config_locs, found = (known or SHIPPED).lookup(model, model_locs)

    declared = role.entry("model", "architecture")
    if declared is not None and isinstance(declared.value, str):
        extra = tuple(loc for loc in config_locs if raw is not None and loc != declared.origin)
        return ModelFacts(model, declared.value, "declared", (declared.origin, *extra), problem, config=raw)
    if arch is not None:
        return ModelFacts(model, arch, found, config_locs or model_locs, config=raw)
    well_known = WELL_KNOWN_MODELS.get(model.lower()) if model is not None else None
    if well_known is not None:
        return ModelFacts(model, well_known, "well-known id", model_locs, problem, config=raw)
    return ModelFacts(model, None, "", config_locs or model_locs, problem, config=raw)


# ---- the config.json files known by model id: profilekit.toml's [models], then the shipped ones -------------

VENDORED = Path(__file__).with_name("model-configs.json")


@functools.cache
def vendored() -> dict[str, dict[str, Any]]:
    """The shipped keys of well-known models' config.json, by lowercase model id (aliases included)."""
    data = json.loads(VENDORED.read_text(encoding="utf-8"))["models"]
    table: dict[str, dict[str, Any]] = {}
    for name, entry in data.items():
        for alias in (name, *entry.get("also", [])):
            table[alias.lower()] = entry["config"]
    return table


@record(frozen=True, slots=True)
class NamedModel:
    """A `[models."ORG/NAME"]` entry of profilekit.toml: the model id, its config path as written, and where."""

    model: str
    config: str
    location: Location


class ModelConfigs:
    """The config.json files profilekit knows for model ids: `[models]` of profilekit.toml, else the shipped keys.

    Each file is read once per run, however many roles serve its model.
    """

    def __init__(self, root: Path | None, named: Iterable[NamedModel] = ()) -> None:
        self.root = root
        self.named = {entry.model.lower(): entry for entry in named}
        self._read: dict[str, tuple[str | None, dict[str, Any] | None, str]] = {}

    def path(self, entry: NamedModel) -> Path:
        """The file or folder an entry names."""
        path = _local_path(entry.config)
        return path if path.is_absolute() or self.root is None else self.root / path

    def file(self, entry: NamedModel) -> Path:
        """The config.json an entry names (in its folder, for a folder)."""
        path = self.path(entry)
        return path / "config.json" if path.is_dir() else path

    def read(self, entry: NamedModel) -> tuple[str | None, dict[str, Any] | None, str]:
        """(architecture, config, why not) of an entry's file (a folder: its config.json)."""
        key = entry.model.lower()
        if key not in self._read:
            probe(self.path(entry))
            path = self.file(entry)
            shown = entry.config if path == self.path(entry) else f"{entry.config.rstrip('/')}/config.json"
            self._read[key] = _read_config(path, shown)
        return self._read[key]

    def lookup(
        self, model: str, model_locs: tuple[Location, ...]
    ) -> tuple[str | None, dict[str, Any] | None, str, tuple[Location, ...], str]:
        """(architecture, config, problem, its locations, how it was found) of model id `model`."""
        entry = self.named.get(model.lower())
        if entry is not None:
            arch, raw, problem = self.read(entry)
            where = f"profilekit.toml [models.{json.dumps(entry.model)}] config: "
            return arch, raw, where + problem if problem else "", (*model_locs, entry.location), "config.json"
        shipped = vendored().get(model.lower())
        if shipped is None:
            return None, None, "", (), "config.json"
        # where the model is named is where its facts come from: left out beside a declared architecture
        return str(shipped["architectures"][0]), dict(shipped), "", (), "config.json shipped with profilekit"

    def problems(self, served: Iterable[str] | None = None) -> list[Finding]:
        """`model-config` for each entry whose file cannot be used (with `served`: of those models only)."""
        wanted = None if served is None else {name.lower() for name in served}
        found: list[Finding] = []
        for key, entry in self.named.items():
            if wanted is not None and key not in wanted:
                continue
            _arch, raw, problem = self.read(entry)
            if problem:
                found.append(
                    Finding(
                        "model-config",
                        Severity.ERROR,
                        f"models.{json.dumps(entry.model)}.config: {problem}",
                        [entry.location],
                        "name the model's config.json (or its folder), relative to the repository root"
                        if raw is None
                        else 'name the model class in its "architectures" list, as vLLM reads it',
                    )
                )
        return found

    def unused(self, served: Iterable[str] | None) -> list[Finding]:
        """`unused-model-config` for each entry naming a model no layer serves (`served`: every model id a layer
        names; None when one is a reference profilekit cannot follow: then none is reported)."""
        if served is None:
            return []
        names = {name.lower(): name for name in served}
        found: list[Finding] = []
        for key, entry in self.named.items():
            if key not in names:
                close = difflib.get_close_matches(entry.model, list(names.values()), n=1, cutoff=0.6)
                found.append(
                    Finding(
                        "unused-model-config",
                        Severity.WARNING,
                        f"models.{json.dumps(entry.model)}: no layer serves this model",
                        [entry.location],
                        f"did you mean {close[0]!r}?" if close else "fix the model id, or remove the entry",
                    )
                )
        return found


# the shipped keys alone: for a check run without a repository's profilekit.toml
SHIPPED = ModelConfigs(None)
