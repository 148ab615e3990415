"""The layers of one repository and its sources by name (`LayerIndex`), each file read at most once, and stack
specs as the command line writes them (`a+b+c`, or the layers' files)."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.errors import Finding, Location, Severity, UsageError
from profilekit.hardware import CATALOGUE
from profilekit.load.layers import PROFILES_DIR, Layer, discover_layers, load_layer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from profilekit.hardware import Gpu
    from profilekit.load.layers import Source
    from profilekit.vllm.catalogue import Catalogue


class LayerIndex:
    """Lazily loaded layers of one repository; each file is read at most once."""

    def __init__(
        self,
        root: Path,
        catalogue: Catalogue | None = None,
        sources: Sequence[Source] = (),
        gpus: Mapping[str, Gpu] | None = None,
    ) -> None:
        self.root = root
        # the GPUs a `[hardware] gpu` may name: profilekit's catalogue and profilekit.toml's [gpus]
        self.gpus: dict[str, Gpu] = {**CATALOGUE, **(gpus or {})}
        self.files = discover_layers(root)
        # the repository's own layers; the layers of its sources (`NAME:LAYER`) follow them in `files`
        self.local = list(self.files)
        self.origins: dict[str, Source] = {}
        for source in sources:
            from profilekit.sources import source_layers  # noqa: PLC0415 - only a repository with [sources] loads the sources package

            for name, path in source_layers(source.name, source.tree).items():
                if name not in self.files:  # a file of the repository named so is an error (`_colon_in_name`)
                    self.files[name] = path
                    self.origins[name] = source
        # with the target release's flag catalogue, serve keys written as aliases become dests
        self.catalogue = catalogue
        self._loaded: dict[str, tuple[Layer | None, list[Finding]]] = {}
        self._provided: dict[str, list[str]] | None = None
        self._declared: dict[str, list[str]] | None = None

    def get(self, name: str) -> tuple[Layer | None, list[Finding]]:
        if name not in self._loaded:
            source = self.origins.get(name)
            if source is None and ":" in name:
                self._loaded[name] = (None, [_colon_in_name(self.root, name, self.files[name])])
            elif source is None:
                self._loaded[name] = load_layer(self.root, name, self.files[name], self.catalogue)
            else:
                # only a repository with [sources] loads the sources package
                from profilekit.sources.layers import load_source_layer  # noqa: PLC0415

                self._loaded[name] = load_source_layer(source, name, self.files[name], self.catalogue)
        return self._loaded[name]

    def provided(self) -> dict[str, list[str]]:
        """Every capability that a layer of the repository `provides`, with those layers (reads every file once)."""
        if self._provided is None:
            self._provided = self._collect(lambda layer: layer.data.layer.provides)
        return self._provided

    def declared_roles(self) -> dict[str, list[str]]:
        """Every role a layer of the repository (or of a source) declares (`[roles.X] kind`), with those layers."""
        if self._declared is None:
            self._declared = self._collect(declared_by)
        return self._declared

    def _collect(self, names_of: Callable[[Layer], Iterable[str]]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for name in self.files:
            layer, _ = self.get(name)
            for item in names_of(layer) if layer is not None else []:
                found.setdefault(item, []).append(name)
        return found

    def use(self, name: str, layer: Layer) -> None:
        """Take `layer` as the layer `name` from now on (`set --check` composes an edit before it is written)."""
        self._loaded[name] = (layer, [])
        self._provided = self._declared = None

    def seed(self, *, provides: dict[str, list[str]], roles: dict[str, list[str]]) -> None:
        """What `provided` and `declared_roles` answer, from each layer's facts as known without reading it (lint's
        cache)."""
        self._provided = self._seeded(provides)
        self._declared = self._seeded(roles)

    def _seeded(self, by_layer: dict[str, list[str]]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for name in self.files:
            for item in by_layer.get(name, []):
                found.setdefault(item, []).append(name)
        return found

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


def declared_by(layer: Layer) -> list[str]:
    """The roles `layer` declares: each `[roles.X]` table with a `kind`."""
    return [role for role, spec in layer.data.roles.items() if spec.kind is not None]
