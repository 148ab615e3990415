"""`lock` and `update`: resolve each source's rev to a commit, copy the commit into the cache, digest its files."""

from __future__ import annotations

import difflib
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from profilekit.errors import Finding, FindingsError, Severity, UsageError
from profilekit.records import record
from profilekit.sources import (
    cache_root,
    config_location,
    copy_changed,
    extracted_digest,
    gitio,
    spec_problem,
    tree_path,
)
from profilekit.sources.lockfile import Locked, tree_hash

if TYPE_CHECKING:
    from profilekit.load.layerdata import RepoConfig, SourceSpec
    from profilekit.tomlio.read import TomlFile


@record(slots=True)
class Moved:
    """What locking did to one source."""

    name: str
    rev: str
    old: str | None  # the commit it was locked at before, if any
    new: str
    commits: list[str] = field(default_factory=list)  # `git log --oneline old..new`

    @property
    def changed(self) -> bool:
        return self.old != self.new


def lock_sources(
    root: Path,
    config: RepoConfig,
    config_file: TomlFile | None,
    previous: dict[str, Locked],
    *,
    move: set[str],
) -> tuple[dict[str, Locked], list[Moved]]:
    """The lock of every source: a locked one whose git and rev are unchanged keeps its commit unless it is in
    `move`; the others are fetched and their rev resolved to the newest commit it names. Raises FindingsError."""
    locked: dict[str, Locked] = {}
    moved: list[Moved] = []
    problems: list[Finding] = []
    for name, spec in config.sources.items():
        try:
            entry, step = _lock_one(root, name, spec, previous.get(name), move=name in move)
        except _Refused as exc:
            exc.finding.locations = [config_location(config_file, name, exc.key)]
            problems.append(exc.finding)
            continue
        locked[name] = entry
        moved.append(step)
    if problems:
        raise FindingsError(problems)
    return locked, moved


class _Refused(Exception):
    def __init__(self, finding: Finding, key: str = "") -> None:
        self.finding = finding
        self.key = key


def _lock_one(root: Path, name: str, spec: SourceSpec, old: Locked | None, *, move: bool) -> tuple[Locked, Moved]:
    key, problem = spec_problem(spec)
    if problem:
        raise _Refused(Finding("invalid-source", Severity.ERROR, f"source {name!r}: {problem}"), key)
    url = gitio.git_address(root, spec.git)
    keep = old is not None and old.git == spec.git and old.rev == spec.rev and gitio.is_commit(old.commit) and not move
    try:
        if keep:
            assert old is not None
            commit = old.commit
            mirror = gitio.fetch(cache_root(), url, commit=commit) if not tree_path(commit).is_dir() else None
        else:
            mirror = gitio.fetch(cache_root(), url)
            found = gitio.resolve(mirror, spec.rev)
            if found is None and gitio.is_commit(spec.rev):  # a commit no branch or tag holds: asked for by id
                mirror = gitio.fetch(cache_root(), url, commit=spec.rev)
                found = gitio.resolve(mirror, spec.rev)
            if found is None:
                raise _Refused(_unknown_rev(name, spec, mirror), "rev")
            commit = found
        tree = tree_path(commit)
        if not tree.is_dir():
            assert mirror is not None
            gitio.extract(mirror, commit, tree)
    except gitio.UnsafeSource as exc:
        raise _Refused(Finding("invalid-source", Severity.ERROR, f"source {name!r}: {exc}")) from None
    except gitio.GitError as exc:
        raise _Refused(Finding("source-unavailable", Severity.ERROR, f"source {name!r}: {exc}"), "git") from None
    digest = tree_hash(tree)
    # what is locked is the copy as git gave it: a copy changed since is refused, whichever rev led to its commit
    # (a lock whose digest was edited by hand is written again from the intact copy)
    if digest != extracted_digest(tree) and not (keep and old is not None and digest == old.hash):
        raise _Refused(copy_changed(name, commit, tree))
    step = Moved(name, spec.rev, old.commit if old is not None and old.git == spec.git else None, commit)
    if step.changed and step.old is not None and mirror is not None and gitio.has_commit(mirror, step.old):
        step.commits = gitio.log_subjects(mirror, step.old, commit)
    return Locked(spec.git, spec.rev, commit, digest), step


def _unknown_rev(name: str, spec: SourceSpec, mirror: Path) -> Finding:
    refs = gitio.ref_names(mirror)
    close = difflib.get_close_matches(spec.rev, refs, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else "its tags and branches: " + (", ".join(refs[:12]) or "none")
    return Finding(
        "source-unavailable",
        Severity.ERROR,
        f"source {name!r}: rev {spec.rev!r} names no tag, branch or commit of {spec.git}",
        fix=hint,
    )


def pick_sources(config: RepoConfig, names: list[str]) -> set[str]:
    """`update SOURCE...`: each must be a source of profilekit.toml (did-you-mean); none means all."""
    if not config.sources:
        raise UsageError("profilekit.toml has no [sources]", hint="add [sources.NAME] with git and rev, then lock")
    for name in names:
        if name not in config.sources:
            close = difflib.get_close_matches(name, list(config.sources), n=1)
            hint = f"did you mean {close[0]!r}?" if close else "sources: " + ", ".join(config.sources)
            raise UsageError(f"no source {name!r} in profilekit.toml", hint=hint)
    return set(names or config.sources)
