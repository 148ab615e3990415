"""`profilekit diff STACK_A STACK_B`: what changes, key by key and in the rendered command line and env.

Per role: every effective key added, removed or changed, with both values and both origins (the provenance
`explain` shows); roles present on one side only (all their keys added or removed); and the change in what
`render` would write: the argv of `vllm serve` (or the role's command), one option and its values per line,
and the exported env, where a secret is a reference to the launching environment, never a value.
"""

from __future__ import annotations

import difflib
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal

from profilekit.compose.model import UNSET
from profilekit.records import record
from profilekit.render.context import role_argv
from profilekit.tomlio.positions import format_key

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig, Stack
    from profilekit.errors import Location
    from profilekit.tomlio.positions import Path as KeyPath
    from profilekit.vllm.catalogue import Catalogue

Change = Literal["added", "removed", "changed"]
Presence = Literal["both", "a", "b"]


@record(frozen=True, slots=True)
class Side:
    """One side's value of a key: set at `origin`, or removed by the `unset` at `origin` (`unset`)."""

    value: Any
    origin: Location
    unset: bool = False


@record(frozen=True, slots=True)
class KeyChange:
    key: str  # the effective key: serve.port, env.HF_TOKEN, model.architecture, command
    change: Change
    a: Side | None
    b: Side | None


@record(frozen=True, slots=True)
class LineChange:
    """One line of the rendered command line (an option and its values) or env, removed (-) or added (+)."""

    op: Literal["-", "+"]
    words: tuple[str, ...]  # argv words; for env: (NAME, value), or (NAME,) for a secret


@record(slots=True)
class RoleDiff:
    role: str
    presence: Presence
    keys: list[KeyChange] = field(default_factory=list)
    command_line: list[LineChange] = field(default_factory=list)
    env: list[LineChange] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return self.presence == "both" and not (self.keys or self.command_line or self.env)


@record(slots=True)
class StackDiff:
    a: Stack
    b: Stack
    version: str
    roles: list[RoleDiff]

    @property
    def equal(self) -> bool:
        return all(r.equal for r in self.roles)

    @property
    def changed(self) -> list[RoleDiff]:
        return [r for r in self.roles if not r.equal]


def diff_stacks(a: Stack, b: Stack, *, version: str, catalogue: Catalogue | None, roles: list[str]) -> StackDiff:
    """The differences between two stacks composed for one release, for `roles` (in that order)."""
    out = [diff_role(name, a.roles.get(name), b.roles.get(name), catalogue, catalogue) for name in roles]
    return StackDiff(a, b, version, out)


def role_union(a: Stack, b: Stack) -> list[str]:
    """The roles of both stacks: A's in order, then those only B has."""
    return [*a.roles, *(name for name in b.roles if name not in a.roles)]


def diff_role(
    name: str, a: RoleConfig | None, b: RoleConfig | None, cat_a: Catalogue | None, cat_b: Catalogue | None
) -> RoleDiff:
    """One role's key, command-line and env changes; a role missing on one side counts as empty there."""
    presence: Presence = "both" if a is not None and b is not None else ("a" if a is not None else "b")
    return RoleDiff(
        name,
        presence,
        key_changes(a, b),
        line_changes(command_lines(a, cat_a), command_lines(b, cat_b)),
        line_changes(env_lines(a), env_lines(b)),
    )


def _order(path: KeyPath) -> tuple[int, tuple[str, ...]]:
    rank = {"model": 0, "serve": 1, "command": 1, "env": 2}
    return rank.get(str(path[0]), 3), tuple(str(p) for p in path)


def _sides(role: RoleConfig | None) -> dict[KeyPath, Side]:
    """A role's effective leaves and the leaves an `unset` removed, by effective key.

    An env secret is one value, `{"secret": true}`, as `show` prints it (the scope holds its `secret` leaf).
    """
    if role is None:
        return {}
    out: dict[KeyPath, Side] = {}
    for path, entry in role.scope.removed.items():
        if entry.value is UNSET:
            out[_key(path)] = Side(None, entry.origin, unset=True)
    for path, entry in role.scope.entries.items():
        secret = path[0] == "env" and len(path) == 3
        out[_key(path)] = Side({"secret": True} if secret else entry.value, entry.origin)
    return out


def _key(path: KeyPath) -> KeyPath:
    return path[:2] if path[0] == "env" else path


def key_changes(a: RoleConfig | None, b: RoleConfig | None) -> list[KeyChange]:
    """Every effective leaf key whose value differs (a key present on one side only is added or removed)."""
    sides_a, sides_b = _sides(a), _sides(b)
    out: list[KeyChange] = []
    for path in sorted({*sides_a, *sides_b}, key=_order):
        side_a, side_b = sides_a.get(path), sides_b.get(path)
        set_a = side_a is not None and not side_a.unset
        set_b = side_b is not None and not side_b.unset
        if not (set_a or set_b):
            continue
        if set_a and set_b:
            assert side_a is not None and side_b is not None
            if _same(side_a.value, side_b.value):
                continue
            change: Change = "changed"
        else:
            change = "removed" if set_a else "added"
        out.append(KeyChange(format_key(path), change, side_a, side_b))
    return out


def _same(x: Any, y: Any) -> bool:
    """Equal as TOML values: `1` and `1.0`, `true` and `1` are different values."""
    return type(x) is type(y) and x == y


def command_lines(role: RoleConfig | None, catalogue: Catalogue | None) -> list[tuple[str, ...]]:
    """The rendered command, one line per option and its values (the first line: the program and positionals)."""
    if role is None:
        return []

    lines: list[list[str]] = [[]]
    for index, word in enumerate(role_argv(role, catalogue)):
        if word.startswith("-") and index > 0 and lines[-1]:
            lines.append([])
        lines[-1].append(word)
    return [tuple(line) for line in lines if line]


def env_lines(role: RoleConfig | None) -> list[tuple[str, ...]]:
    """The exported env: (NAME, value), or (NAME,) for a secret taken from the launching environment."""
    if role is None:
        return []
    return [(name,) if isinstance(value, dict) else (name, str(value)) for name, value in role.env.items()]


def line_changes(a: list[tuple[str, ...]], b: list[tuple[str, ...]]) -> list[LineChange]:
    """Lines only in `a` (-) and only in `b` (+), in order, as a line diff pairs them."""
    out: list[LineChange] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        out += [LineChange("-", line) for line in a[i1:i2]]
        out += [LineChange("+", line) for line in b[j1:j2]]
    return out
