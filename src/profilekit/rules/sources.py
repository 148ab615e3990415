"""`source-config-mismatch`: a source's own profilekit.toml disagrees with the repository that uses it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from profilekit.errors import Finding, Location, Severity
from profilekit.load.layers import REPO_MARKER, load_repo_config

if TYPE_CHECKING:
    from pathlib import Path

    from profilekit.load.layerdata import RepoConfig
    from profilekit.load.layers import Source
    from profilekit.tomlio.read import TomlFile


def _at(file: TomlFile | None, shown: str, path: tuple[str, ...]) -> Location:
    pos = file.pos(path) if file is not None else None
    return Location(shown, pos.line if pos else 1, pos.column if pos else 1, ".".join(path))


def source_config_findings(
    root: Path, config: RepoConfig, config_file: TomlFile | None, version: str, sources: list[Source]
) -> list[Finding]:
    """Each source's profilekit.toml against the consumer's: the vLLM release it targets, its `[lint]` mode, and
    sources of its own (not followed). A source's broken profilekit.toml is reported as its own findings."""
    found: list[Finding] = []
    for source in sources:
        if not (source.tree / REPO_MARKER).is_file():
            continue
        theirs, their_file, problems = load_repo_config(source.tree, prefix=source.prefix)
        if problems:
            found += problems
            continue
        shown = f"{source.prefix}{REPO_MARKER}"
        pairs: list[tuple[tuple[str, ...], Any, Any, str]] = [
            (("vllm", "version"), theirs.vllm.version, version, "targets vLLM"),
            (("lint", "combinations"), theirs.lint.combinations, config.lint.combinations, "lints combinations"),
        ]
        for path, their, ours, what in pairs:
            if their == ours or their_file is None or path not in their_file.positions:
                continue  # what a source leaves at its default is no rule of its own
            found.append(
                Finding(
                    "source-config-mismatch",
                    Severity.WARNING,
                    f"source {source.name!r} {what} {their}, this repository {ours}: its layers were checked "
                    f"with {'.'.join(path)} = {their!r}",
                    [_at(their_file, shown, path), _at(config_file, REPO_MARKER, path)],
                    fix=f"agree on {'.'.join(path)} with the owners of {source.name!r}, or lint the source with "
                    "`profilekit lint --sources`",
                )
            )
        if theirs.sources:
            found.append(
                Finding(
                    "source-config-mismatch",
                    Severity.WARNING,
                    f"source {source.name!r} has sources of its own ({', '.join(theirs.sources)}), which are not "
                    "followed: its layers cannot name theirs",
                    [_at(their_file, shown, ("sources",))],
                    fix="add them to this repository's [sources] if its layers need them",
                )
            )
    return found
