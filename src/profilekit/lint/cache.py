"""What `lint` found in each file and each stack last time, so that a repeat lint checks only what changed.

Units and what they depend on:

- a **file**: its findings (syntax, schema, names it refers to, options) and the facts lint needs of it without
  reading it (`extends`, `provides`, whether it loaded, whether it is abstract). Its facts depend on its bytes;
  its findings also on the repository's layer names and capabilities (`conflicts = ["@kv-connector"]` names
  one), which are part of the `scope` digest.
- a **stack** (a deployable layer, a `[lint] stacks` entry, a combination): its findings depend on the bytes of
  every layer in its `extends` closure and on the scope.

Everything also depends on profilekit's code, the target release, profilekit.toml and the config.json files
its `[models]` entries name (the pack's key). Any other file a check read besides the layers (a model's
config.json named by a layer) is an input of every unit: if one changed, nothing is reused. Findings are stored
redacted, as they are printed: no secret value reaches the cache.

Units hold every finding, before any rule selection: `--select`, `--ignore` and `[lint] select`/`ignore`
choose among them when the lint reports (lint/repository.py), so a lint with another selection reuses every
unit and says the same as a lint without the cache. A layer's `[layer] ignore` is one of its facts.

The pack is one cache entry per repository (profilekit.cache: checksummed, written whole), holding only the
units of the latest lint, so it does not grow with edits.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from profilekit import cache
from profilekit.cache import record
from profilekit.compose.index import declared_by
from profilekit.errors import Finding, Location, Severity

if TYPE_CHECKING:
    from profilekit.load.layers import Layer
    from profilekit.session import Session

KIND = "lint"


def finding_to_json(f: Finding) -> list[Any]:
    locations = [[loc.file, loc.line, loc.column, loc.key, loc.layer] for loc in f.locations]
    return [f.rule, f.severity.value, f.message, locations, f.fix, f.stack, f.role, f.notes]


def finding_from_json(item: list[Any]) -> Finding:
    rule, severity, message, locations, fix, stack, role, notes = item
    return Finding(
        rule, Severity(severity), message, [Location(*loc) for loc in locations], fix, stack, role, list(notes)
    )


def layer_facts(layer: Layer | None) -> dict[str, Any]:
    """What lint needs of a file without reading it again: its `[layer]` facts, and the models it names (the
    `serve.model` strings, of the top level and of each role)."""
    if layer is None:
        return {
            "loaded": False,
            "abstract": False,
            "extends": [],
            "provides": [],
            "roles": [],
            "ignore": {},
            "models": [],
        }
    head = layer.data.layer
    models = [serve.get("model") for serve in (layer.serve, *layer.role_serve.values())]
    return {
        "loaded": True,
        "abstract": head.abstract,
        "extends": list(head.extends),
        "provides": list(head.provides),
        "roles": declared_by(layer),
        "ignore": dict(head.ignore),
        "models": [model for model in models if isinstance(model, str)],
    }


class LintCache:
    """The units of one repository's last lint, and the units of this one as they are settled.

    Open it before the lint computes anything: from then on the files its checks read are recorded.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        config = cache.file_digest(str(session.root / "profilekit.toml")) or ""
        parts = [str(session.root), session.version, config, cache.code_stamp()]
        models = session.models()  # the config.json of each [models] entry: a missing one is keyed as such
        parts += [
            f"{entry.model}\0{cache.file_digest(str(models.file(entry))) or ''}" for entry in models.named.values()
        ]
        self.key = cache.digest("\n".join(parts).encode("utf-8", "surrogateescape"))
        old = cache.read_entry(KIND, self.key) or {}
        self.extra: dict[str, list[Any]] = {}  # path -> [size, sha] of the files checks read besides the layers
        usable = self._extra_holds(old.get("extra", []))
        self.old_files: dict[str, Any] = old.get("files", {}) if usable and isinstance(old.get("files"), dict) else {}
        self.old_units: dict[str, Any] = old.get("units", {}) if usable and isinstance(old.get("units"), dict) else {}
        self.files: dict[str, Any] = {}  # this lint's file units, stored form
        self.units: dict[str, Any] = {}  # this lint's stack units, stored form
        self.fresh_files: dict[str, list[Finding]] = {}  # findings made by this lint, redacted when saved
        self.fresh_units: dict[str, list[Finding]] = {}
        self.digests: dict[str, str] = {}
        self.closure_keys: dict[str, str] = {}  # layer -> closure_key
        self.scope = ""
        self.started = time.time_ns()
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.recording = record.start((package + os.sep, cache.cache_dir().rstrip(os.sep) + os.sep))

    def _extra_holds(self, extra: Any) -> bool:
        try:
            for path, size, sha in extra:
                if cache.file_digest(path) != sha:
                    return False
                self.extra[path] = [size, sha]
        except (TypeError, ValueError):
            return False
        return True

    # ---- files

    def digest_of(self, name: str) -> str:
        if name not in self.digests:
            self.digests[name] = cache.file_digest(str(self.session.layers.files[name])) or ""
        return self.digests[name]

    def known_facts(self, name: str) -> dict[str, Any] | None:
        """The stored facts of file `name`, if its bytes are the same as when they were stored."""
        unit = self.old_files.get(name)
        sha = self.digest_of(name)
        if sha and isinstance(unit, dict) and unit.get("sha") == sha and isinstance(unit.get("facts"), dict):
            return dict(unit["facts"])
        return None

    def set_scope(self, facts: dict[str, dict[str, Any]]) -> None:
        """The repository-wide inputs of every unit: the layer names, who provides which capability and who declares
        which role."""
        provided = sorted((cap, name) for name, f in facts.items() for cap in f["provides"])
        declared = sorted((role, name) for name, f in facts.items() for role in f["roles"])
        self.scope = cache.digest(repr((sorted(facts), provided, declared)).encode("utf-8", "surrogateescape"))

    def file_findings(self, name: str) -> list[Finding] | None:
        """The stored findings of file `name`, if its bytes and the scope are the same."""
        unit = self.old_files.get(name)
        if self.known_facts(name) is None or not isinstance(unit, dict) or unit.get("scope") != self.scope:
            return None
        self.files[name] = unit
        return [finding_from_json(item) for item in unit["findings"]]

    def put_file(self, name: str, facts: dict[str, Any], findings: list[Finding]) -> None:
        self.files[name] = {"sha": self.digest_of(name), "facts": facts, "scope": self.scope, "findings": []}
        self.fresh_files[name] = findings

    # ---- stacks

    def stack_key(self, names: list[str], spec: str, facts: dict[str, dict[str, Any]]) -> str:
        """The key of a stack unit: the scope, the stack, and the bytes of every layer of its `extends` closure.

        Each name stands for its closure by `closure_key`; a closure with a cycle is listed layer by layer.
        """
        keys = [self.closure_key(name, facts) for name in names]
        if all(keys):
            return cache.digest(repr((self.scope, spec, names, keys)).encode("utf-8", "surrogateescape"))
        closure: set[str] = set()
        todo = list(names)
        while todo:
            name = todo.pop()
            if name not in closure:
                closure.add(name)
                todo += facts.get(name, {}).get("extends", [])
        parts = [(n, self.digest_of(n) if n in self.session.layers.files else "") for n in sorted(closure)]
        return cache.digest(repr((self.scope, spec, names, parts)).encode("utf-8", "surrogateescape"))

    def closure_key(self, name: str, facts: dict[str, dict[str, Any]]) -> str:
        """A digest of the bytes of every layer of `name`'s `extends` closure, built from its parents' (a Merkle
        digest of the graph), so the layers of an n-layer chain are keyed in n steps, not n^2/2; "" when the
        closure holds a cycle. Iterative: a chain may be 10,000 layers deep."""
        pending = [name]
        entered: set[str] = set()
        while pending:
            current = pending[-1]
            if current in self.closure_keys:
                pending.pop()
                continue
            parents = facts.get(current, {}).get("extends", [])
            waiting = [p for p in parents if p not in self.closure_keys]
            if current not in entered:
                entered.add(current)
                if any(p in entered for p in waiting):  # a parent still being keyed: a cycle
                    for member in pending:
                        self.closure_keys[member] = ""
                    break
                pending += waiting
                continue
            own = self.digest_of(current) if current in self.session.layers.files else ""
            parts = (current, own, [self.closure_keys[p] for p in parents])
            bad = any(not key for key in parts[2])
            self.closure_keys[current] = "" if bad else cache.digest(repr(parts).encode("utf-8", "surrogateescape"))
            pending.pop()
        return self.closure_keys[name]

    def stack(self, key: str) -> tuple[bool, list[Finding]] | None:
        unit = self.old_units.get(key)
        if not isinstance(unit, list) or len(unit) != 2:
            return None
        self.units[key] = unit
        return bool(unit[0]), [finding_from_json(item) for item in unit[1]]

    def put_stack(self, key: str, composed: bool, findings: list[Finding]) -> None:
        self.units[key] = [composed, []]
        self.fresh_units[key] = findings

    # ---- saving

    def save(self) -> None:
        """Store this lint's units, new findings redacted with the secrets of every layer read.

        Not when a layer is dated after the lint began: it may have been read before or after the change.
        """
        record.stop(self.recording)
        for name in self.digests:
            try:
                if os.stat(self.session.layers.files[name]).st_mtime_ns >= self.started - cache.RACY_NS:
                    return
            except OSError:
                return
        layer_files = {str(path) for path in self.session.layers.files.values()}
        config = str(self.session.root / "profilekit.toml")
        for path in self.recording.files:
            if path in layer_files or path == config or record.kind(path) != "file":
                continue
            sha = cache.file_digest(path)
            if sha is not None:
                self.extra[path] = [os.stat(path).st_size, sha]
        redactor = self.session.redactor()
        for name, found in self.fresh_files.items():
            self.files[name]["findings"] = [finding_to_json(f) for f in redactor.findings(found)]
        for key, found in self.fresh_units.items():
            self.units[key][1] = [finding_to_json(f) for f in redactor.findings(found)]
        extra = [[path, size, sha] for path, (size, sha) in self.extra.items()]
        cache.write_entry(KIND, self.key, {"files": self.files, "units": self.units, "extra": extra})
