"""`set` and `unset`: one key of a layer file changed, every other byte of the file left as it was.

The file is edited through tomlkit, which keeps comments, blank lines, ordering and quoting. A replaced value
keeps its line's comment and, for a string, its quoting style where the new value can be written in it. A key
in a table the file does not have yet goes into a new `[table]` after the last table of its parent (or at the
end of the file), where a person would put it. KEY is a TOML key (`serve.max_num_seqs`,
`roles.prefill.serve.port`, `env."A.B"`); VALUE is a TOML value, and a bare word that is not one is a string.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomli
import tomlkit
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.items import AoT, InlineTable, Item, String, Table

from profilekit.compose.names import reference_findings
from profilekit.errors import Finding, FindingsError, UsageError
from profilekit.load.layers import load_layer
from profilekit.output import replace_file
from profilekit.rules.options import layer_option_findings
from profilekit.tomlio.positions import parse_key

if TYPE_CHECKING:
    from profilekit.load.layers import Layer
    from profilekit.session import Session

KeyPath = tuple[str, ...]
# What tomlkit hands back for a table: a `[table]`, `{ inline }`, the document, or the keys of a table written
# in several places (`a.x = 1` and `a.y = 2` lines, or `[a]` after `[a.b]`).
_TABLES = (Table, InlineTable, Container, OutOfOrderTableProxy)


def key_argument(text: str) -> KeyPath:
    """The KEY of `set`/`unset` (`serve.max_num_seqs`, `env."A.B"`) as a key path, read as `[layer] unset` entries are
    (tomlio.positions.parse_key, TOML's dotted-key syntax); a usage error when it is not one key."""
    try:
        return parse_key(text)
    except ValueError:
        raise UsageError(
            f"{text!r} is not a TOML key", hint="write a dotted key such as serve.max_num_seqs or env.MY_VAR"
        ) from None


def parse_value(text: str) -> Any:
    """VALUE as TOML (`64`, `32.5`, `true`, `"x"`, `[1, 2]`, `{ a = 1 }`); anything else is the string itself."""
    try:
        return tomli.loads(f"v = {text}")["v"]
    except tomli.TOMLDecodeError:
        return text


def set_key(text: str, path: KeyPath, value: Any) -> str:
    """`text` with `path` set to `value`; a missing table on the way is created."""
    doc = tomlkit.parse(text)
    container: Any = doc
    for depth, part in enumerate(path[:-1]):
        if part not in container:
            container = _new_table(container, path[: depth + 1], holds_key=depth == len(path) - 2)
            continue
        container = container[part]
        _require_table(container, path[: depth + 1])
    last = path[-1]
    old = container.get(last) if isinstance(container, _TABLES) else None
    if isinstance(old, (Table, AoT)) or (isinstance(old, InlineTable) and not isinstance(value, dict)):
        raise UsageError(
            f"{'.'.join(path)} is a table in this file, not a value",
            hint="set one of its keys, e.g. " + ".".join((*path, "KEY")),
        )
    container[last] = _like(old, value)
    return doc.as_string()


def unset_key(text: str, path: KeyPath) -> str:
    """`text` without `path`; a key the file does not have is a usage error naming the keys it has there."""
    doc = tomlkit.parse(text)
    container: Any = doc
    for depth, part in enumerate(path[:-1]):
        if part not in container:
            _absent(container, path, depth)
        container = container[part]
        _require_table(container, path[: depth + 1])
    if path[-1] not in container:
        _absent(container, path, len(path) - 1)
    del container[path[-1]]
    return doc.as_string()


def _absent(container: Any, path: KeyPath, depth: int) -> None:
    where = ".".join(path[:depth]) or "the top level"
    keys = [str(k) for k in container]
    close = difflib.get_close_matches(path[depth], keys, n=1)
    hint = (
        f"did you mean {'.'.join((*path[:depth], close[0]))!r}?"
        if close
        else f"keys at {where}: {', '.join(keys)}"
        if keys
        else f"nothing is written at {where}"
    )
    raise UsageError(f"the layer file has no {'.'.join(path[: depth + 1])}", hint=hint)


def _require_table(item: Any, path: KeyPath) -> None:
    if isinstance(item, AoT):
        raise UsageError(
            f"{'.'.join(path)} is an array of tables in this file: set and unset do not reach inside it",
            hint="edit that entry of the file by hand",
        )
    if not isinstance(item, _TABLES):
        raise UsageError(
            f"{'.'.join(path)} is a value in this file, not a table",
            hint=f"set {'.'.join(path)} itself, or unset it first",
        )


def _new_table(container: Any, path: KeyPath, *, holds_key: bool) -> Any:
    """A new table at `path` inside `container`: `[path]` after its parent's last table (a table on the way to it
    gets no header of its own: `[roles.prefill.serve]`, not `[roles]` `[roles.prefill]` too), or `{}` inside an
    inline table."""
    if isinstance(container, InlineTable):
        container[path[-1]] = tomlkit.inline_table()
    else:
        container.append(path[-1], tomlkit.table(is_super_table=not holds_key))
    return container[path[-1]]


def _like(old: Any, value: Any) -> Item:
    """`value` as a tomlkit item written the way `old` was: its comment, and a literal string stays literal."""
    if isinstance(old, String) and isinstance(value, str) and old.type.is_literal() and _literal_ok(value):
        new: Item = tomlkit.string(value, literal=True, multiline=old.type.is_multiline() and "\n" in value)
    else:
        new = tomlkit.item(value)
    if isinstance(old, Item) and not isinstance(old, (Table, AoT)):
        new.trivia.indent = old.trivia.indent
        new.trivia.comment_ws = old.trivia.comment_ws
        new.trivia.comment = old.trivia.comment
        new.trivia.trail = old.trivia.trail
    return new


def _literal_ok(value: str) -> bool:
    return "'" not in value and "\n" not in value and value.isprintable()


# ---- a layer of a repository edited, checked before it is written


def edit_layer(
    session: Session, layer: str, change: Callable[[str], str], *, stacks: list[str]
) -> tuple[Path, str, list[Finding]]:
    """The layer's file, its edited text, and the errors the edit would bring (none: the caller may write it).

    The edited file is judged as lint judges a file (syntax, schema, options of the target release, names it
    refers to); with `stacks`, each is composed with the edited layer and checked. Errors the file or a stack
    had before the edit do not count against it: an edit may fix one problem of several.
    """
    name = _layer_name(session, layer)
    path = session.layers.files[name]
    before, problems = session.layers.get(name)
    if before is None:
        raise FindingsError(problems)  # a file that does not parse cannot be edited key by key
    text = before.toml.text
    edited = change(text)
    after, found = _judge(session, name, path, edited)
    new = _new_errors(_file_findings(session, before, []), found)
    if after is not None and not new:
        new = _stack_errors(session, name, before, after, stacks)
    return path, edited, new


def write_layer_text(path: Path, text: str) -> None:
    """Replace the file whole (a crash leaves the old one), through a symlink to the file it names, keeping its mode."""
    target = Path(os.path.realpath(path))
    replace_file(target, text, mode=target.stat().st_mode & 0o7777)


def _layer_name(session: Session, layer: str) -> str:
    names = session.layers.parse_stack(layer)  # a name or a layer file, with a did-you-mean
    if len(names) != 1:
        raise UsageError(f"{layer!r} names {len(names)} layers: set and unset edit one", hint=f"e.g. {names[0]}")
    source = session.layers.origins.get(names[0])
    if source is not None:
        raise UsageError(
            f"layer {names[0]!r} is a layer of source {source.name!r} ({source.label}): sources are read-only here",
            hint=f"change it in {source.git} and `profilekit update {source.name}`, or set the key in a layer "
            "of this repository that extends it",
        )
    return names[0]


def _judge(session: Session, name: str, path: Path, text: str) -> tuple[Layer | None, list[Finding]]:
    """The edited text loaded as the layer `name`, in a scratch copy: findings name the real file and line."""
    relative = path.relative_to(session.root)
    with tempfile.TemporaryDirectory(prefix="profilekit-edit.") as scratch:
        copy = Path(scratch) / relative
        copy.parent.mkdir(parents=True)
        copy.write_text(text, encoding="utf-8")
        layer, problems = load_layer(Path(scratch), name, copy, session.catalogue)
    return layer, _file_findings(session, layer, problems)


def _file_findings(session: Session, layer: Layer | None, problems: list[Finding]) -> list[Finding]:
    found = list(problems)
    if layer is not None:
        found += reference_findings(session.layers, layer)
        if session.catalogue is not None:
            found += layer_option_findings(layer, session.catalogue)
    return found


def _new_errors(before: list[Finding], after: list[Finding]) -> list[Finding]:
    def what(f: Finding) -> tuple[str, str | None, str | None, tuple[str, ...]]:
        return f.rule, f.stack, f.role, tuple(loc.key for loc in f.locations)

    known = {what(f) for f in before if f.is_error}
    return [f for f in after if f.is_error and what(f) not in known]


def _stack_errors(session: Session, name: str, before: Layer, after: Layer, stacks: list[str]) -> list[Finding]:
    new: list[Finding] = []
    for spec in stacks:
        old_found = _stack_findings(session, spec)
        session.layers.use(name, after)
        try:
            new += _new_errors(old_found, _stack_findings(session, spec))
        finally:
            session.layers.use(name, before)
    return new


def _stack_findings(session: Session, spec: str) -> list[Finding]:
    try:
        stack = session.stack(spec)
    except FindingsError as exc:
        return exc.findings
    return session.check(stack)
