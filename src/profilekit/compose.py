"""Linearise and merge layers into per-role effective configurations, remembering every value's origin."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profilekit.errors import Finding, Location, Severity, UsageError
from profilekit.load.layerdata import Secret
from profilekit.load.layers import PROFILES_DIR, Layer, discover_layers, load_layer
from profilekit.records import record
from profilekit.tomlio.positions import Path as KeyPath
from profilekit.tomlio.positions import format_key, parse_key

if TYPE_CHECKING:
    from profilekit.references import Resolution
    from profilekit.sources import Source
    from profilekit.vllm.catalogue import Catalogue

DEFAULT_ROLE = "serve"
SCOPES = ("serve", "env", "model")


class _Unset:
    """The marker of a value that an `unset` removed: vLLM's default applies again."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@record(frozen=True, slots=True)
class Assignment:
    value: Any
    origin: Location


@record(frozen=True, slots=True)
class Entry:
    """An effective leaf value, where it was set, and the values it replaced (oldest first)."""

    value: Any
    origin: Location
    overridden: tuple[Assignment, ...] = ()
    # how references in the written value resolved (references.py); None: the value holds none
    resolution: Resolution | None = None

    @property
    def history(self) -> tuple[Assignment, ...]:
        return (*self.overridden, Assignment(self.value, self.origin))


class Scope:
    """A flat map of leaf paths to entries, with the merge and unset semantics of DESIGN section 5.

    `_below` counts, for every proper prefix of a path in `entries` (and `_removed_below` of one in `removed`),
    how many paths lie under it: a key with nothing under it, the common case, is taken or unset without
    scanning every entry (a layer with 100,000 env names would otherwise compose in quadratic time).
    """

    def __init__(
        self, entries: dict[KeyPath, Entry] | None = None, removed: dict[KeyPath, Entry] | None = None
    ) -> None:
        self.entries: dict[KeyPath, Entry] = dict(entries or {})
        self.removed: dict[KeyPath, Entry] = dict(removed or {})
        self._below: dict[KeyPath, int] = _prefix_counts(self.entries)
        self._removed_below: dict[KeyPath, int] = _prefix_counts(self.removed)

    def copy(self) -> Scope:
        twin = Scope.__new__(Scope)
        twin.entries, twin.removed = dict(self.entries), dict(self.removed)
        twin._below, twin._removed_below = dict(self._below), dict(self._removed_below)
        return twin

    def _put(self, path: KeyPath, entry: Entry) -> None:
        if path not in self.entries:
            _count(self._below, path, 1)
        self.entries[path] = entry

    def _pop(self, path: KeyPath) -> Entry | None:
        entry = self.entries.pop(path, None)
        if entry is not None:
            _count(self._below, path, -1)
        return entry

    def _put_removed(self, path: KeyPath, entry: Entry) -> None:
        if path not in self.removed:
            _count(self._removed_below, path, 1)
        self.removed[path] = entry

    def _pop_removed(self, path: KeyPath) -> Entry | None:
        entry = self.removed.pop(path, None)
        if entry is not None:
            _count(self._removed_below, path, -1)
        return entry

    def _under(self, path: KeyPath) -> list[KeyPath]:
        """The paths in `entries` strictly below `path` (a scan only when there are some)."""
        if not self._below.get(path):
            return []
        return [k for k in self.entries if len(k) > len(path) and k[: len(path)] == path]

    def _take(self, path: KeyPath) -> list[Assignment]:
        """Remove and return the history of everything at, above or below `path`."""
        history: list[Assignment] = []
        for depth in range(1, len(path)):
            above = self._pop(path[:depth])
            if above is not None:
                history.extend(above.history)
        for key in [path, *self._under(path)]:
            entry = self._pop(key)
            if entry is not None:
                history.extend(entry.history)
        gone = self._pop_removed(path)
        if gone is not None:
            history = [*gone.history, *history]
        return history

    def assign(self, path: KeyPath, value: Any, origin: Location) -> None:
        current = self.entries.get(path)
        if current is not None:  # replace in place: the option keeps its first position
            self.entries[path] = Entry(value, origin, current.history)
            return
        history = self._take(path)
        if self._removed_below.get(path):
            for key in [k for k in self.removed if len(k) > len(path) and k[: len(path)] == path]:
                self._pop_removed(key)
        self._put(path, Entry(value, origin, tuple(history)))

    def merge(self, prefix: KeyPath, table: dict[str, Any], locate: Any) -> None:
        # iterative: a table nested as deep as the loader allows must not exhaust the stack
        pending: list[tuple[KeyPath, Iterator[tuple[str, Any]]]] = [(prefix, iter(table.items()))]
        while pending:
            at, items = pending[-1]
            step = next(items, None)
            if step is None:
                pending.pop()
                continue
            key, value = step
            path = (*at, key)
            if isinstance(value, dict) and value:
                pending.append((path, iter(value.items())))
            else:
                self.assign(path, value, locate(path))

    def unset(self, path: KeyPath, origin: Location) -> bool:
        """Remove `path` and everything below it; return whether anything was there."""
        hit = [path, *self._under(path)] if path in self.entries else self._under(path)
        for key in hit:
            entry = self.entries[key]
            self._pop(key)
            self._put_removed(key, Entry(UNSET, origin, entry.history))
        return bool(hit)

    def tree(self, scope: str) -> dict[str, Any]:
        """The nested effective table of one scope (`serve`, `env`, `model`)."""
        out: dict[str, Any] = {}
        for path, entry in self.entries.items():
            if path[0] != scope:
                continue
            node = out
            for part in path[1:-1]:
                node = node.setdefault(part, {})  # type: ignore[arg-type]
            node[path[-1]] = entry.value  # type: ignore[index]
        return out


def _prefix_counts(paths: Iterable[KeyPath]) -> dict[KeyPath, int]:
    counts: dict[KeyPath, int] = {}
    for path in paths:
        _count(counts, path, 1)
    return counts


def _count(counts: dict[KeyPath, int], path: KeyPath, step: int) -> None:
    for depth in range(1, len(path)):
        prefix = path[:depth]
        counts[prefix] = counts.get(prefix, 0) + step


@record(slots=True)
class RoleConfig:
    """One process of the deployment: a vLLM server, or a plain command."""

    name: str
    scope: Scope
    command: list[str] | None = None

    @property
    def is_vllm(self) -> bool:
        return self.command is None

    @property
    def serve(self) -> dict[str, Any]:
        return self.scope.tree("serve")

    @property
    def env(self) -> dict[str, Any]:
        return self.scope.tree("env")

    @property
    def model(self) -> dict[str, Any]:
        return self.scope.tree("model")

    def entry(self, *path: str) -> Entry | None:
        return self.scope.entries.get(tuple(path))

    def origins(self, *path: str) -> list[Location]:
        """Where the effective value at or below `path` was set (one location per leaf)."""
        prefix = tuple(path)
        return [e.origin for k, e in self.scope.entries.items() if k[: len(prefix)] == prefix]


def _declares(layer: Layer) -> bool:
    head = layer.data.layer
    return head.group is not None or bool(head.provides or head.conflicts or head.requires)


def _holds(layer: Layer) -> bool:
    return bool(layer.serve or layer.data.env or layer.data.roles)


# what rules that read only some layers of a stack walk (`Stack.layers_that`): `declares` a group, provides,
# conflicts or requires; `holds` serve, env or roles tables (every option and secret-looking string)
TRAITS = {"declares": _declares, "holds": _holds}


@record(slots=True)
class Stack:
    """A composed stack: its layers in merge order and its roles."""

    spec: str
    layers: list[Layer]
    roles: dict[str, RoleConfig]
    findings: list[Finding] = field(default_factory=list)
    # trait -> the layers that have it, in merge order (lint hands them in: in a long chain most layers have none)
    traits: dict[str, list[Layer]] = field(default_factory=dict)

    @property
    def layer_names(self) -> list[str]:
        return [layer.name for layer in self.layers]

    def layers_that(self, trait: str) -> list[Layer]:
        """The layers with `trait` (TRAITS), in merge order: the only ones a loop over those tables visits."""
        known = self.traits.get(trait)
        if known is None:
            test = TRAITS[trait]
            known = self.traits[trait] = [layer for layer in self.layers if test(layer)]
        return known


class Catalog:
    """Lazily loaded layers of one repository; each file is read at most once."""

    def __init__(self, root: Path, catalogue: Catalogue | None = None, sources: Sequence[Source] = ()) -> None:
        self.root = root
        self.files = discover_layers(root)
        # the repository's own layers; the layers of its sources (`NAME:LAYER`) follow them in `files`
        self.local = list(self.files)
        self.origins: dict[str, Source] = {}
        for source in sources:
            from profilekit.sources import source_layers

            for name, path in source_layers(source.name, source.tree).items():
                if name not in self.files:  # a file of the repository named so is an error (`_colon_in_name`)
                    self.files[name] = path
                    self.origins[name] = source
        # with the target release's flag catalogue, serve keys written as aliases become dests
        self.catalogue = catalogue
        self._loaded: dict[str, tuple[Layer | None, list[Finding]]] = {}
        self._provided: dict[str, list[str]] | None = None

    def get(self, name: str) -> tuple[Layer | None, list[Finding]]:
        if name not in self._loaded:
            source = self.origins.get(name)
            if source is None and ":" in name:
                self._loaded[name] = (None, [_colon_in_name(self.root, name, self.files[name])])
            elif source is None:
                self._loaded[name] = load_layer(self.root, name, self.files[name], self.catalogue)
            else:
                from profilekit.sources.layers import load_source_layer

                self._loaded[name] = load_source_layer(source, name, self.files[name], self.catalogue)
        return self._loaded[name]

    def provided(self) -> dict[str, list[str]]:
        """Every capability that a layer of the repository `provides`, with those layers (reads every file once)."""
        if self._provided is None:
            found: dict[str, list[str]] = {}
            for name in self.files:
                layer, _ = self.get(name)
                for cap in layer.data.layer.provides if layer is not None else []:
                    found.setdefault(cap, []).append(name)
            self._provided = found
        return self._provided

    def use(self, name: str, layer: Layer) -> None:
        """Take `layer` as the layer `name` from now on (`set --check` composes an edit before it is written)."""
        self._loaded[name] = (layer, [])
        self._provided = None

    def seed_provided(self, provides: dict[str, list[str]]) -> None:
        """What `provided` answers, from each layer's `provides` as known without reading it (lint's cache)."""
        found: dict[str, list[str]] = {}
        for name in self.files:
            for cap in provides.get(name, []):
                found.setdefault(cap, []).append(name)
        self._provided = found

    def loaded_layers(self) -> list[Layer]:
        """Every layer read so far that loaded."""
        return [layer for layer, _ in self._loaded.values() if layer is not None]

    def suggest(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self.files), n=1, cutoff=0.6)
        return f"did you mean {close[0]!r}?" if close else ""

    def parse_stack(self, spec: str, *, cwd: Path | None = None) -> list[str]:
        """Split `a+b+c` into layer names; an unknown name is a usage error with a did-you-mean.

        A member may also be a layer's file, relative to `cwd` or absolute, as tab completion writes it:
        `profiles/qwen.toml+profiles/site/h100.toml` is `qwen+site/h100`.
        """
        names = [self._member(part.strip(), spec, cwd) for part in spec.split("+")]
        if not spec.strip() or any(not n for n in names):
            raise UsageError(f"invalid stack {spec!r}", hint="write layer names joined by '+', e.g. base+replayssm")
        for name in names:
            if name not in self.files:
                known = ", ".join(self.files) or "none"
                hint = self.suggest(name) or f"known layers: {known}"
                raise UsageError(f"unknown layer {name!r} in stack {spec!r}", hint=hint)
        return names

    def _member(self, part: str, spec: str, cwd: Path | None) -> str:
        if part in self.files or not part.endswith(".toml"):
            return part
        profiles = (self.root / PROFILES_DIR).resolve()
        try:
            relative = ((cwd or Path.cwd()) / part).resolve().relative_to(profiles)
        except ValueError:
            raise UsageError(
                f"{part!r} in stack {spec!r} is not a layer file",
                hint=f"layers are the .toml files under {profiles}",
            ) from None
        return relative.with_suffix("").as_posix()


def _colon_in_name(root: Path, name: str, path: Path) -> Finding:
    """A file of the repository named like a layer of a source (`platform:base`) would hide it, or be hidden."""
    return Finding(
        "invalid-layer",
        Severity.ERROR,
        f"layer file name {name!r} holds ':', which names a layer of a source (NAME:LAYER, [sources] in "
        "profilekit.toml)",
        [Location(path.relative_to(root).as_posix(), 1, 1, layer=name)],
        fix=f"rename the file without ':', e.g. {name.replace(':', '-')}.toml",
    )


def linearise(catalog: Catalog, names: list[str]) -> tuple[list[Layer], list[Finding]]:
    """Each named layer's `extends` ancestors first (depth-first, left to right), then the layer.

    Iterative, with an explicit stack: a chain of thousands of `extends` must not exhaust Python's.
    """
    order: list[Layer] = []
    placed: set[str] = set()
    findings: list[Finding] = []
    reported: set[str] = set()
    trail: list[str] = []  # the layers being visited, outermost first
    on_trail: dict[str, int] = {}  # name -> its index in `trail`

    def enter(name: str, via: Location | None) -> Layer | None:
        """The layer to visit next, or None (placed already, a cycle, unknown, or broken: reported)."""
        if name in placed:
            return None
        if name in on_trail:
            key = _cycle_text([*trail[on_trail[name] :], name])
            if key not in reported:
                reported.add(key)
                findings.append(
                    Finding(
                        "extends-cycle",
                        Severity.ERROR,
                        f"extends forms a cycle: {key}",
                        [via] if via else [],
                        fix="remove one of these `extends` entries",
                    )
                )
            return None
        if name not in catalog.files:
            if via is not None:
                hint = catalog.suggest(name)
                findings.append(
                    Finding(
                        "unknown-layer",
                        Severity.ERROR,
                        f"{via.key} names no layer: {name!r}",
                        [via],
                        fix=hint or "create the layer, or remove the entry",
                    )
                )
            return None
        layer, problems = catalog.get(name)
        findings.extend(p for p in problems if p not in findings)
        if layer is None:
            placed.add(name)
            return None
        on_trail[name] = len(trail)
        trail.append(name)
        return layer

    for name in names:
        first = enter(name, None)
        if first is None:
            continue
        pending: list[tuple[Layer, Iterator[tuple[int, str]]]] = [(first, enumerate(first.data.layer.extends))]
        while pending:
            layer, parents = pending[-1]
            step = next(parents, None)
            if step is None:
                pending.pop()
                del on_trail[trail.pop()]
                if layer.name not in placed:
                    placed.add(layer.name)
                    order.append(layer)
                continue
            index, parent = step
            child = enter(parent, layer.location(("layer", "extends", index)))
            if child is not None:
                pending.append((child, enumerate(child.data.layer.extends)))
    return order, findings


# a cycle through more layers than this is shown by its ends: the message stays one readable line
_CYCLE_SHOWN = 12


def _cycle_text(cycle: list[str]) -> str:
    """`a -> b -> a`; a long cycle keeps its first and last layers and says how many it leaves out."""
    if len(cycle) <= _CYCLE_SHOWN:
        return " -> ".join(cycle)
    half = _CYCLE_SHOWN // 2
    left_out = len(cycle) - 2 * half
    return " -> ".join([*cycle[:half], f"... ({left_out} more layers)", *cycle[-half:]])


@record(frozen=True, slots=True)
class Unset:
    """One `[layer] unset` entry: the effective path it removes, where it is written, and its text."""

    path: KeyPath
    origin: Location
    written: str
    position: int  # the layer's index in the merge order


def unset_paths(layer: Layer, position: int) -> tuple[list[Unset], list[Finding]]:
    out: list[Unset] = []
    findings: list[Finding] = []
    for index, text in enumerate(layer.data.layer.unset):
        loc = layer.location(("layer", "unset", index))
        try:
            path = parse_key(text)
        except ValueError as exc:
            findings.append(
                Finding(
                    "invalid-layer",
                    Severity.ERROR,
                    f"layer.unset[{index}]: {exc}",
                    [loc],
                    fix='write a dotted key such as "serve.enable_prefix_caching"',
                )
            )
            continue
        valid = (
            (len(path) >= 2 and path[0] in SCOPES)
            or (len(path) == 2 and path[0] == "roles")
            or (len(path) == 3 and path[0] == "roles" and path[2] == "command")
            or (len(path) >= 4 and path[0] == "roles" and path[2] in ("serve", "env"))
        )
        if not valid:
            findings.append(
                Finding(
                    "invalid-layer",
                    Severity.ERROR,
                    f"layer.unset[{index}]: {text!r} is not a path that can be unset",
                    [loc],
                    fix="unset serve.KEY, env.NAME, model.KEY, roles.NAME, or roles.NAME.serve/env.KEY",
                )
            )
            continue
        if path[0] == "serve":
            path = ("serve", layer.dest(str(path[1])), *path[2:])
        elif path[0] == "roles" and len(path) >= 4 and path[2] == "serve":
            path = (*path[:3], layer.dest(str(path[3])), *path[4:])
        origin = Location(loc.file, loc.line, loc.column, f"layer.unset[{index}]", loc.layer)
        out.append(Unset(path, origin, text, position))
    return out, findings


def env_value(value: Any) -> Any:
    """An env value as the scope holds it: a string, or `{"secret": True}`."""
    return {"secret": True} if isinstance(value, Secret) else value


def effective_keys(paths: Iterable[KeyPath], prefix: KeyPath = ()) -> list[str]:
    """Every effective key and table path (as dotted keys, below `prefix`): the names an `unset` can take."""
    keys: dict[str, None] = {}
    for path in paths:
        for depth in range(2, len(path) + 1):
            keys[format_key((*prefix, *path[:depth]))] = None
    return list(keys)


def unset_removes_nothing(unset: Unset, why: str, candidates: list[str], notes: list[str] | None = None) -> Finding:
    """`unset-removes-nothing`: an `unset` entry that names nothing effective at its layer's position."""
    close = difflib.get_close_matches(format_key(unset.path), candidates, n=1, cutoff=0.6)
    fix = (
        f"did you mean {close[0]!r}?"
        if close
        else "fix the key, or remove the entry: an unset removes what the layers before it (and its own layer) set"
    )
    # legal (vLLM's default or the later value applies) but very likely a mistake: DESIGN's warning
    return Finding(
        "unset-removes-nothing",
        Severity.WARNING,
        f"unset {unset.written!r} removes nothing: {why}",
        [unset.origin],
        fix=fix,
        notes=list(notes or []),
    )


def _set_later(top: Scope, unset: Unset, order: dict[str, int]) -> list[str]:
    """Where a later layer sets what an unset named too early: the unset applies at its own position."""
    notes: list[str] = []
    for path, entry in top.entries.items():
        if path[: len(unset.path)] == unset.path and order.get(entry.origin.layer, -1) > unset.position:
            notes.append(
                f"layer {entry.origin.layer!r} sets {format_key(path)} later ({entry.origin}); "
                "an unset removes only what is set up to its own layer"
            )
    return notes[:3]


def _top_tables(layer: Layer) -> tuple[dict[str, Any], dict[str, Any]]:
    """A layer's `env` and `model` tables as the scope merges them (once per layer: lint composes it often)."""
    known: tuple[dict[str, Any], dict[str, Any]] | None = layer.memo.get("top")
    if known is None:
        env = {k: env_value(v) for k, v in layer.data.env.items()}
        known = layer.memo["top"] = (env, layer.data.model.written())
    return known


Missed = list[tuple[Unset, list[str]]]  # unsets that removed nothing, with the keys they could have named


def merge_top_layer(top: Scope, layer: Layer, layer_unsets: list[Unset], missed: Missed) -> None:
    """Merge one layer's top-level `serve`, `env` and `model` into `top`, then apply its unsets."""
    top.merge(("serve",), layer.serve, layer.location)
    env, model = _top_tables(layer)
    top.merge(("env",), env, layer.location)
    top.merge(("model",), model, layer.location)
    for unset in layer_unsets:
        if unset.path[0] not in SCOPES:
            continue
        if not top.unset(unset.path, unset.origin):  # a miss changes nothing: what is there is what was
            missed.append((unset, effective_keys(k for k in top.entries if k[0] == unset.path[0])))


def missed_findings(top: Scope, missed: Missed, layers: list[Layer]) -> list[Finding]:
    """`unset-removes-nothing` for each miss, noting the later layers of the whole stack that set the key."""
    if not missed:
        return []
    order = {layer.name: index for index, layer in enumerate(layers)}
    return [
        unset_removes_nothing(
            unset,
            f"nothing sets {format_key(unset.path)} up to layer {unset.origin.layer!r}",
            candidates,
            _set_later(top, unset, order),
        )
        for unset, candidates in missed
    ]


def _merge_top(layers: list[Layer], unsets: list[list[Unset]]) -> tuple[Scope, list[Finding]]:
    """The top-level `serve`, `env` and `model` of every layer, merged in order with their unsets."""
    top = Scope()
    missed: Missed = []
    for layer, layer_unsets in zip(layers, unsets, strict=True):
        merge_top_layer(top, layer, layer_unsets, missed)
    return top, missed_findings(top, missed, layers)


def compose_layers(spec: str, layers: list[Layer], findings: list[Finding]) -> Stack:
    """Merge linearised layers (DESIGN section 5 steps 2-4a): the top level, each role (roles.py), references."""
    from profilekit.references import resolve_references
    from profilekit.roles import compose_roles

    unsets: list[list[Unset]] = []
    for position, layer in enumerate(layers):
        paths, problems = unset_paths(layer, position)
        findings.extend(problems)
        unsets.append(paths)
    top, problems = _merge_top(layers, unsets)
    findings.extend(problems)
    roles, problems = compose_roles(layers, unsets, top)
    findings.extend(problems)
    findings.extend(resolve_references(roles, layers))
    return Stack(spec, layers, roles, findings)


def compose(catalog: Catalog, spec: str) -> Stack:
    """Compose a stack named on the command line: `a+b+c` (usage errors raise)."""
    names = catalog.parse_stack(spec)
    layers, findings = linearise(catalog, names)
    if not findings:
        require_deployable(catalog, spec, names, layers)
    return compose_layers(spec, layers, findings)


def require_deployable(catalog: Catalog, spec: str, names: list[str], layers: list[Layer]) -> None:
    """A stack on the command line must name a layer that is not abstract (a usage error otherwise)."""
    chosen = [layer for layer in layers if layer.name in names]
    if chosen and all(layer.data.layer.abstract for layer in chosen):
        raise UsageError(
            f"stack {spec!r} names only abstract layers",
            hint="abstract layers are mixins: compose them with a deployable layer, e.g. "
            f"{spec}+{next(iter(n for n in catalog.files if n not in names), 'LAYER')}",
        )
