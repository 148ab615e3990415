"""The wiring between roles: every loopback address a role uses to reach another must reach something.

A role reaches another role of the stack through a loopback address, in one of these forms (docs/ROLES.md,
"Wiring"):

- a URL or `host:port` in a command word or an env value (`http://127.0.0.1:8100`, vllm-router's
  `--prefill URL` / `--decode URL`, `localhost:8200`);
- separate host and port options: any `--X-host`/`--X-port` pair of one command (vLLM's P/D proxy examples:
  `--prefiller-host 127.0.0.1 --prefiller-port 8100`, `--decoder-host`/`--decoder-port`; the plural
  `--prefiller-hosts`/`--prefiller-ports` take several values, matched in order).

The ports that listen are those `rules/host.py` knows each role binds (a vLLM role's `serve.port`, a NIXL role's
side-channel ports, a command's `--port`) and the local services outside the stack that profilekit.toml names in
`[services]`. `dangling-endpoint` is an error where the option's meaning is known (a proxy's prefill or decode
endpoint: something must answer) and a warning elsewhere (a loopback address may be a service the repository has
not named). `endpoint-role-mismatch`: a prefill endpoint must reach the HTTP port of a role that prefills
(`kv_role` kv_producer or kv_both), a decode endpoint one that decodes (kv_consumer or kv_both).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal

from profilekit.errors import Location, Severity
from profilekit.records import record
from profilekit.rules.engine import Context, Hit, stack_rule
from profilekit.rules.host import Bind, binds
from profilekit.rules.pd import pd_connector

if TYPE_CHECKING:
    from profilekit.compose.model import RoleConfig, Stack

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
# a loopback host and a port inside a word: a URL (`http://127.0.0.1:8100/v1`) or `host:port`
LOOPBACK_PORT = re.compile(r"(?<![\w.\-])(127\.0\.0\.1|localhost|\[::1\]):(\d{1,5})(?!\d)")
_PAIR_OPTION = re.compile(r"^--(?P<prefix>[A-Za-z0-9][\w-]*?)[-_](?P<part>host|hosts|port|ports)$")
Meaning = Literal["prefill", "decode"]
Form = Literal["url", "pair"]


def meaning_of(option: str) -> Meaning | None:
    """What an option's endpoint is for, from its name: `--prefill`, `--prefiller-host` -> prefill."""
    name = option.lower()
    if "prefill" in name:
        return "prefill"
    if "decod" in name:
        return "decode"
    return None


@record(frozen=True, slots=True)
class Endpoint:
    """One loopback address a role's command or env uses: where it is, what it names, and what it is for."""

    host: str  # as written: 127.0.0.1, localhost, [::1]
    port: int
    option: str  # how messages name it: `--decode`, `--prefiller-host/--prefiller-port`, `env DECODE_URL`
    meaning: Meaning | None
    form: Form  # url: host:port inside one word; pair: a host word and a port word
    host_at: int  # the index of the word that holds the host (command), -1 in env
    port_at: int  # the index of the word that holds the port
    env: str = ""  # the env variable whose value holds it
    offset: int = 0  # where the host starts in its word or env value (a pair's host is its whole word)


def _option_values(words: list[str], index: int) -> tuple[str, list[tuple[int, str]]] | None:
    """`--name V`, `--name=V` or `--names V1 V2 ...` at `index`: the option and its values with their indices."""
    word = words[index]
    if not word.startswith("--"):
        return None
    if "=" in word:
        name, _, value = word.partition("=")
        return name, [(index, value)]
    values: list[tuple[int, str]] = []
    plural = word.endswith("s")
    for at in range(index + 1, len(words)):
        if words[at].startswith("--") or (values and not plural):
            break
        values.append((at, words[at]))
    return word, values


def _pairs(words: list[str]) -> Iterator[Endpoint]:
    """Every `--X-host H --X-port P` of one command whose host is loopback (hosts and ports paired in order)."""
    parts: dict[str, dict[str, tuple[str, list[tuple[int, str]]]]] = {}
    for index in range(len(words)):
        found = _option_values(words, index)
        if found is None:
            continue
        option, values = found
        match = _PAIR_OPTION.match(option)
        if match is None or not values:
            continue
        part = "host" if match["part"].startswith("host") else "port"
        parts.setdefault(match["prefix"], {})[part] = (option, values)
    for both in parts.values():
        if "host" not in both or "port" not in both:
            continue
        (host_option, hosts), (port_option, ports) = both["host"], both["port"]
        if len(hosts) == 1 and len(ports) > 1:
            hosts = hosts * len(ports)  # one host for several ports
        for (host_at, host), (port_at, port) in zip(hosts, ports, strict=False):
            if host in LOOPBACK_HOSTS and port.isdigit():
                yield Endpoint(
                    host, int(port), f"{host_option}/{port_option}", meaning_of(host_option), "pair", host_at, port_at
                )


def _urls(words: list[str]) -> Iterator[Endpoint]:
    """Every loopback `host:port` inside a word; its option is the one it is the value of."""
    for index, word in enumerate(words):
        for match in LOOPBACK_PORT.finditer(word):
            if word.startswith("--") and "=" in word:
                option = word.partition("=")[0]
            elif index > 0 and words[index - 1].startswith("--") and "=" not in words[index - 1]:
                option = words[index - 1]
            else:
                option = ""
            yield Endpoint(
                match[1], int(match[2]), option, meaning_of(option), "url", index, index, offset=match.start(1)
            )


def command_endpoints(words: list[str]) -> list[Endpoint]:
    """The loopback endpoints of a command's words, in the order they are written."""
    found = [*_urls(words), *_pairs(words)]
    return sorted(found, key=lambda e: (e.host_at, e.port_at))


def env_endpoints(env: Mapping[str, object]) -> list[Endpoint]:
    """The loopback `host:port` addresses in a role's env values (a secret's value is never read)."""
    found: list[Endpoint] = []
    for name, value in env.items():
        if isinstance(value, str):
            for match in LOOPBACK_PORT.finditer(value):
                found.append(
                    Endpoint(
                        match[1],
                        int(match[2]),
                        f"env {name}",
                        meaning_of(name),
                        "url",
                        -1,
                        -1,
                        env=name,
                        offset=match.start(1),
                    )
                )
    return found


def role_endpoints(role: RoleConfig) -> list[Endpoint]:
    return [*command_endpoints(role.command or []), *env_endpoints(role.env)]


# ---- what listens ------------------------------------------------------------------------------------------


@record(frozen=True, slots=True)
class Listener:
    """A port something of the deployment listens on: a role's bind, or a `[services]` entry."""

    port: int
    what: str  # `role decode (HTTP)`, `role prefill (NIXL side channel)`, `service mooncake-master`
    bind: Bind | None  # None: a service outside the stack


def listeners(ctx: Context) -> dict[int, list[Listener]]:
    by_port: dict[int, list[Listener]] = {}
    for bind in binds(ctx):
        what = "HTTP" if not bind.side_channel else "NIXL side channel"
        for port in bind.ports:
            by_port.setdefault(port, []).append(Listener(port, f"role {bind.role.name} ({what})", bind))
    for name, port in ctx.services.items():
        by_port.setdefault(port, []).append(Listener(port, f"service {name}", None))
    return by_port


def _listening(by_port: dict[int, list[Listener]]) -> str:
    shown = [f"{port} {', '.join(item.what for item in items)}" for port, items in sorted(by_port.items())]
    return "; ".join(shown) if shown else "none"


# ---- the rules --------------------------------------------------------------------------------------------


def written_at(stack: Stack, role: RoleConfig, endpoint: Endpoint) -> Location:
    """Where the endpoint is written: the command word that holds its port, or its env entry."""
    if endpoint.env:
        entry = role.entry("env", endpoint.env)
        return entry.origin if entry is not None else Location("", 0, 0)
    entry = role.entry("command")
    if entry is None:
        return Location("", 0, 0)
    return stack.item_location(entry.origin, endpoint.port_at)


def written(role: RoleConfig, endpoint: Endpoint) -> str:
    """The endpoint as the user wrote it (resolved): `--decode http://127.0.0.1:9999`, `DECODE_URL=...`."""
    if endpoint.env:
        return f"{endpoint.env}={role.env[endpoint.env]}"
    if endpoint.form == "pair":
        host_option, port_option = endpoint.option.split("/")
        return f"{host_option} {endpoint.host} {port_option} {endpoint.port}"
    word = (role.command or [])[endpoint.host_at]
    return f"{endpoint.option} {word}" if endpoint.option and not word.startswith("--") else word


def _fits(ctx: Context, role: RoleConfig, meaning: Meaning) -> bool:
    facts = ctx.facts.get(role.name)
    connector = pd_connector(facts) if facts is not None else None
    wanted = ("kv_producer", "kv_both") if meaning == "prefill" else ("kv_consumer", "kv_both")
    return connector is not None and connector.role in wanted


def _unjudged(ctx: Context, role: RoleConfig) -> bool:
    facts = ctx.facts.get(role.name)
    return role.is_vllm and (facts is None or pd_connector(facts) is None)


def _suggested(ctx: Context, asker: RoleConfig, meaning: Meaning | None) -> str:
    """A reference to the HTTP port of the role the endpoint is meant for: the fix the issue asks to suggest."""
    candidates = [
        r
        for r in ctx.stack.roles.values()
        if r is not asker and r.is_vllm and (meaning is None or _fits(ctx, r, meaning))
    ]
    if len(candidates) == 1:
        return f"${{roles.{candidates[0].name}.serve.port}}"
    return ""


@stack_rule(
    "dangling-endpoint",
    Severity.ERROR,
    "a role's command or env reaches a loopback port no role of the stack listens on (an error for a proxy's "
    "prefill/decode endpoint, a warning for other addresses; `[services]` in profilekit.toml names local services)",
    source="the proxy's request to a closed port fails (ECONNREFUSED); docs/ROLES.md, Wiring",
)
def dangling_endpoint(ctx: Context) -> Iterable[Hit]:
    by_port = listeners(ctx)
    hits: list[Hit] = []
    for role in ctx.stack.roles.values():
        for endpoint in role_endpoints(role):
            if endpoint.port in by_port:
                continue
            reference = _suggested(ctx, role, endpoint.meaning)
            target = (
                f"write the port of the role it is meant for as a reference, such as {reference}"
                if reference
                else ("write the port of the role it is meant for as a reference (${roles.NAME.serve.port})")
            )
            known = endpoint.meaning is not None
            fix = (
                target
                if known
                else f"{target}, or name the local service in profilekit.toml: [services] NAME = {endpoint.port}"
            )
            what = f"its {endpoint.meaning} endpoint" if known else "an address"
            hits.append(
                Hit(
                    "dangling-endpoint",
                    f"role {role.name} reaches {what} {written(role, endpoint)}, but nothing of the stack listens on "
                    f"port {endpoint.port} (listening: {_listening(by_port)})",
                    [written_at(ctx.stack, role, endpoint)],
                    fix,
                    role=role.name,
                    severity=None if known else Severity.WARNING,
                )
            )
    return hits


@stack_rule(
    "endpoint-role-mismatch",
    Severity.ERROR,
    "a proxy's prefill endpoint reaches a role that does not prefill (kv_role kv_producer or kv_both), or its decode "
    "endpoint one that does not decode (kv_consumer or kv_both), or a port that is not a role's HTTP server",
    source="vLLM's P/D proxies send prefill requests to producers and decode requests to consumers; docs/ROLES.md",
)
def endpoint_role_mismatch(ctx: Context) -> Iterable[Hit]:
    by_port = listeners(ctx)
    hits: list[Hit] = []
    for role in ctx.stack.roles.values():
        for endpoint in role_endpoints(role):
            if endpoint.meaning is None or endpoint.port not in by_port:
                continue
            reached = [item for item in by_port[endpoint.port] if item.bind is None or item.bind.role is not role]
            http = [item.bind.role for item in reached if item.bind is not None and not item.bind.side_channel]
            # a vLLM role without a KV connector has no kv_role to judge (kv-connector-missing speaks of it)
            if not reached or any(_fits(ctx, other, endpoint.meaning) or _unjudged(ctx, other) for other in http):
                continue
            what = ", ".join(item.what for item in reached)
            side = "prefills" if endpoint.meaning == "prefill" else "decodes"
            reference = _suggested(ctx, role, endpoint.meaning)
            fix = (
                f"point it at the role that {side}: {reference}"
                if reference
                else f"point it at the HTTP port of a role that {side}"
            )
            locations = [written_at(ctx.stack, role, endpoint)]
            for item in reached:
                if item.bind is not None:
                    locations += item.bind.locations
            hits.append(
                Hit(
                    "endpoint-role-mismatch",
                    f"role {role.name} sends its {endpoint.meaning} requests to {written(role, endpoint)}, which is "
                    f"{what}, not a role that {side}",
                    locations,
                    fix,
                    role=role.name,
                )
            )
    return hits
