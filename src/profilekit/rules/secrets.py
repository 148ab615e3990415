"""`literal-secret`: a token or password written into a layer file. The finding never repeats the value."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from profilekit.errors import Severity
from profilekit.layers import Layer
from profilekit.rules.engine import Context, Hit, stack_rule
from profilekit.tomlpos import Path as KeyPath
from profilekit.tomlpos import format_key

# names whose value is a credential whatever it looks like
_SECRET_NAME = re.compile(
    r"(^|_)(TOKEN|API_KEY|APIKEY|SECRET|SECRET_KEY|ACCESS_KEY|PASSWORD|PASSWD|CREDENTIALS?|PRIVATE_KEY)$",
    re.IGNORECASE,
)
_SECRET_SERVE_KEYS = frozenset({"api_key", "hf_token"})
# values that are credentials whatever they are called
_SECRET_VALUE = re.compile(
    r"\b("
    r"hf_[A-Za-z0-9]{30,}"  # Hugging Face user access token
    r"|sk-[A-Za-z0-9_-]{20,}"  # OpenAI-style API key
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub token
    r"|github_pat_[A-Za-z0-9_]{40,}"
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack token
    r")\b"
)
# values that point elsewhere rather than hold the secret
_REFERENCE = re.compile(r"^(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|/.*|file:.*)$")


def _strings(value: Any, path: KeyPath) -> Iterator[tuple[KeyPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def _layer_values(layer: Layer) -> Iterator[tuple[KeyPath, str, bool]]:
    """(path, value, named-like-a-secret) for every string a layer writes into serve, env or a command."""
    data = layer.data
    for name, value in data.env.items():
        if isinstance(value, str):
            yield ("env", name), value, bool(_SECRET_NAME.search(name))
    for path, value in _strings(layer.serve, ("serve",)):
        yield path, value, len(path) == 2 and str(path[1]) in _SECRET_SERVE_KEYS
    for role, spec in data.roles.items():
        for name, value in spec.env.items():
            if isinstance(value, str):
                yield ("roles", role, "env", name), value, bool(_SECRET_NAME.search(name))
        for path, value in _strings(layer.role_serve.get(role, {}), ("roles", role, "serve")):
            yield path, value, len(path) == 4 and str(path[3]) in _SECRET_SERVE_KEYS
        for index, arg in enumerate(spec.command or []):
            yield ("roles", role, "command", index), arg, False


@stack_rule("literal-secret", Severity.ERROR, "a secret-looking value written into a layer")
def literal_secret(ctx: Context) -> Iterable[Hit]:
    hits: list[Hit] = []
    for layer in ctx.stack.layers:
        for path, value, by_name in _layer_values(layer):
            if not value.strip():
                continue
            looks = _SECRET_VALUE.search(value) is not None
            if not looks and not (by_name and not _REFERENCE.match(value)):
                continue
            key = format_key(path)
            what = "a token-shaped value" if looks else "a literal value"
            env_name = str(path[-1]) if "env" in path else None
            fix = (
                f"write {env_name} = {{ secret = true }} and pass the value from the launching environment"
                if env_name
                else "move the value to an env variable marked { secret = true } and reference it at launch"
            )
            hits.append(
                Hit(
                    "literal-secret",
                    f"{key} holds {what} that looks like a credential; a secret written into a profile ends up in "
                    "git history and in every rendered file (the value is not shown here)",
                    [layer.location(path)],
                    fix + "; then revoke the exposed credential",
                )
            )
    return hits
