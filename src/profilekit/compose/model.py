"""The composed stack as data: each value with where it was set and what it replaced (`Entry`), the flat scopes
that hold them (`Scope`), roles (`RoleConfig`), the stack (`Stack`), unsets and resolved references."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from profilekit.hardware import CATALOGUE
from profilekit.load.layerdata import Secret
from profilekit.records import record
from profilekit.tomlio.positions import parse_key

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from profilekit.errors import Finding, Location
    from profilekit.hardware import Gpu
    from profilekit.load.layers import Layer
    from profilekit.tomlio.positions import Path as KeyPath

DEFAULT_ROLE = "serve"


SCOPES = ("serve", "env", "model", "hardware")


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
        """The nested effective table of one scope (`serve`, `env`, `model`, `hardware`)."""
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

    @property
    def hardware(self) -> dict[str, Any]:
        """`gpu` and `gpus_per_node` as declared for this role (`[hardware]`, `[roles.R.hardware]`)."""
        return self.scope.tree("hardware")

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


@record(frozen=True, slots=True)
class Unapplied:
    """A `[roles.X]` table for a role the stack does not declare: it applies nowhere and creates nothing."""

    role: str
    origin: Location  # the `[roles.X]` table
    layer: str

    def why(self, spec: str) -> str:
        return f"role {self.role} is not in {spec}"

    def as_dict(self, spec: str) -> dict[str, str]:
        return {"role": self.role, "at": str(self.origin), "layer": self.layer, "why": self.why(spec)}


@record(slots=True)
class Stack:
    """A composed stack: its layers in merge order and its roles."""

    spec: str
    layers: list[Layer]
    roles: dict[str, RoleConfig]
    findings: list[Finding] = field(default_factory=list)
    # trait -> the layers that have it, in merge order (lint hands them in: in a long chain most layers have none)
    traits: dict[str, list[Layer]] = field(default_factory=dict)
    # role tables of roles this stack does not declare (declared by other stacks' layers): shown, never applied
    unapplied: list[Unapplied] = field(default_factory=list)
    # the GPUs a `[hardware] gpu` may name: profilekit's catalogue and the repository's [gpus] (LayerIndex.gpus)
    gpus: Mapping[str, Gpu] = field(default_factory=lambda: CATALOGUE)

    def gpu(self, role: str) -> Gpu | None:
        """The GPU role `role` declares (`[hardware] gpu`), None when it declares none (or one that names none)."""
        name = self.roles[role].hardware.get("gpu")
        return self.gpus.get(name) if isinstance(name, str) else None

    @property
    def layer_names(self) -> list[str]:
        return [layer.name for layer in self.layers]

    def item_location(self, origin: Location, index: int) -> Location:
        """Where item `index` of the array value written at `origin` is (the value's location if not found)."""
        layer = next((layer for layer in self.layers if layer.name == origin.layer), None)
        return origin if layer is None else item_location(layer, origin, index)

    def layers_that(self, trait: str) -> list[Layer]:
        """The layers with `trait` (TRAITS), in merge order: the only ones a loop over those tables visits."""
        known = self.traits.get(trait)
        if known is None:
            test = TRAITS[trait]
            known = self.traits[trait] = [layer for layer in self.layers if test(layer)]
        return known


@record(frozen=True, slots=True)
class Unset:
    """One `[layer] unset` entry: the effective path it removes, where it is written, and its text."""

    path: KeyPath
    origin: Location
    written: str
    position: int  # the layer's index in the merge order


def env_value(value: Any) -> Any:
    """An env value as the scope holds it: a string, or `{"secret": True}`."""
    return {"secret": True} if isinstance(value, Secret) else value


@record(frozen=True, slots=True)
class Part:
    """One reference inside a written value: its text, the value it resolved to, and where that value was set."""

    text: str  # as written: "${roles.prefill.serve.port}"
    role: str  # the role whose value it names
    key: str  # that value's effective key: "serve.port"
    value: Any
    origin: Location


@record(frozen=True, slots=True)
class Resolution:
    """How an effective value was resolved: the value as the layer wrote it, and each reference in it."""

    written: Any
    parts: tuple[Part, ...]


def item_location(layer: Layer, origin: Location, index: int) -> Location:
    """Where item `index` of the array written at `origin` (in `layer`) is; `origin` when it cannot be found."""
    try:
        return layer.location((*parse_key(origin.key), index))
    except ValueError:
        return origin
