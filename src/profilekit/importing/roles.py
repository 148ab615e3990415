"""One layer for several processes imported together (a manifest's containers, a P/D set of scripts).

Each process is a role: a `vllm` role with its `serve` values and `env`, or a `command` role (a router, a proxy,
a sidecar) with its words. What every vLLM role has alike (key and value) is written once in the layer's
`[serve]`, what every role has alike in its `[env]`; the rest stays with its role (docs/ROLES.md: the layer's
tables apply to every role it declares). A command role's URL or `host:port` that names a vLLM role's port,
or a port it gives a `--*port*` option, becomes a reference to it (`${roles.prefill.serve.port}`), so the router
follows the role when a layer moves it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import field
from typing import Any

import tomlkit

from profilekit.compose.references import escape
from profilekit.load.layerdata import ROLE_NAME
from profilekit.quoting import comment_text
from profilekit.records import record

_NOT_ROLE = re.compile(r"[^a-z0-9_.-]+")
_PORT_IN_WORD = re.compile(r"(?<=:)(\d{2,5})(?=$|/)")


@record(slots=True)
class ImportedRole:
    """One process of an import, as a role of the layer."""

    name: str
    serve: dict[str, Any] = field(default_factory=dict)  # a vLLM role's options
    env: dict[str, Any] = field(default_factory=dict)
    command: list[str] | None = None  # a command role's words
    launchers: list[str] = field(default_factory=list)

    @property
    def is_vllm(self) -> bool:
        return self.command is None


def role_name(text: str, taken: set[str]) -> str:
    """`text` (a container, service or script name) as a role name no other role of the import has."""
    base = _NOT_ROLE.sub("-", text.lower()).strip("-._") or "serve"
    if not re.fullmatch(ROLE_NAME, base):
        base = "r-" + base
    name, number = base, 2
    while name in taken:
        name, number = f"{base}-{number}", number + 1
    taken.add(name)
    return name


def _shared(tables: list[dict[str, Any]]) -> dict[str, Any]:
    """The keys every table has with the same value (in the first table's order)."""
    if len(tables) < 2:
        return {}
    return {key: value for key, value in tables[0].items() if all(key in t and t[key] == value for t in tables[1:])}


def _referenced(words: list[str], ports: dict[int, str]) -> list[str]:
    """A command's words with each `:PORT` of a vLLM role's port, and each port given to a `--*port*` option
    (`--prefiller-ports 8100`), made a reference to it."""

    def one(match: re.Match[str]) -> str:
        port = int(match.group(1))
        return _reference(ports[port]) if port in ports else match.group(0)

    out: list[str] = []
    for index, word in enumerate(words):
        option = words[index - 1] if index else ""
        if word.isdigit() and int(word) in ports and option.startswith("--") and "port" in option:
            out.append(_reference(ports[int(word)]))
        else:
            out.append(_PORT_IN_WORD.sub(one, escape(word)))
    return out


def _reference(role: str) -> str:
    return "${roles." + role + ".serve.port}"


def roles_layer_text(roles: list[ImportedRole], *, description: str, version: str) -> str:
    """The layer that declares every role, shared values once, as a person would write it."""
    vllm = [role for role in roles if role.is_vllm]
    serve = _shared([role.serve for role in vllm])
    env = _shared([role.env for role in roles])
    ports = {p: role.name for role in vllm if isinstance(p := role.serve.get("port"), int)}
    if len(set(ports.values())) != len(ports):
        ports = {}
    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Imported with `profilekit import` for vLLM {version}."))
    for role in roles:
        for launcher in role.launchers:
            doc.add(tomlkit.comment(f"{role.name} ran behind `{comment_text(launcher)}`, which a layer does not hold."))
    doc["layer"] = {"description": description}
    if serve:
        doc["serve"] = toml_table(escape(serve))
    if env:
        doc["env"] = toml_table(escape(env))
    tables = tomlkit.table(is_super_table=True)
    for role in roles:
        table = tomlkit.table()
        table["kind"] = "vllm" if role.is_vllm else "command"
        if role.command is not None:
            table["command"] = toml_item(_referenced(role.command, ports))
        own_serve = {k: v for k, v in role.serve.items() if k not in serve}
        own_env = {k: v for k, v in role.env.items() if k not in env}
        if own_serve:
            table["serve"] = toml_table(escape(own_serve))
        if own_env:
            table["env"] = toml_table(escape(own_env))
        tables[role.name] = table
    doc["roles"] = tables
    text = tomlkit.dumps(doc)
    _reads_back(text, roles)
    return text


def _reads_back(text: str, roles: list[ImportedRole]) -> None:
    back = tomllib.loads(text)
    for role in roles:
        table = back["roles"][role.name]
        if role.is_vllm and {**back.get("serve", {}), **table.get("serve", {})} != escape(role.serve):
            raise RuntimeError(f"the imported role {role.name} does not read back as its values")  # pragma: no cover
        if {**back.get("env", {}), **table.get("env", {})} != escape(role.env):
            raise RuntimeError(f"the imported role {role.name}'s env does not read back")  # pragma: no cover


def toml_table(values: dict[str, Any]) -> Any:
    """A table as a person writes it: plain values first, then each sub-table (a secret stays inline)."""
    table = tomlkit.table()
    for key, value in values.items():
        if not (isinstance(value, dict) and value and "secret" not in value):
            table[key] = toml_item(value)
    for key, value in values.items():
        if isinstance(value, dict) and value and "secret" not in value:
            table[key] = toml_table(value)
    return table


def toml_item(value: Any) -> Any:
    """A value as tomlkit writes it inline: tables inline, long arrays over several lines."""
    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        for key, inner in value.items():
            inline[key] = toml_item(inner)
        return inline
    if isinstance(value, list):
        array = tomlkit.array()
        for inner in value:
            array.append(toml_item(inner))
        if len(array.as_string()) > 80:
            array.multiline(True)
        return array
    return value
