"""References between values (DESIGN 5.4a): `${serve.KEY}`, `${roles.R.serve.KEY}`, `${env.NAME}`, `${model.KEY}`.

A string in `serve`, `env` or `command` may name another effective value of the stack. References resolve after
composition and before the checks, so the rules (and the rendered files) see resolved values, and a layer that
changes a port changes every value that names it. `${KEY}` names a value of the role holding the string,
`${roles.R.serve.KEY}` one of role R; `$${` writes a literal `${`. A `serve` string that is one reference and
nothing else takes the referenced value with its type (`port = "${roles.prefill.serve.port}"` is the integer);
anywhere else the value is written into the string. A secret is never resolved: its value exists only in the
launching environment, and argv or an env file would expose it.
"""

from __future__ import annotations

import difflib
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from profilekit.compose.model import SCOPES, Part, Resolution, item_location
from profilekit.errors import Finding, Location, Severity
from profilekit.records import record
from profilekit.tomlio.positions import format_key, parse_key

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig
    from profilekit.load.layers import Layer
    from profilekit.tomlio.positions import Path as KeyPath

OPEN = "${"
ESCAPE = "$${"
_FORMS = "serve.KEY, env.NAME, model.KEY or roles.ROLE.serve.KEY"
_LITERAL = f"write {ESCAPE} for a literal {OPEN}"


@record(frozen=True, slots=True)
class _Ref:
    text: str  # "${serve.port}"
    name: str  # "serve.port"


class _Malformed(ValueError):
    pass


def has_references(value: Any) -> bool:
    """Whether a written value holds `${` anywhere (a reference, or an escaped `$${`)."""
    if isinstance(value, str):
        return OPEN in value
    if isinstance(value, list):
        return any(has_references(item) for item in value)
    if isinstance(value, dict):
        return any(has_references(item) for item in value.values())
    return False


def escape(value: Any) -> Any:
    """A literal value as a layer writes it: every `${` becomes `$${`, so that it reads back as itself."""
    if isinstance(value, str):
        return value.replace(OPEN, ESCAPE)
    if isinstance(value, list):
        return [escape(item) for item in value]
    if isinstance(value, dict):
        return {key: escape(item) for key, item in value.items()}
    return value


def _split(text: str) -> list[str | _Ref]:
    """A string as literal text and references; `$${` is a literal `${`."""
    out: list[str | _Ref] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith(ESCAPE, i):
            literal.append(OPEN)
            i += len(ESCAPE)
        elif text.startswith(OPEN, i):
            end = text.find("}", i + len(OPEN))
            if end < 0:
                raise _Malformed(f"{text[i:]!r} has no closing '}}'")
            if literal:
                out.append("".join(literal))
                literal = []
            out.append(_Ref(text[i : end + 1], text[i + len(OPEN) : end].strip()))
            i = end + 1
        else:
            literal.append(text[i])
            i += 1
    if literal:
        out.append("".join(literal))
    return out


def _text(value: Any) -> str:
    """A scalar as it reads inside a string: TOML's spelling of booleans, numbers as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


Node = tuple[str, "KeyPath"]  # (role, effective path)
_FAILED: Any = object()


@record(slots=True)
class _Resolver:
    roles: dict[str, RoleConfig]
    layers: list[Layer]  # the stack's, in merge order
    results: dict[Node, Any] = field(default_factory=dict)  # resolved value, or _FAILED
    resolutions: dict[Node, Resolution] = field(default_factory=dict)
    active: list[Node] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # the layers by name, listed when a reference first needs one (most stacks hold none: lint composes
    # every layer of a long chain, and listing its layers for each would be quadratic)
    by_name: dict[str, Layer] | None = None

    def value(self, node: Node) -> Any:
        """The resolved value of one effective entry (_FAILED when a reference in it, or below it, failed)."""
        role, path = node
        entry = self.roles[role].scope.entries[path]
        if not has_references(entry.value) or path[0] not in ("serve", "env", "command"):
            return entry.value
        if node in self.results:
            return self.results[node]
        if node in self.active:
            self._cycle(self.active[self.active.index(node) :])
            return _FAILED
        self.active.append(node)
        result = self._resolve(node, entry.value, entry.origin)
        self.active.pop()
        self.results[node] = result
        return result

    def _resolve(self, node: Node, written: Any, origin: Location) -> Any:
        parts: list[Part] = []
        if isinstance(written, str):
            # a serve value that is one reference keeps the referenced value's type; env and argv are text
            value = self._string(node, written, origin, None, parts, typed=node[1][0] == "serve")
        elif isinstance(written, list):
            items = [
                self._string(node, item, origin, index, parts, typed=False) if isinstance(item, str) else item
                for index, item in enumerate(written)
            ]
            value = _FAILED if any(item is _FAILED for item in items) else items
        else:  # a table: a JSON-valued option holds its strings as leaves of their own
            return written
        if value is not _FAILED:
            self.resolutions[node] = Resolution(written, tuple(parts))
        return value

    def _string(
        self, node: Node, text: str, origin: Location, index: int | None, parts: list[Part], *, typed: bool
    ) -> Any:
        where = self._where(origin, index)
        try:
            segments = _split(text)
        except _Malformed as exc:
            self._finding("invalid-reference", f"{where.key}: {exc}", where, f"close the reference, or {_LITERAL}")
            return _FAILED
        failed = False
        values: list[Any] = []
        for segment in segments:
            if isinstance(segment, str):
                values.append(segment)
                continue
            got = self._reference(node, segment, where, whole=typed and len(segments) == 1)
            if got is None:
                failed = True
                continue
            part, value = got
            parts.append(part)
            values.append(value)
        if failed:
            return _FAILED
        if typed and len(segments) == 1 and isinstance(segments[0], _Ref):
            return values[0]
        return "".join(v if isinstance(v, str) else _text(v) for v in values)

    def _reference(self, node: Node, ref: _Ref, where: Location, *, whole: bool) -> tuple[Part, Any] | None:
        """The part and value a reference names; None (with a finding, unless the cause is reported) if none."""
        target = self._target(node, ref, where)
        if target is None:
            return None
        role, path = target
        entry = self.roles[role].scope.entries[path]
        value = self.value(target)
        if value is _FAILED:
            return None  # the value it names failed, and says so itself
        if not whole and isinstance(value, (list, dict)):
            self._finding(
                "invalid-reference",
                f"{where.key}: {ref.text} names an array; only a string, number or boolean can be written into a "
                "string",
                where,
                f'write the whole value as "{ref.text}"'
                if node[1][0] == "serve"
                else "reference one item's source instead, or write the values",
            )
            return None
        return Part(ref.text, role, format_key(path), value, entry.origin), value

    def _target(self, node: Node, ref: _Ref, where: Location) -> Node | None:
        role = node[0]
        try:
            path: KeyPath = parse_key(ref.name)
        except ValueError:
            self._finding(
                "invalid-reference",
                f"{where.key}: {ref.text} is not a reference: a reference is "
                f"{OPEN}serve.KEY}}, {OPEN}env.NAME}}, {OPEN}model.KEY}} or {OPEN}roles.ROLE.serve.KEY}}",
                where,
                _LITERAL,
            )
            return None
        if path[0] == "roles" and len(path) >= 3:
            role, path = str(path[1]), path[2:]
            if role not in self.roles:
                close = difflib.get_close_matches(role, list(self.roles), n=1, cutoff=0.6)
                fix = f"did you mean {OPEN}{format_key(('roles', close[0], *path))}}}?" if close else ""
                why = f"the stack has no role {role!r} (its roles: {', '.join(self.roles)})"
                self._unknown(ref, where, why, fix)
                return None
        if path[0] == "serve" and len(path) >= 2:
            path = ("serve", self._dest(str(path[1])), *path[2:])
        config = self.roles[role]
        if len(path) >= 2 and path[0] in SCOPES and path in config.scope.entries:
            return role, path
        if len(path) == 2 and path[0] == "env" and (*path, "secret") in config.scope.entries:
            self._secret(node, ref, where)  # a secret entry is the table { secret = true }
            return None
        self._missing(node, ref, where, role, path)
        return None

    def _dest(self, key: str) -> str:
        if self.layers:
            return self.layers[0].dest(key)
        return key.replace("-", "_")

    def _missing(self, node: Node, ref: _Ref, where: Location, role: str, path: KeyPath) -> None:
        config = self.roles[role]
        below = [format_key(k) for k in config.scope.entries if k[: len(path)] == path and len(k) > len(path)]
        if below and path[0] in SCOPES:
            self._finding(
                "invalid-reference",
                f"{where.key}: {ref.text} names a table; a reference names one value",
                where,
                f"reference one of its keys: {', '.join(OPEN + k + '}' for k in below[:4])}",
            )
            return
        if path[0] not in SCOPES or len(path) < 2:
            why = f"a reference names {_FORMS}"
        elif path[0] == "serve" and not config.is_vllm:
            why = f"role {role!r} runs a command and has no serve values"
        elif path in config.scope.removed:
            removed = config.scope.removed[path].origin
            why = f"layer {removed.layer!r} unsets {format_key(path)} ({removed})"
        elif any(path in other.scope.entries for other in self.roles.values()):
            why = f"no layer of the stack sets {format_key(path)} for role {role!r}"
        else:
            why = f"no layer of the stack sets {format_key(path)}"
        self._unknown(ref, where, why, self._suggest(node, ref, role, path))

    def _suggest(self, node: Node, ref: _Ref, role: str, path: KeyPath) -> str:
        """A did-you-mean over the values a reference could name from where it is written."""
        if path[:2] == ("model", "name"):
            return f"the model's name is serve.model: write {OPEN}serve.model}}"
        if ref.name.split(".", 1)[0].strip() == "roles":
            return "a value of another role is roles.ROLE.serve.KEY, roles.ROLE.env.NAME or roles.ROLE.model.KEY"
        if str(path[0]) not in SCOPES:
            return f"write {ESCAPE}{ref.name}}} for the literal text {ref.text}"
        own = not ref.name.startswith("roles.")
        # (what the reference would be written as, the key below its scope) for every value it could name
        candidates: list[tuple[str, str]] = []
        for name, config in self.roles.items():
            for key in config.scope.entries:
                if str(key[0]) not in SCOPES:
                    continue
                text = format_key(key) if own and name == node[0] else format_key(("roles", name, *key))
                candidates.append((text, format_key(key[1:])))
        scope = format_key(path[:1]) if own else format_key(("roles", role, *path[:1]))
        same = {rest: text for text, rest in candidates if text == f"{scope}.{rest}"}
        close = [same[c] for c in difflib.get_close_matches(format_key(path[1:]), list(same), n=1, cutoff=0.6)]
        if not close and own:  # `${serve.port}` in a command role: the same key of a vLLM role
            close = [
                text for text, _ in candidates if text.startswith("roles.") and text.endswith("." + format_key(path))
            ]
        return f"did you mean {OPEN}{close[0]}}}?" if close else ""

    def _unknown(self, ref: _Ref, where: Location, why: str, fix: str) -> None:
        self._finding(
            "unknown-reference",
            f"{where.key}: {ref.text} names nothing: {why}",
            where,
            fix or (_LITERAL if _FORMS in why else f"a reference names {_FORMS} of the stack; {_LITERAL}"),
        )

    def _secret(self, node: Node, ref: _Ref, where: Location) -> None:
        name = ref.name.rsplit(".", 1)[-1]
        if node[1][0] == "env":
            self._finding(
                "secret-reference-in-env",
                f"{where.key}: {ref.text} names a secret; resolving it would write the secret's value into the "
                "rendered env file and script",
                where,
                f"declare this variable a secret too ({{ secret = true }}), or let the process read {name} itself",
            )
            return
        self._finding(
            "secret-reference-in-argv",
            f"{where.key}: {ref.text} names a secret; resolving it would put the secret's value on the command "
            "line, where every user of the host can read it (ps, /proc)",
            where,
            f"let the process read {name} from its environment (the rendered script exports it), "
            "or pass a file that holds it",
        )

    def _cycle(self, loop: list[Node]) -> None:
        one_role = len({role for role, _ in loop}) == 1

        def name(node: Node) -> str:
            role, path = node
            return format_key(path) if one_role else format_key(("roles", role, *path))

        chain = " -> ".join(name(n) for n in [*loop, loop[0]])
        origins = list(dict.fromkeys(self.roles[role].scope.entries[path].origin for role, path in loop))
        # a cycle among top-level values is the same in every role: one finding, no role named
        in_roles = any(origin.key.startswith("roles.") for origin in origins)
        role_text = f" (role {loop[0][0]!r})" if one_role and in_roles else ""
        self._finding(
            "reference-cycle",
            f"references form a cycle{role_text}: {chain}",
            origins[0],
            "write a value instead of one of these references",
            others=tuple(origins[1:]),
        )

    def _where(self, origin: Location, index: int | None) -> Location:
        """The location of the string: the value's, or an array item's."""
        if self.by_name is None:
            self.by_name = {layer.name: layer for layer in self.layers}
        layer = self.by_name.get(origin.layer)
        if index is None or layer is None:
            return origin
        return item_location(layer, origin, index)

    def _finding(
        self, rule: str, message: str, where: Location, fix: str, *, others: tuple[Location, ...] = ()
    ) -> None:
        found = Finding(rule, Severity.ERROR, message, [where, *others], fix=fix)
        if found not in self.findings:  # a top-level value is inherited by every role: report it once
            self.findings.append(found)


def resolve_references(roles: dict[str, RoleConfig], layers: list[Layer]) -> list[Finding]:
    """Resolve every reference in the roles' `serve`, `env` and `command` values in place; findings for failures.

    A value whose references fail keeps its written text (the findings are errors: nothing renders).
    """
    resolver = _Resolver(roles, layers)
    for role, config in roles.items():
        for path in list(config.scope.entries):
            resolver.value((role, path))
    for (role, path), resolution in resolver.resolutions.items():
        config = roles[role]
        entry = config.scope.entries[path]
        value = resolver.results[(role, path)]
        config.scope.entries[path] = replace(entry, value=value, resolution=resolution)
        if path == ("command",):
            config.command = list(value)
    return resolver.findings
