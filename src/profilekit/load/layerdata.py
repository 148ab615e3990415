"""The layer file and profilekit.toml as plain frozen classes, validated without pydantic.

Importing pydantic and building the models of models.py costs more than the rest of a cold `check`; a
repository whose files are valid needs neither. `layer_file` and `repo_config` accept exactly what the models
accept in their strict mode (`extra="forbid", strict=True`) and build the same data; for anything else they
answer None and layers.py asks pydantic, which stays the schema of record: its errors become the findings and
its JSON schema is the published one. tests/test_layerdata.py holds the two to each other.

The name patterns live here, so models.py and this module share one definition of each. pydantic's patterns
are Rust regexes, where `$` is the end of the text: they are matched here with `fullmatch`, so "FOO\\n" is
refused as pydantic refuses it.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any, Literal

from profilekit.records import record

ROLE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"  # also the name of a [services] entry
MAX_PORT = 65535
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
# a `[sources.NAME]` name: the `NAME:` before the layers (and `[render] templates`) of that source
SOURCE = r"[a-z0-9][a-z0-9_-]*"
SOURCE_NAME = rf"^{SOURCE}$"
# `@capability` or a layer name (path below profiles/, `/`-separated), maybe of a source (`platform:base`)
REFERENCE = rf"^(@[A-Za-z0-9][A-Za-z0-9_.-]*|({SOURCE}:)?[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*)$"
CAPABILITY = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
# Kubernetes: a Secret's name is a DNS-1123 subdomain, a key in it letters, digits, '-', '_' and '.'
SECRET_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"
SECRET_MAX_LENGTH = 253
# what an `#SBATCH --option=value` line carries unquoted: sbatch splits it at spaces
SBATCH_WORD = r"^[A-Za-z0-9_.,:+-]+$"
COMBINATIONS = ("none", "pairs", "all")
GPU_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"  # a [gpus.NAME] entry of profilekit.toml
GPU_CAPABILITY = r"^[0-9]+\.[0-9]+$"  # "9.0"
# a Kubernetes label key (`[DNS-subdomain/]name`) and value, for `[render.k8s.node_selectors.GPU]`
LABEL_KEY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
# a SLURM GRES type (`--gres=gpu:TYPE:N`): an sbatch word without the `:` and `,` that separate a GRES request;
# empty: the GPUs are asked for without a type
GRES_TYPE = r"^[A-Za-z0-9_.+-]*$"
MAX_GPUS_PER_NODE = 1024
MAX_WEIGHTS_GIB = 1 << 20  # a checkpoint of a PiB is a typo
MAX_HOST_MEMORY_GIB = 1 << 20  # a node of a PiB of memory is a typo too
GPU_PLATFORMS = ("cuda", "rocm")


@record(frozen=True, slots=True)
class Secret:
    """`{ secret = true }`: the value comes from the launching environment and is never written."""

    secret: Literal[True]


@record(frozen=True, slots=True)
class LayerMeta:
    """The `[layer]` table: metadata and declared constraints."""

    description: str = ""
    extends: list[str] = field(default_factory=list)
    group: str | None = None
    provides: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    requires: list[str] = field(default_factory=list)
    abstract: bool = False
    unset: list[str] = field(default_factory=list)
    # rule id -> why its warnings do not apply to the findings reported at this layer (docs/FORMAT.md)
    ignore: dict[str, str] = field(default_factory=dict)


@record(frozen=True, slots=True)
class ModelFacts:
    """The `[model]` table: facts vLLM reads from the model's config.json."""

    architecture: str | None = None
    config: str | None = None
    weights_gib: float | None = None  # the checkpoint's size (docs/CAPACITY.md)
    weights_index: str | None = None  # path to its model.safetensors.index.json

    def written(self) -> dict[str, str | float]:
        """The facts that are set, as a table (pydantic's `model_dump(exclude_none=True)`)."""
        table: dict[str, str | float] = {}
        for key in ("architecture", "config", "weights_gib", "weights_index"):
            value = getattr(self, key)
            if value is not None:
                table[key] = value
        return table


@record(frozen=True, slots=True)
class Hardware:
    """The `[hardware]` table (and `[roles.R.hardware]`): what a role runs on (docs/HARDWARE.md)."""

    gpu: str | None = None
    gpus_per_node: int | None = None
    host_memory_gib: float | None = None  # one node's CPU memory (docs/HARDWARE.md)

    def written(self) -> dict[str, str | int | float]:
        """The values that are set, as a table (pydantic's `model_dump(exclude_none=True)`)."""
        table: dict[str, str | int | float] = {}
        if self.gpu is not None:
            table["gpu"] = self.gpu
        if self.gpus_per_node is not None:
            table["gpus_per_node"] = self.gpus_per_node
        if self.host_memory_gib is not None:
            table["host_memory_gib"] = self.host_memory_gib
        return table


# what a role runs: a vLLM server, or a plain command (its argv in `command`)
RoleKind = Literal["vllm", "command"]
ROLE_KINDS: tuple[RoleKind, ...] = ("vllm", "command")


@record(frozen=True, slots=True)
class Role:
    """One `[roles.<name>]` table: per-role overrides, or a plain command; `kind` declares the role (docs/ROLES.md)."""

    serve: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str | Secret] = field(default_factory=dict)
    command: list[str] | None = None
    kind: RoleKind | None = None
    hardware: Hardware = field(default_factory=Hardware)


@record(frozen=True, slots=True)
class LayerFile:
    """A whole layer file."""

    layer: LayerMeta = field(default_factory=LayerMeta)
    model: ModelFacts = field(default_factory=ModelFacts)
    serve: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str | Secret] = field(default_factory=dict)
    roles: dict[str, Role] = field(default_factory=dict)
    hardware: Hardware = field(default_factory=Hardware)


@record(frozen=True, slots=True)
class VllmSection:
    version: str | None = None


@record(frozen=True, slots=True)
class LintSection:
    stacks: list[str] = field(default_factory=list)
    combinations: Literal["none", "pairs", "all"] = "pairs"
    select: list[str] | None = None  # the rules whose warnings are reported; None: every rule
    ignore: list[str] = field(default_factory=list)  # rules whose warnings are not reported


@record(frozen=True, slots=True)
class K8sSection:
    """`[render.k8s]`: what `render --target k8s` cannot read from the layers (docs/FORMAT.md)."""

    image: str | None = None  # the vLLM roles' image; None: vllm/vllm-openai:v<release>
    images: dict[str, str] = field(default_factory=dict)  # per role (a command role needs its own)
    secret_name: str | None = None  # the Secret every secretKeyRef names; None: <stack>-secrets
    secret_keys: dict[str, str] = field(default_factory=dict)  # env name -> key in that Secret
    # GPU name -> the node labels a pod on that GPU selects (replacing the default; empty: no node selector)
    node_selectors: dict[str, dict[str, str]] = field(default_factory=dict)


@record(frozen=True, slots=True)
class SlurmSection:
    """`[render.slurm]`: the `#SBATCH` lines of `render --target slurm` that a site decides (docs/FORMAT.md)."""

    partition: str | None = None
    time: str | None = None  # --time: `MINUTES`, `HH:MM:SS`, `DAYS-HH`...
    account: str | None = None
    gres_types: dict[str, str] = field(default_factory=dict)  # GPU name -> its GRES type ("": untyped)


@record(frozen=True, slots=True)
class RenderSection:
    templates: str | None = None
    k8s: K8sSection = field(default_factory=K8sSection)
    slurm: SlurmSection = field(default_factory=SlurmSection)


@record(frozen=True, slots=True)
class SourceSpec:
    """`[sources.NAME]`: a repository of layers this one builds on, at a revision (docs/SOURCES.md)."""

    git: str
    rev: str


@record(frozen=True, slots=True)
class ModelEntry:
    """`[models."ORG/NAME"]`: where the config.json of a model the layers name by its id is (docs/FORMAT.md)."""

    config: str


@record(frozen=True, slots=True)
class GpuEntry:
    """`[gpus.NAME]`: a GPU of the repository's own, beside profilekit's catalogue (docs/HARDWARE.md)."""

    platform: str
    capability: str
    memory_mib: int
    device_name: str
    arch: str | None = None
    source: str | None = None


@record(frozen=True, slots=True)
class RepoConfig:
    """profilekit.toml."""

    vllm: VllmSection = field(default_factory=VllmSection)
    lint: LintSection = field(default_factory=LintSection)
    render: RenderSection = field(default_factory=RenderSection)
    sources: dict[str, SourceSpec] = field(default_factory=dict)
    services: dict[str, int] = field(default_factory=dict)  # local services outside the stack: name -> TCP port
    models: dict[str, ModelEntry] = field(default_factory=dict)
    gpus: dict[str, GpuEntry] = field(default_factory=dict)


def layer_file(raw: object) -> LayerFile | None:
    """`raw` (a parsed layer file) as a LayerFile, or None where `models.LayerFile` would refuse it."""
    try:
        return _layer_file(raw)
    except _Refused:
        return None


def repo_config(raw: object) -> RepoConfig | None:
    """`raw` (parsed profilekit.toml) as a RepoConfig, or None where `models.RepoConfig` would refuse it."""
    try:
        return _repo_config(raw)
    except _Refused:
        return None


class _Refused(Exception):
    """pydantic would refuse the value: it alone says why (layers.py asks it)."""


# Strict mode, as pydantic-core applies it to what a TOML reader gives (dict, list, str, int, float, bool, and
# datetime, date and time): a string is a str, a boolean a bool (never 1), a table a dict, an array a list.

_role_name = re.compile(ROLE_NAME).fullmatch
_env_name = re.compile(ENV_NAME).fullmatch
_source_name = re.compile(SOURCE_NAME).fullmatch
_reference = re.compile(REFERENCE).fullmatch
_capability = re.compile(CAPABILITY).fullmatch
_secret_name = re.compile(SECRET_NAME).fullmatch
_secret_key = re.compile(SECRET_KEY).fullmatch
_sbatch_word = re.compile(SBATCH_WORD).fullmatch
_gpu_name = re.compile(GPU_NAME).fullmatch
_gpu_capability = re.compile(GPU_CAPABILITY).fullmatch
_label_key = re.compile(LABEL_KEY).fullmatch
_label_value = re.compile(LABEL_VALUE).fullmatch
_gres_type = re.compile(GRES_TYPE).fullmatch


def _table(raw: object, keys: frozenset[str]) -> dict[str, Any]:
    """A table of a model: a dict whose keys are all fields (`extra="forbid"`)."""
    if not isinstance(raw, dict) or not keys.issuperset(raw):
        raise _Refused
    return raw


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise _Refused
    return value


def _optional(value: object) -> str | None:
    return None if value is None else _string(value)


def _named(value: object, matches: Any, max_length: int | None = None) -> str:
    """A string that matches a name pattern (and is at most `max_length` long)."""
    text = _string(value)
    if matches(text) is None or (max_length is not None and len(text) > max_length):
        raise _Refused
    return text


def _strings(value: object, matches: Any = None) -> list[str]:
    if not isinstance(value, list):
        raise _Refused
    if matches is None:
        return [_string(item) for item in value]
    return [_named(item, matches) for item in value]


def _mapping(value: object) -> dict[str, Any]:
    """`dict[str, Any]`: keys are strings, values anything (pydantic copies the dict, not its values)."""
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise _Refused
    return dict(value)


def _secret(raw: object) -> Secret:
    # `Literal[True]`: pydantic-core looks a literal up by equality, so 1 and 1.0 are taken for True too
    table = _table(raw, _SECRET)
    if "secret" not in table:
        raise _Refused
    value = table["secret"]
    if value is not True and not (type(value) in (int, float) and value == 1):
        raise _Refused
    return Secret(True)


def _env(value: object) -> dict[str, str | Secret]:
    """`dict[EnvName, str | Secret]`: a strict union, so a string is the str branch and a dict the Secret."""
    if not isinstance(value, dict):
        raise _Refused
    env: dict[str, str | Secret] = {}
    for name, item in value.items():
        env[_named(name, _env_name)] = item if isinstance(item, str) else _secret(item)
    return env


_SECRET = frozenset({"secret"})
_META = frozenset(LayerMeta.__dataclass_fields__)
_FACTS = frozenset(ModelFacts.__dataclass_fields__)
_ROLE = frozenset(Role.__dataclass_fields__)
_LAYER = frozenset(LayerFile.__dataclass_fields__)
_VLLM = frozenset(VllmSection.__dataclass_fields__)
_LINT = frozenset(LintSection.__dataclass_fields__)
_K8S = frozenset(K8sSection.__dataclass_fields__)
_SLURM = frozenset(SlurmSection.__dataclass_fields__)
_RENDER = frozenset(RenderSection.__dataclass_fields__)
_SOURCE = frozenset(SourceSpec.__dataclass_fields__)
_MODEL = frozenset(ModelEntry.__dataclass_fields__)
_CONFIG = frozenset(RepoConfig.__dataclass_fields__)
_HARDWARE = frozenset(Hardware.__dataclass_fields__)
_GPU = frozenset(GpuEntry.__dataclass_fields__)


def _meta(raw: object) -> LayerMeta:
    table = _table(raw, _META)
    extends = _strings(table.get("extends", []), _reference)
    if any(item.startswith("@") for item in extends):  # LayerMeta's field validator: extends names layers
        raise _Refused
    abstract = table.get("abstract", False)
    if type(abstract) is not bool:
        raise _Refused
    return LayerMeta(
        description=_string(table.get("description", "")),
        extends=extends,
        group=_optional(table.get("group")),
        provides=_strings(table.get("provides", []), _capability),
        conflicts=_strings(table.get("conflicts", []), _reference),
        requires=_strings(table.get("requires", []), _reference),
        abstract=abstract,
        unset=_strings(table.get("unset", [])),
        ignore=_reasons(table.get("ignore", {})),
    )


def _reasons(value: object) -> dict[str, str]:
    """`[layer] ignore`: rule ids, each with a reason that is more than white space (models.LayerMeta)."""
    table = _mapping(value)
    for reason in table.values():
        if not _string(reason).strip():
            raise _Refused
    return table


def _facts(raw: object) -> ModelFacts:
    table = _table(raw, _FACTS)
    size = table.get("weights_gib")
    if size is not None and (type(size) not in (int, float) or not 0 < size <= MAX_WEIGHTS_GIB):
        raise _Refused
    index = _optional(table.get("weights_index"))
    if index == "":  # min_length=1
        raise _Refused
    return ModelFacts(
        _optional(table.get("architecture")),
        _optional(table.get("config")),
        None if size is None else float(size),
        index,
    )


def _hardware(raw: object) -> Hardware:
    table = _table(raw, _HARDWARE)
    gpu = table.get("gpu")
    if gpu is not None and not _string(gpu):  # min_length=1
        raise _Refused
    count = table.get("gpus_per_node")
    if count is not None and (type(count) is not int or not 1 <= count <= MAX_GPUS_PER_NODE):
        raise _Refused
    host = table.get("host_memory_gib")
    if host is not None and (type(host) not in (int, float) or not 0 < host <= MAX_HOST_MEMORY_GIB):
        raise _Refused
    return Hardware(gpu, count, None if host is None else float(host))


def _role(raw: object) -> Role:
    table = _table(raw, _ROLE)
    command = table.get("command")
    if command is not None:
        command = _strings(command)
        if not command:  # min_length=1
            raise _Refused
    kind = table.get("kind")
    if kind is not None and (type(kind) is not str or kind not in ROLE_KINDS):
        raise _Refused
    hardware = _hardware(table["hardware"]) if "hardware" in table else Hardware()
    return Role(_mapping(table.get("serve", {})), _env(table.get("env", {})), command, kind, hardware)


def _layer_file(raw: object) -> LayerFile:
    table = _table(raw, _LAYER)
    roles = table.get("roles", {})
    if not isinstance(roles, dict):
        raise _Refused
    return LayerFile(
        layer=_meta(table["layer"]) if "layer" in table else LayerMeta(),
        model=_facts(table["model"]) if "model" in table else ModelFacts(),
        serve=_mapping(table.get("serve", {})),
        env=_env(table.get("env", {})),
        roles={_named(name, _role_name): _role(spec) for name, spec in roles.items()},
        hardware=_hardware(table["hardware"]) if "hardware" in table else Hardware(),
    )


def _k8s(raw: object) -> K8sSection:
    table = _table(raw, _K8S)
    images = table.get("images", {})
    keys = table.get("secret_keys", {})
    secret_name = table.get("secret_name")
    selectors = table.get("node_selectors", {})
    if not isinstance(images, dict) or not isinstance(keys, dict) or not isinstance(selectors, dict):
        raise _Refused
    return K8sSection(
        image=_optional(table.get("image")),
        images={_named(role, _role_name): _string(image) for role, image in images.items()},
        secret_name=None if secret_name is None else _named(secret_name, _secret_name, SECRET_MAX_LENGTH),
        secret_keys={_named(env, _env_name): _named(key, _secret_key, SECRET_MAX_LENGTH) for env, key in keys.items()},
        node_selectors={_named(gpu, _gpu_name): _labels(labels) for gpu, labels in selectors.items()},
    )


def _labels(raw: object) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise _Refused
    return {_named(key, _label_key, SECRET_MAX_LENGTH + 64): _named(value, _label_value) for key, value in raw.items()}


def _slurm(raw: object) -> SlurmSection:
    table = _table(raw, _SLURM)
    types = table.get("gres_types", {})
    if not isinstance(types, dict):
        raise _Refused
    return SlurmSection(
        _sbatch(table.get("partition")),
        _sbatch(table.get("time")),
        _sbatch(table.get("account")),
        {_named(gpu, _gpu_name): _named(kind, _gres_type) for gpu, kind in types.items()},
    )


def _sbatch(value: object) -> str | None:
    return None if value is None else _named(value, _sbatch_word)


def _render(raw: object) -> RenderSection:
    table = _table(raw, _RENDER)
    return RenderSection(
        templates=_optional(table.get("templates")),
        k8s=_k8s(table["k8s"]) if "k8s" in table else K8sSection(),
        slurm=_slurm(table["slurm"]) if "slurm" in table else SlurmSection(),
    )


def _source(raw: object) -> SourceSpec:
    table = _table(raw, _SOURCE)
    if "git" not in table or "rev" not in table:
        raise _Refused
    git, rev = _string(table["git"]), _string(table["rev"])
    if not git or not rev:  # min_length=1
        raise _Refused
    return SourceSpec(git, rev)


def _port(value: object) -> int:
    """A TCP port: an integer (not a boolean) from 1 to 65535."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_PORT:
        raise _Refused
    return value


def _repo_config(raw: object) -> RepoConfig:
    table = _table(raw, _CONFIG)
    vllm = _table(table.get("vllm", {}), _VLLM)
    lint = _table(table.get("lint", {}), _LINT)
    combinations = lint.get("combinations", "pairs")
    if combinations not in COMBINATIONS:  # a strict literal: only a string equals one of them
        raise _Refused
    sources = table.get("sources", {})
    models = table.get("models", {})
    gpus = table.get("gpus", {})
    if not isinstance(sources, dict) or not isinstance(models, dict) or not isinstance(gpus, dict):
        raise _Refused
    select = lint.get("select")
    return RepoConfig(
        vllm=VllmSection(_optional(vllm.get("version"))),
        lint=LintSection(
            _strings(lint.get("stacks", [])),
            combinations,
            None if select is None else _strings(select),
            _strings(lint.get("ignore", [])),
        ),
        render=_render(table["render"]) if "render" in table else RenderSection(),
        sources={_named(name, _source_name): _source(spec) for name, spec in sources.items()},
        services={_named(name, _role_name): _port(port) for name, port in _mapping(table.get("services", {})).items()},
        models={_string(name): _model(spec) for name, spec in models.items()},
        gpus={_named(name, _gpu_name): _gpu(spec) for name, spec in gpus.items()},
    )


def _gpu(raw: object) -> GpuEntry:
    table = _table(raw, _GPU)
    if not {"platform", "capability", "memory_mib", "device_name"}.issubset(table):  # required
        raise _Refused
    platform, memory = table["platform"], table["memory_mib"]
    if type(platform) is not str or platform not in GPU_PLATFORMS:
        raise _Refused
    if type(memory) is not int or memory < 1:
        raise _Refused
    device_name = _string(table["device_name"])
    arch, source = _optional(table.get("arch")), _optional(table.get("source"))
    if not device_name or arch == "" or source == "":  # min_length=1
        raise _Refused
    return GpuEntry(platform, _named(table["capability"], _gpu_capability), memory, device_name, arch, source)


def _model(raw: object) -> ModelEntry:
    table = _table(raw, _MODEL)
    if "config" not in table or not _string(table["config"]):  # required, min_length=1
        raise _Refused
    return ModelEntry(table["config"])
