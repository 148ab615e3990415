"""`profilekit lock` and `profilekit update`: pin the repository's sources, and move them with a diff."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from profilekit.cli.common import G, check_format, err, out, redactor, warn
from profilekit.diff.impact import stack_impacts
from profilekit.diff.report import stack_diff_json, stack_diff_text
from profilekit.errors import EXIT_OK, FindingsError, UsageError
from profilekit.load.layers import find_repo, load_repo_config
from profilekit.report.formats import format_text
from profilekit.session import Session
from profilekit.sources.lockfile import LOCK_FILE, LockError, read_lock, write_lock
from profilekit.sources.locking import lock_sources, pick_sources

if TYPE_CHECKING:
    from pathlib import Path

    from profilekit.diff.impact import StackImpact
    from profilekit.load.layerdata import RepoConfig
    from profilekit.session import Session
    from profilekit.sources.lockfile import Locked
    from profilekit.sources.locking import Moved
    from profilekit.tomlio.read import TomlFile


def _repository() -> tuple[Path, RepoConfig, dict[str, Locked], TomlFile | None]:
    root = find_repo(None, G.repo)
    config, config_file, findings = load_repo_config(root)
    if findings:
        raise FindingsError(findings)
    try:
        lock = read_lock(root)
    except LockError:
        lock = None  # `lock` writes it again from profilekit.toml
    # an entry that cannot be read is locked afresh; the others keep their commits
    previous = lock.usable() if lock is not None else {}
    return root, config, previous, config_file


def _moved_text(step: Moved) -> list[str]:
    if step.old is None:
        return [f"{step.name}: {step.rev} locked at {step.new[:7]}"]
    if not step.changed:
        return [f"{step.name}: {step.rev} stays at {step.new[:7]}"]
    count = len(step.commits)
    lines = [f"{step.name}: {step.rev} moved {step.old[:7]} -> {step.new[:7]} ({count} commit{'s' * (count != 1)})"]
    return lines + [f"  {subject}" for subject in step.commits]


def lock() -> int:
    """`profilekit lock`, as cli/parsers/sources.py declares it."""
    root, config, previous, config_file = _repository()
    if config.sources:
        locked, moved = lock_sources(root, config, config_file, previous, move=set())
        _check(locked)
        write_lock(root, locked)
        for step in moved:
            out("\n".join(_moved_text(step)))
        done = f"wrote {LOCK_FILE}"
    elif (root / LOCK_FILE).exists():  # every source was removed: so is the lock
        (root / LOCK_FILE).unlink()
        done = f"profilekit.toml has no [sources]: removed {LOCK_FILE}"
    else:
        done = "profilekit.toml has no [sources]: nothing to lock"
    for name in previous:
        if name not in config.sources:
            out(f"{name}: no longer in profilekit.toml, dropped from {LOCK_FILE}")
    err(done)
    return EXIT_OK


def _check(locked: dict[str, Locked]) -> Session:
    """The repository opened with `locked`: its layers load, and each source's own rules are compared (warned)."""
    session = Session.open(repo=G.repo, vllm_version=G.vllm_version, locked=locked)
    G.session = session
    warn([f for f in session.config_findings if f.rule == "source-config-mismatch"])
    return session


def update(*, names: list[str] | None = None, fmt: str = "text", dry_run: bool = False) -> int:
    """`profilekit update`, as cli/parsers/sources.py declares it."""
    check_format(fmt, ("text", "json"))
    root, config, previous, config_file = _repository()
    chosen = pick_sources(config, names or [])
    if not previous:
        raise UsageError(f"there is no {LOCK_FILE} to update", hint="run `profilekit lock` first")
    before = Session.open(repo=G.repo, vllm_version=G.vllm_version)
    locked, moved = lock_sources(root, config, config_file, previous, move=chosen)
    after = _check(locked)
    steps = [step for step in moved if step.name in chosen]
    impacts = stack_impacts(before, after) if any(step.changed for step in moved) else []
    out(_update_json(steps, impacts) if fmt == "json" else _update_text(steps, impacts))
    if not dry_run:
        write_lock(root, locked)
    err(f"{LOCK_FILE} left as it was (--dry-run)" if dry_run else f"wrote {LOCK_FILE}")
    return EXIT_OK


def _update_text(steps: list[Moved], impacts: list[StackImpact]) -> str:
    redact = redactor()
    parts = ["\n".join(_moved_text(step)) for step in steps]
    for i, impact in enumerate(impacts):
        gap = "\n" if i else ""
        if impact.diff is None:
            parts.append(
                f"{gap}stack {impact.spec}: no longer composes\n"
                + format_text(redact.findings(impact.findings)).rstrip()
            )
        elif impact.diff.equal:
            parts.append(f"{gap}stack {impact.spec}: no change")
        else:
            parts.append(
                f"{gap}stack {impact.spec}:\n" + stack_diff_text(impact.diff, redact, labels=("before", "after"))
            )
    return "\n".join(parts)


def _update_json(steps: list[Moved], impacts: list[StackImpact]) -> str:
    redact = redactor()
    data = {
        "sources": [
            {"name": s.name, "rev": s.rev, "from": s.old, "to": s.new, "moved": s.changed, "commits": s.commits}
            for s in steps
        ],
        "stacks": [
            {"stack": i.spec, "composes": i.diff is not None, "equal": i.diff is not None and i.diff.equal}
            | ({"diff": stack_diff_json(i.diff, redact)} if i.diff is not None and not i.diff.equal else {})
            | ({"findings": [f.as_dict() for f in redact.findings(i.findings)]} if i.diff is None else {})
            for i in impacts
        ],
    }
    return json.dumps(data, indent=2, ensure_ascii=False)
