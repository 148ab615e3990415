"""Sources: repositories of layers a profile repository builds on, pinned by profilekit.lock (docs/SOURCES.md).

`[sources.NAME]` in profilekit.toml names a git repository and a `rev`; `profilekit lock` resolves the rev to a
commit and records it with a digest of the commit's files. Every other command reads a source only at its
locked commit, from a copy in the user cache folder (`sources/trees/COMMIT`), fetched once and checked against
the digest on every run: a missing or stale lock, a copy that changed, or a commit that cannot be fetched is an
error naming the source. The layers of source NAME are `NAME:LAYER`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from profilekit import cache
from profilekit.errors import Finding, Location, Severity
from profilekit.load.layers import Source, discover_layers, source_label
from profilekit.sources import gitio
from profilekit.sources.gitio import rev_problem, url_problem
from profilekit.sources.lockfile import (
    LOCK_FILE,
    WRITE_AGAIN,
    Damage,
    Lock,
    Locked,
    LockError,
    read_lock,
    tree_hash,
)

if TYPE_CHECKING:
    from profilekit.load.layerdata import RepoConfig, SourceSpec
    from profilekit.tomlio.read import TomlFile

SOURCES_DIR = "sources"


def source_layers(name: str, tree: Path) -> dict[str, Path]:
    """The layer files of source `name` copied in `tree`, by the names this repository uses (`platform:base`)."""
    return {f"{name}:{layer}": path for layer, path in discover_layers(tree).items()}


def cache_root() -> Path:
    return Path(cache.cache_dir()) / SOURCES_DIR


def tree_path(commit: str) -> Path:
    return Path(cache.cache_dir()) / cache.SOURCE_COPIES / commit


def extracted_digest(tree: Path) -> str:
    """The digest of `tree` when it was copied out of git (beside it, as `COMMIT.digest`), or ""."""
    try:
        return tree.with_name(tree.name + ".digest").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def copy_changed(name: str, commit: str, tree: Path) -> Finding:
    """`source-tampered`: the copy in `tree` is no longer what git gave (the caller says where)."""
    return Finding(
        "source-tampered",
        Severity.ERROR,
        f"source {name!r}: the cached copy of {source_label(name, commit)} ({tree}) changed after it was fetched",
        fix=f"delete {tree} and run again: the locked commit is fetched anew and checked",
    )


def spec_problem(spec: SourceSpec) -> tuple[str, str]:
    """(key, why) when profilekit.toml's entry cannot name a source, else ("", "")."""
    problem = url_problem(spec.git)
    if problem:
        return "git", problem
    problem = rev_problem(spec.rev)
    return ("rev", problem) if problem else ("", "")


def config_location(config_file: TomlFile | None, name: str, key: str = "") -> Location:
    """`[sources.NAME]` (or its `key`) in profilekit.toml: where every finding about source NAME is shown."""
    path = ("sources", name, key) if key else ("sources", name)
    pos = config_file.pos(path) if config_file is not None else None
    shown = f"sources.{name}.{key}" if key else f"sources.{name}"
    return Location("profilekit.toml", pos.line if pos else 1, pos.column if pos else 1, shown)


def open_sources(
    root: Path,
    config: RepoConfig,
    config_file: TomlFile | None,
    *,
    locked: dict[str, Locked] | None = None,
    fetch: bool = True,
) -> tuple[list[Source], list[Finding]]:
    """Every source at its locked commit (fetched into the cache when it is not there yet), or why not.

    `locked` replaces profilekit.lock (`update` checks a lock before it writes it); without `fetch` a commit not
    in the cache is a finding (shell completion never reaches the network).
    """
    lock: Lock | None
    if locked is not None:
        lock = Lock(dict[str, Locked | Damage](locked), {})
    else:
        try:
            lock = read_lock(root)
        except LockError as exc:  # every source is unlocked, each named where profilekit.toml declares it
            return [], [_unlocked(name, exc.damage, config_file) for name in config.sources]
    found: list[Source] = []
    problems = _undeclared(lock, config) if locked is None and lock is not None else []
    for name, spec in config.sources.items():
        source, problem = _open_one(root, name, spec, lock, config_file, fetch=fetch)
        if problem is not None:
            problems.append(problem)
        elif source is not None:
            found.append(source)
    return found, problems


def _unlocked(name: str, damage: Damage, config_file: TomlFile | None) -> Finding:
    """`source-unlocked` for source `name` of a lock (or lock entry) that cannot be used: at the source's line
    of profilekit.toml, then where the damage is in the lock."""
    return Finding(
        "source-unlocked",
        Severity.ERROR,
        f"source {name!r} is not locked: {damage.why}",
        [config_location(config_file, name), Location(LOCK_FILE, damage.line, damage.column, damage.key)],
        fix=damage.fix,
    )


def _undeclared(lock: Lock, config: RepoConfig) -> list[Finding]:
    """`source-lock-stale` for each source the lock has and profilekit.toml no longer declares."""
    return [
        Finding(
            "source-lock-stale",
            Severity.ERROR,
            f"{LOCK_FILE} locks source {name!r}, which profilekit.toml does not declare: the lock was written for "
            "another profilekit.toml",
            [Location(LOCK_FILE, *lock.at("sources", name), f"sources.{name}")],
            fix=f"run `profilekit lock` to drop {name!r} from {LOCK_FILE} (or declare [sources.{name}] again)",
        )
        for name in lock.entries
        if name not in config.sources
    ]


def _in_lock(lock: Lock | None, name: str, key: str) -> Location:
    line, column = lock.at("sources", name, key) if lock is not None else (1, 1)
    return Location(LOCK_FILE, line, column, f"sources.{name}.{key}")


def _open_one(
    root: Path,
    name: str,
    spec: SourceSpec,
    lock: Lock | None,
    config_file: TomlFile | None,
    *,
    fetch: bool,
) -> tuple[Source | None, Finding | None]:
    key, problem = spec_problem(spec)
    if problem:
        return None, Finding(
            "invalid-source", Severity.ERROR, f"source {name!r}: {problem}", [config_location(config_file, name, key)]
        )
    entry = lock.entries.get(name) if lock is not None else None
    if isinstance(entry, Damage):
        return None, _unlocked(name, entry, config_file)
    if entry is None:
        why = f"there is no {LOCK_FILE}" if lock is None else f"{LOCK_FILE} has no entry for it"
        return None, Finding(
            "source-unlocked",
            Severity.ERROR,
            f"source {name!r} is not locked: {why}",
            [config_location(config_file, name)],
            fix="run `profilekit lock` (and commit profilekit.lock), so every run reads the same commit",
        )
    for key, now, then in (("git", spec.git, entry.git), ("rev", spec.rev, entry.rev)):
        if now != then:
            return None, Finding(
                "source-lock-stale",
                Severity.ERROR,
                f"source {name!r} changed since it was locked: {key} is {now!r} in profilekit.toml, "
                f"{then!r} in {LOCK_FILE}",
                [config_location(config_file, name, key), _in_lock(lock, name, key)],
                fix=f"run `profilekit lock` to lock {name!r} at the new {key}",
            )
    if not gitio.is_commit(entry.commit):
        return None, Finding(
            "source-unlocked",
            Severity.ERROR,
            f"source {name!r} is not locked: {LOCK_FILE} locks it at {entry.commit!r}, which is not a commit id",
            [config_location(config_file, name), _in_lock(lock, name, "commit")],
            fix=WRITE_AGAIN,
        )
    return _materialise(root, name, spec, entry, config_file, fetch=fetch)


def _materialise(
    root: Path, name: str, spec: SourceSpec, entry: Locked, config_file: TomlFile | None, *, fetch: bool
) -> tuple[Source | None, Finding | None]:
    source = Source(name, spec.git, spec.rev, entry.commit, entry.hash, tree_path(entry.commit))
    where = [config_location(config_file, name)]
    if not source.tree.is_dir() and not fetch:
        why = f"source {name!r}: commit {entry.commit[:7]} is not in the cache (not fetched here)"
        return None, Finding("source-unavailable", Severity.ERROR, why, where)
    if not source.tree.is_dir():
        try:
            mirror = gitio.fetch(cache_root(), gitio.git_address(root, spec.git), commit=entry.commit)
            gitio.extract(mirror, entry.commit, source.tree)
        except gitio.UnsafeSource as exc:
            return None, Finding("invalid-source", Severity.ERROR, f"source {name!r}: {exc}", where)
        except gitio.GitError as exc:
            return None, Finding(
                "source-unavailable",
                Severity.ERROR,
                f"source {name!r}: commit {entry.commit[:7]} is not in the cache and cannot be fetched: {exc}",
                where,
                fix="check the git address and your access to it; `profilekit lock` again if the commit is gone",
            )
    digest = tree_hash(source.tree)
    if digest != entry.hash:
        if digest != extracted_digest(source.tree):
            changed = copy_changed(name, entry.commit, source.tree)
            changed.locations = where
            return None, changed
        why = f"the files of commit {entry.commit[:7]} do not match the digest in {LOCK_FILE}"  # the lock is wrong
        fix = f"run `profilekit lock` again if {LOCK_FILE} was edited by hand"
        return None, Finding("source-tampered", Severity.ERROR, f"source {name!r}: {why}", where, fix=fix)
    return source, None
