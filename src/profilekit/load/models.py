"""Pydantic models of the layer file and of profilekit.toml (DESIGN sections 3 and 4): the schema of record.

A run whose files are valid never imports this module: layerdata.py validates them into plain classes of the
same shape. These models say what is wrong with a file that is not (layers.py's findings) and give the JSON
schema (load/schema.py); `plain` turns what they accept into the classes the rest of profilekit uses.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, field_validator

from profilekit.load import layerdata
from profilekit.load.layerdata import (
    CAPABILITY,
    ENV_NAME,
    GPU_CAPABILITY,
    GPU_NAME,
    GRES_TYPE,
    LABEL_KEY,
    LABEL_VALUE,
    MAX_GPUS_PER_NODE,
    MAX_HOST_MEMORY_GIB,
    MAX_PORT,
    MAX_WEIGHTS_GIB,
    REFERENCE,
    ROLE_NAME,
    SBATCH_WORD,
    SECRET_KEY,
    SECRET_MAX_LENGTH,
    SECRET_NAME,
    SOURCE_NAME,
)

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)

RoleName = Annotated[str, StringConstraints(pattern=ROLE_NAME)]
# checked key by key, so a bad name is reported at its own line (pydantic's patterns are Rust regexes: `$` is
# the end of the text, so "FOO\n" does not match)
EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME)]
LayerRef = Annotated[str, StringConstraints(pattern=REFERENCE)]
Capability = Annotated[str, StringConstraints(pattern=CAPABILITY)]
# Kubernetes: a Secret's name is a DNS-1123 subdomain, a key in it letters, digits, '-', '_' and '.'
SecretName = Annotated[str, StringConstraints(max_length=SECRET_MAX_LENGTH, pattern=SECRET_NAME)]
SecretKey = Annotated[str, StringConstraints(max_length=SECRET_MAX_LENGTH, pattern=SECRET_KEY)]


def _written(reason: str) -> str:
    if not reason.strip():
        raise ValueError("the reason is only white space")
    return reason


# why a layer ignores a rule: required, and more than white space (layerdata's `_reasons` alike)
Reason = Annotated[str, StringConstraints(min_length=1), AfterValidator(_written)]


class Secret(BaseModel):
    """`{ secret = true }`: the value comes from the launching environment and is never written."""

    model_config = _STRICT
    secret: Literal[True]


EnvValue = str | Secret


class LayerMeta(BaseModel):
    """The `[layer]` table: metadata and declared constraints."""

    model_config = _STRICT
    description: str = Field(default="", description="shown by `profilekit list`")
    extends: list[LayerRef] = Field(
        default_factory=list, description="layers composed before this one, depth-first, left to right"
    )
    group: str | None = Field(default=None, description="at most one layer of a group in a stack")
    provides: list[Capability] = Field(
        default_factory=list, description='capabilities this layer brings, matched by "@NAME" elsewhere'
    )
    conflicts: list[LayerRef] = Field(
        default_factory=list, description="layer names or @capabilities that must not be in the same stack"
    )
    requires: list[LayerRef] = Field(
        default_factory=list, description="layer names or @capabilities the stack must have"
    )
    abstract: bool = Field(default=False, description="a mixin: never checked, rendered or linted alone")
    unset: list[str] = Field(
        default_factory=list,
        description='remove values an earlier layer set ("serve.KEY", "env.NAME", "serve.opt.key", "roles.R")',
    )
    ignore: dict[str, Reason] = Field(
        default_factory=dict,
        description="rule ids whose warnings reported at this layer are not shown, each with the reason why",
    )

    @field_validator("extends")
    @classmethod
    def _extends_names_layers(cls, value: list[str]) -> list[str]:
        for item in value:
            if item.startswith("@"):
                raise ValueError(f"extends names layers, not capabilities: {item!r}")
        return value


class ModelFacts(BaseModel):
    """The `[model]` table: facts vLLM reads from the model's config.json."""

    model_config = _STRICT
    architecture: str | None = Field(default=None, description="the model class in config.json's architectures")
    config: str | None = Field(default=None, description="path to a local config.json (relative to the repo)")
    weights_gib: Annotated[float, Field(gt=0, le=MAX_WEIGHTS_GIB)] | None = Field(
        default=None, description="the checkpoint's size in GiB, what `profilekit capacity` takes for its weights"
    )
    weights_index: str | None = Field(
        default=None,
        min_length=1,
        description="path to the checkpoint's model.safetensors.index.json (relative to the repo): its total_size",
    )


class Hardware(BaseModel):
    """The `[hardware]` table (and `[roles.R.hardware]`): what a role runs on (docs/HARDWARE.md)."""

    model_config = _STRICT
    gpu: str | None = Field(
        default=None,
        min_length=1,
        description="the GPU model every process of the role runs on: a name of profilekit's catalogue "
        "(docs/HARDWARE.md) or of profilekit.toml's [gpus]",
    )
    gpus_per_node: int | None = Field(
        default=None, strict=True, ge=1, le=MAX_GPUS_PER_NODE, description="how many of them one node has"
    )
    host_memory_gib: Annotated[float, Field(gt=0, le=MAX_HOST_MEMORY_GIB)] | None = Field(
        default=None,
        description="one node's host (CPU) memory in GiB: what the KV cache offloaded to CPU memory must fit in",
    )


class Role(BaseModel):
    """One `[roles.<name>]` table: per-role overrides, or a plain command."""

    model_config = _STRICT
    serve: dict[str, Any] = Field(default_factory=dict, description="this role's `vllm serve` options")
    env: dict[EnvName, EnvValue] = Field(default_factory=dict, description="this role's environment")
    command: list[str] | None = Field(
        default=None, min_length=1, description="a process that is not vLLM: its whole argv, never run by a shell"
    )
    kind: Literal["vllm", "command"] | None = Field(
        default=None,
        description="declares the role: `vllm` (a vLLM server) or `command` (a process of its own `command`); "
        "a role exists only in the stacks of a layer that declares it",
    )
    hardware: Hardware = Field(default_factory=Hardware, description="what this role runs on")


class LayerFile(BaseModel):
    """A whole layer file."""

    model_config = _STRICT
    layer: LayerMeta = Field(default_factory=LayerMeta)
    model: ModelFacts = Field(default_factory=ModelFacts)
    serve: dict[str, Any] = Field(default_factory=dict)
    env: dict[EnvName, EnvValue] = Field(default_factory=dict)
    roles: dict[RoleName, Role] = Field(default_factory=dict)
    hardware: Hardware = Field(default_factory=Hardware, description="what every vLLM role runs on")


class VllmSection(BaseModel):
    model_config = _STRICT
    version: str | None = None


class LintSection(BaseModel):
    model_config = _STRICT
    stacks: list[str] = Field(default_factory=list)
    combinations: Literal["none", "pairs", "all"] = "pairs"
    select: list[str] | None = Field(default=None, description="rule ids whose warnings are reported (default: all)")
    ignore: list[str] = Field(default_factory=list, description="rule ids whose warnings are not reported")


class K8sSection(BaseModel):
    """`[render.k8s]`: what `render --target k8s` cannot read from the layers (docs/FORMAT.md)."""

    model_config = _STRICT
    image: str | None = None  # the vLLM roles' image; None: vllm/vllm-openai:v<release>
    images: dict[RoleName, str] = Field(default_factory=dict)  # per role (a command role needs its own)
    secret_name: SecretName | None = None  # the Secret every secretKeyRef names; None: <stack>-secrets
    secret_keys: dict[EnvName, SecretKey] = Field(default_factory=dict)  # env name -> key in that Secret
    node_selectors: dict[GpuName, dict[LabelKey, LabelValue]] = Field(
        default_factory=dict,
        description="GPU name -> the node labels its pods select, replacing the default (docs/HARDWARE.md); "
        "an empty table: no node selector",
    )


# what an `#SBATCH --option=value` line carries unquoted: sbatch splits it at spaces
SbatchWord = Annotated[str, StringConstraints(pattern=SBATCH_WORD)]
GpuName = Annotated[str, StringConstraints(pattern=GPU_NAME)]
LabelKey = Annotated[str, StringConstraints(max_length=SECRET_MAX_LENGTH + 64, pattern=LABEL_KEY)]
LabelValue = Annotated[str, StringConstraints(pattern=LABEL_VALUE)]
GresType = Annotated[str, StringConstraints(pattern=GRES_TYPE)]


class SlurmSection(BaseModel):
    """`[render.slurm]`: the `#SBATCH` lines of `render --target slurm` that a site decides (docs/FORMAT.md)."""

    model_config = _STRICT
    partition: SbatchWord | None = None
    time: SbatchWord | None = None  # --time: `MINUTES`, `HH:MM:SS`, `DAYS-HH`...
    account: SbatchWord | None = None
    gres_types: dict[GpuName, GresType] = Field(
        default_factory=dict,
        description='GPU name -> the GRES type of `--gres=gpu:TYPE:N` (docs/HARDWARE.md); "": no type',
    )


class RenderSection(BaseModel):
    model_config = _STRICT
    templates: str | None = None
    k8s: K8sSection = Field(default_factory=K8sSection)
    slurm: SlurmSection = Field(default_factory=SlurmSection)


class SourceSpec(BaseModel):
    """`[sources.NAME]`: a repository of layers this one builds on, at a revision (docs/SOURCES.md)."""

    model_config = _STRICT
    git: str = Field(min_length=1, description="a git URL (https://, ssh://, file://) or a local path")
    rev: str = Field(min_length=1, description="a tag, a branch or a commit")


class ModelEntry(BaseModel):
    """`[models."ORG/NAME"]`: where the config.json of a model the layers name by its id is (docs/FORMAT.md)."""

    model_config = _STRICT
    config: str = Field(min_length=1, description="path to the model's config.json, relative to the repository root")


class GpuEntry(BaseModel):
    """`[gpus.NAME]`: a GPU of the repository's own, beside profilekit's catalogue (docs/HARDWARE.md)."""

    model_config = _STRICT
    platform: Literal["cuda", "rocm"] = Field(description="the vLLM platform that drives it")
    capability: Annotated[str, StringConstraints(pattern=GPU_CAPABILITY)] = Field(
        description='the compute capability torch reports, "MAJOR.MINOR" (on ROCm what torch maps the gfx target to)'
    )
    memory_mib: int = Field(strict=True, ge=1, description="total device memory as the device reports it, in MiB")
    device_name: str = Field(min_length=1, description="the device name vLLM sees (torch.cuda.get_device_name())")
    arch: str | None = Field(default=None, min_length=1, description='the gfx architecture on ROCm ("gfx942")')
    source: str | None = Field(default=None, min_length=1, description="where the figures come from")


class RepoConfig(BaseModel):
    """profilekit.toml."""

    model_config = _STRICT
    vllm: VllmSection = Field(default_factory=VllmSection)
    lint: LintSection = Field(default_factory=LintSection)
    render: RenderSection = Field(default_factory=RenderSection)
    sources: dict[Annotated[str, StringConstraints(pattern=SOURCE_NAME)], SourceSpec] = Field(default_factory=dict)
    services: dict[RoleName, Annotated[int, Field(strict=True, ge=1, le=MAX_PORT)]] = Field(
        default_factory=dict,
        description="local services outside the stack that roles reach on loopback (a Mooncake master, Redis): "
        "name -> TCP port; `dangling-endpoint` counts them as listening",
    )
    models: dict[str, ModelEntry] = Field(default_factory=dict)
    gpus: dict[Annotated[str, StringConstraints(pattern=GPU_NAME)], GpuEntry] = Field(
        default_factory=dict, description="GPUs of the repository's own, beside profilekit's catalogue"
    )


def plain(value: Any) -> Any:
    """`value` with every model in it as the plain class of the same name in layerdata.py, field by field.

    For a file the fast validator refused but pydantic accepted: what is loaded never depends on which of
    the two read it (tests/test_layerdata.py asserts that they agree).
    """
    if isinstance(value, BaseModel):
        cls = getattr(layerdata, type(value).__name__)
        return cls(**{name: plain(getattr(value, name)) for name in type(value).model_fields})
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value
