"""One repository opened for one command: its config, target vLLM release, layers and flag catalogue; and the
stacks as the command line names them (several at once, `--all`, a stack that works to suggest)."""

from __future__ import annotations

import difflib
import re
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.cache.record import listed
from profilekit.compose.index import LayerIndex
from profilekit.compose.linearise import linearise
from profilekit.compose.merge import compose_layers, require_deployable
from profilekit.compose.model import Stack
from profilekit.compose.names import reference_findings
from profilekit.errors import Finding, FindingsError, Location, Severity, UsageError
from profilekit.hardware import CATALOGUE, repository_gpu
from profilekit.load.layerdata import SOURCE
from profilekit.load.layers import REPO_MARKER, find_repo, load_repo_config
from profilekit.records import record
from profilekit.redact import Redactor
from profilekit.tomlio.positions import format_key
from profilekit.vllm.catalogue import load_catalogue
from profilekit.vllm.versions import resolve_version

if TYPE_CHECKING:
    from profilekit.compose.lineage import Lineages
    from profilekit.hardware import Gpu
    from profilekit.load.layerdata import RepoConfig
    from profilekit.load.layers import Source
    from profilekit.redact import Redactor
    from profilekit.rules.models import ModelConfigs
    from profilekit.rules.selection import Chosen, Selection
    from profilekit.sources.lockfile import Locked
    from profilekit.tomlio.read import TomlFile
    from profilekit.vllm.catalogue import Catalogue


@record(slots=True)
class Session:
    root: Path
    config: RepoConfig
    version: str
    layers: LayerIndex
    config_findings: list[Finding] = field(default_factory=list)
    # `[sources.NAME]` at their locked commits
    sources: list[Source] = field(default_factory=list)
    # warnings found while composing a stack named on the command line (an unset that removes nothing, ...)
    _warnings: dict[str, list[Finding]] = field(default_factory=dict)
    _redactor: tuple[int, Redactor] | None = None
    _lineages: Lineages | None = None
    config_file: TomlFile | None = None  # profilekit.toml as read: where its keys are
    _models: ModelConfigs | None = None

    @classmethod
    def open(
        cls,
        *,
        repo: Path | None,
        vllm_version: str | None,
        cwd: Path | None = None,
        locked: dict[str, Locked] | None = None,
        fetch: bool = True,
    ) -> Session:
        """The repository at `repo` (or above `cwd`), its sources at their locked commits (or at `locked`);
        without `fetch`, a source whose commit is not in the cache is an error rather than fetched."""
        root = find_repo(cwd, repo)
        config, config_file, findings = load_repo_config(root)
        if findings and vllm_version is None:
            # the target release cannot be trusted from a broken profilekit.toml
            raise FindingsError(findings)
        version = resolve_version(vllm_version, config.vllm.version)

        sources: list[Source] = []
        if config.sources:
            from profilekit.sources import open_sources  # noqa: PLC0415 - only a repository with [sources] loads the sources package

            sources, problems = open_sources(root, config, config_file, locked=locked, fetch=fetch)
            if problems:
                raise FindingsError(findings + problems)  # a layer of a source that is not there names nothing
            # the rule modules load only for a command that checks (not show or explain)
            from profilekit.rules.sources import source_config_findings  # noqa: PLC0415

            findings = findings + source_config_findings(root, config, config_file, version, sources)
        gpus, problems = _repository_gpus(config, config_file)
        layer_index = LayerIndex(root, load_catalogue(version), sources, gpus)
        findings = findings + problems
        return cls(root, config, version, layer_index, findings, sources=sources, config_file=config_file)

    @property
    def catalogue(self) -> Catalogue | None:
        """The flag catalogue of the target release: the one the layers were loaded with."""
        return self.layers.catalogue

    def stack(self, spec: str) -> Stack:
        """Compose `spec` named on the command line; errors inside its files stop the command (exit 1).

        Warnings found while composing do not stop it: `warnings` and `check` return them.

        Layer files in `spec` become layer names, so the stack is shown, and rendered to, by its names.
        """
        names = self.layers.parse_stack(spec)
        spec = "+".join(names)
        stack, problems = self.compose(names, spec)
        if stack is not None and not problems:
            self._require_deployable(spec, names, stack)
        problems = list(self.config_findings) + problems
        if stack is None or any(p.is_error for p in problems):
            raise FindingsError(problems)
        self._warnings[stack.spec] = problems
        return stack

    def warnings(self, stack: Stack) -> list[Finding]:
        """The warnings found while composing `stack` with `stack()`."""
        return list(self._warnings.get(stack.spec, []))

    def _require_deployable(self, spec: str, names: list[str], stack: Stack) -> None:
        """A stack naming only abstract layers is a usage error whose hint names a stack that works."""
        try:
            require_deployable(self.layers, spec, names, stack.layers)
        except UsageError as exc:
            exc.hint = working_stack_hint(self, spec, names)
            raise

    def layers_of(self, spec: str) -> tuple[list[str], list[Finding]]:
        """The layer names `spec` composes, in merge order, and the problems that stop it composing."""
        try:
            names = self.layers.parse_stack(spec)
        except UsageError as exc:
            return [], [Finding("unknown-layer", Severity.ERROR, exc.message, [])]
        layers, problems = linearise(self.layers, names)
        return [layer.name for layer in layers], problems

    def works(self, spec: str) -> bool:
        """`spec` composes and checks without an error finding (and names a layer that is not abstract)."""
        try:
            names = self.layers.parse_stack(spec)
        except UsageError:
            return False
        stack, problems = self.compose(names, spec)
        if stack is None or problems or all(x.data.layer.abstract for x in stack.layers if x.name in names):
            return False
        return not any(f.is_error for f in self.check(stack))

    def compose(self, names: list[str], spec: str) -> tuple[Stack | None, list[Finding]]:
        """Compose layer names: the stack, and every problem inside its files (for commands and lint alike).

        Files that do not load and `extends` cycles (no stack then), and names that match nothing (layers,
        capabilities, roles, unset paths) are problems of the files, not rule findings.
        """
        layers, problems = linearise(self.layers, names)
        references = [f for layer in layers for f in reference_findings(self.layers, layer)]
        if problems:  # a layer that did not load, or a cycle: the stack cannot be composed faithfully
            return None, problems + references
        stack = compose_layers(spec, layers, [], self.layers.gpus)
        return stack, references + stack.findings

    def lineages(self) -> Lineages:
        """Every layer's linearisation and merged top level, each built once on its parent's (lineage.py)."""
        if self._lineages is None:
            from profilekit.compose.lineage import Lineages  # noqa: PLC0415 - only lint walks the whole extends graph

            self._lineages = Lineages(self.layers)
        return self._lineages

    def compose_layer(self, name: str) -> tuple[Stack | None, list[Finding]]:
        """`compose([name], name)`, sharing the work with the other layers of its `extends` chain (lint's)."""
        node = self.lineages().node(name)
        if node is None:  # a problem in its closure: composing reports it
            return self.compose([name], name)
        return self.lineages().compose(name, node)

    def role_names(self, stack: Stack, role: str | None) -> list[str]:
        if role is None:
            return list(stack.roles)
        if role not in stack.roles:
            elsewhere = self.layers.declared_roles().get(role)
            if elsewhere:  # a role of other stacks: named right, only not composed here
                named = (
                    f"layer {elsewhere[0]} declares"
                    if len(elsewhere) == 1
                    else f"layers {', '.join(elsewhere)} declare"
                )
                hint = f"{named} it: compose the stack with it; roles of this stack: "
                raise UsageError(f"role {role!r} is not in {stack.spec}", hint=hint + ", ".join(stack.roles))
            close = difflib.get_close_matches(role, [*stack.roles, *self.layers.declared_roles()], n=1)
            hint = f"did you mean {close[0]!r}?" if close else "roles of this stack: " + ", ".join(stack.roles)
            raise UsageError(f"stack {stack.spec!r} has no role {role!r}", hint=hint)
        return [role]

    def templates_dir(self) -> Path | None:
        """`[render] templates`: a folder of the repository, or `NAME:FOLDER` of source NAME (sandboxed alike)."""
        name = self.config.render.templates
        if not name:
            return None
        folder = self._source_folder(name) or (self.root / name).resolve()
        listed(folder)  # a team template added later replaces a built-in one: the folder's names are an input
        if not folder.is_dir():
            raise UsageError(
                f"templates folder {name!r} named in profilekit.toml does not exist",
                hint=f"create {folder} or remove [render] templates",
            )
        return folder

    def _source_folder(self, name: str) -> Path | None:
        """`platform:templates` as the folder of source `platform`; None when `name` names no source."""
        match = re.match(rf"^({SOURCE}):(.*)$", name)
        if match is None or (self.root / name).exists():
            return None
        sources = {source.name: source for source in self.sources}
        source = sources.get(match.group(1))
        if source is None:
            close = difflib.get_close_matches(match.group(1), list(sources), n=1)
            raise UsageError(
                f"[render] templates = {name!r} names no source {match.group(1)!r} (nor a folder of this repository)",
                hint=f"did you mean {close[0]!r}?" if close else "sources: " + (", ".join(sources) or "none"),
            )
        folder = (source.tree / match.group(2)).resolve()
        if not folder.is_relative_to(source.tree.resolve()):
            raise UsageError(
                f"[render] templates = {name!r} leaves source {source.name!r}",
                hint=f"name a folder inside it, e.g. {source.name}:templates",
            )
        return folder

    def redactor(self) -> Redactor:
        """The redaction rule over the secrets of every layer read so far (profilekit.redact)."""
        layers = self.layers.loaded_layers()
        if self._redactor is None or self._redactor[0] != len(layers):
            self._redactor = (len(layers), Redactor.of_layers(layers))
        return self._redactor[1]

    def check(self, stack: Stack) -> list[Finding]:
        """Every finding of a composed stack: its warnings from composing, and its rules'."""
        # the rule modules load only for a command that checks (not show or explain)
        from profilekit.rules import check_stack  # noqa: PLC0415

        found = self.warnings(stack) + check_stack(
            stack,
            version=self.version,
            catalogue=self.catalogue,
            root=self.root,
            services=self.config.services,
            models=self.models(),
        )
        return sorted(found, key=lambda f: f.sort_key())

    def stack_file_problems(self, stacks: list[Stack]) -> list[Finding]:
        """What is wrong in the files `stacks` read beyond what composing finds, each layer once: `unknown-rule` in
        a `[layer] ignore`, `model-config` for a `[models]` entry of a model they serve (lint finds both for every
        file, rules/selection.py and rules/models.py)."""
        from profilekit.rules.selection import layer_findings  # noqa: PLC0415 - as check_stack

        layers = {layer.name: layer for stack in stacks for layer in stack.layers}
        found = [f for layer in layers.values() if layer.data.layer.ignore for f in layer_findings(layer)]
        served = [
            m for stack in stacks for role in stack.roles.values() if isinstance(m := role.serve.get("model"), str)
        ]
        return found + (self.models().problems(served) if self.config.models else [])

    def config_location(self, path: tuple[str | int, ...]) -> Location:
        """Where key `path` of profilekit.toml is written (line 1 when it is not)."""
        pos = self.config_file.positions.get(path) if self.config_file is not None else None
        line, column = (pos.line, pos.column) if pos is not None else (1, 1)
        return Location(REPO_MARKER, line, column, format_key(path))

    def models(self) -> ModelConfigs:
        """The config.json files known by model id: `[models]` of profilekit.toml, then the shipped ones."""
        if self._models is None:
            from profilekit.rules.models import ModelConfigs, NamedModel  # noqa: PLC0415 - as check_stack

            named = [
                NamedModel(name, entry.config, self.config_location(("models", name, "config")))
                for name, entry in self.config.models.items()
            ]
            self._models = ModelConfigs(self.root, named)
        return self._models

    def selection(
        self, select: list[str] | None = None, ignore: list[str] | None = None
    ) -> tuple[Selection, list[Finding]]:
        """The rules whose warnings this run shows (profilekit.toml's `[lint]`, then `--select` and `--ignore`, whose
        unknown ids are usage errors), and `unknown-rule` for the ids of profilekit.toml that name no rule."""
        from profilekit.rules import selection  # noqa: PLC0415 - as check_stack

        chosen = selection.resolve(
            self.config.lint,
            selection.command_line_ids("--select", select),
            selection.command_line_ids("--ignore", ignore),
        )
        return chosen, selection.config_findings(self.config.lint, self.config_location)

    def report(self, findings: list[Finding], chosen: Selection) -> Chosen:
        """`findings` as a command shows them: the selection applied (a layer's `[layer] ignore` too), then
        `model-facts-missing` once per model, each finding once, sorted; and the warnings left out, alike."""
        from profilekit.rules.selection import report  # noqa: PLC0415 - as check_stack

        return report(findings, chosen, self.layer_ignores, distinct)

    def layer_ignores(self, name: str) -> dict[str, str]:
        """`[layer] ignore` of layer `name` ({} for a name that is no layer, or a file that does not load)."""
        if name not in self.layers.files:
            return {}
        layer, _problems = self.layers.get(name)
        return layer.data.layer.ignore if layer is not None else {}


# how many candidate stacks the abstract-only hint composes and checks before it gives up looking
_SUGGESTION_BUDGET = 24


def deployable_layers(session: Session) -> list[str]:
    """Every layer of the repository (not of its sources) that is not abstract (a file that does not load
    counts: its stack reports why)."""
    found: list[str] = []
    for name in session.layers.local:
        layer, _problems = session.layers.get(name)
        if layer is None or not layer.data.layer.abstract:
            found.append(name)
    return found


def all_stacks(session: Session) -> list[str]:
    """`--all`: every deployable layer, then every `[lint] stacks` entry, each once (what `lint` checks alone)."""
    return list(dict.fromkeys([*deployable_layers(session), *session.config.lint.stacks]))


def chosen_stacks(session: Session, stacks: list[str], *, every: bool) -> list[str]:
    """The stacks a command runs on: those named, or `--all`; naming neither, or both, is a usage error."""
    if every and stacks:
        raise UsageError("give stacks or --all, not both", hint="--all means every stack lint checks alone")
    if every:
        found = all_stacks(session)
        if not found:
            raise UsageError("--all found no stack", hint="add a layer that is not abstract, or [lint] stacks")
        return found
    if not stacks:
        raise UsageError("missing STACK", hint="name layers joined by '+' (e.g. base+replayssm), or pass --all")
    for spec in stacks:  # every name is checked before any stack is composed
        session.layers.parse_stack(spec)
    return list(dict.fromkeys(stacks))


def distinct(findings: list[Finding]) -> list[Finding]:
    """Sorted, each once: a fault of a file that several of the stacks read is reported once."""
    seen: set[tuple[object, ...]] = set()
    kept: list[Finding] = []
    for f in sorted(findings, key=lambda f: f.sort_key()):
        key = (f.rule, f.severity, f.message, tuple(f.locations), f.stack, f.role)
        if key not in seen:
            seen.add(key)
            kept.append(f)
    return kept


def working_stack(session: Session, names: list[str]) -> str | None:
    """A stack with every layer of `names` that composes and checks without errors, or None.

    First the stacks `--all` names that already compose those layers (a deployable layer that extends them,
    a `[lint] stacks` entry), then each deployable layer with the named ones on top.
    """
    deployable = deployable_layers(session)
    candidates: list[str] = []
    for spec in all_stacks(session):
        linear, problems = session.layers_of(spec)
        if not problems and set(names) <= set(linear):
            candidates.append(spec)
    candidates += ["+".join([layer, *names]) for layer in deployable if layer not in names]
    for spec in candidates[:_SUGGESTION_BUDGET]:
        if session.works(spec):
            return spec
    return None


def working_stack_hint(session: Session, spec: str, names: list[str]) -> str:
    """The hint for a stack of abstract layers only: a stack with them that works, or how to make one."""
    found = working_stack(session, names)
    if found is not None:
        return f"abstract layers are mixins, never deployed alone; a stack with them that works: {found}"
    deployable = deployable_layers(session)
    if not deployable:
        return "abstract layers are mixins, never deployed alone: add a layer without `abstract = true` to compose them with"
    example = f"{deployable[0]}+{spec}"
    return (
        f"abstract layers are mixins, never deployed alone: compose them with a deployable layer, e.g. {example} "
        f"(no such stack checks clean yet: `profilekit check {example}` says why)"
    )


def _repository_gpus(config: RepoConfig, config_file: TomlFile | None) -> tuple[dict[str, Gpu], list[Finding]]:
    """profilekit.toml's `[gpus.NAME]` entries; one that takes a name of profilekit's catalogue is `unknown-gpu`
    (a name means one GPU in every repository: the catalogue's figures and sources are what it says)."""
    gpus: dict[str, Gpu] = {}
    findings: list[Finding] = []
    for name, entry in config.gpus.items():
        if name in CATALOGUE:
            pos = config_file.positions.get(("gpus", name)) if config_file is not None else None
            line, column = (pos.line, pos.column) if pos is not None else (1, 1)
            where = Location(REPO_MARKER, line, column, format_key(("gpus", name)))
            findings.append(
                Finding(
                    "unknown-gpu",
                    Severity.ERROR,
                    f"[gpus.{name}] takes the name of a GPU of profilekit's catalogue: {CATALOGUE[name].describe()}",
                    [where],
                    fix=f"give the repository's GPU a name of its own (for example {name}-site), and declare that",
                )
            )
            continue
        gpus[name] = repository_gpu(
            name,
            platform=entry.platform,
            capability=entry.capability,
            memory_mib=entry.memory_mib,
            device_name=entry.device_name,
            arch=entry.arch,
            source=entry.source,
        )
    return gpus, findings
