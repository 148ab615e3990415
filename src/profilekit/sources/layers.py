"""A layer of a source, read as a layer of its own repository: its names resolve inside the source."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.errors import Finding, Severity
from profilekit.load.layers import Layer, load_layer

if TYPE_CHECKING:
    from profilekit.load.layers import Source
    from profilekit.vllm.catalogue import Catalogue


def qualify(source: str, ref: str) -> str:
    """A name a source's layer writes, as the consumer knows it: `base` in source `platform` is `platform:base`."""
    return ref if ref.startswith("@") or ":" in ref else f"{source}:{ref}"


def load_source_layer(
    source: Source, name: str, path: Path, catalogue: Catalogue | None
) -> tuple[Layer | None, list[Finding]]:
    """Load `path` of `source` as layer `name`; its file is shown as `platform@3f2a9c1:profiles/x.toml`.

    `extends`, `conflicts` and `requires` name the source's own layers; `[model] config` is a file of the
    source, so it may not be absolute or climb out of it.
    """
    layer, findings = load_layer(source.tree, name, path, catalogue, prefix=source.prefix)
    if layer is None:
        return None, findings
    meta = layer.data.layer
    meta = replace(
        meta,
        extends=[qualify(source.name, ref) for ref in meta.extends],
        conflicts=[qualify(source.name, ref) for ref in meta.conflicts],
        requires=[qualify(source.name, ref) for ref in meta.requires],
    )
    data = replace(layer.data, layer=meta)
    config = data.model.config
    if config is not None:
        inside = (source.tree / config).resolve()
        if Path(config).is_absolute() or config.startswith("~") or not inside.is_relative_to(source.tree.resolve()):
            loc = layer.location(("model", "config"))
            findings.append(
                Finding(
                    "invalid-layer",
                    Severity.ERROR,
                    f"[model] config = {config!r} leaves source {source.name!r}: a source's files are read "
                    "only inside it",
                    [loc],
                    fix="name a config.json inside the source, relative to its root",
                )
            )
            return None, findings
        data = replace(data, model=replace(data.model, config=str(inside)))
    layer.data = data
    layer.source = source
    return layer, findings
