"""What a secret looks like, and the one redaction rule that keeps secret values out of every output.

A value is a secret when its key is named like a credential (`api_key`, `HF_TOKEN`, `*_secret`,
`*password*`, ..., in `serve`, inside a JSON-valued option, in `env`, or as the value of such an option in a
command) or when it is shaped like one (`hf_...`, `sk-...`, GitHub, AWS and Slack tokens), wherever it is.
`rules/secrets.py` refuses such values in layer files (`literal-secret`); everything profilekit prints —
findings in every format, `show`, `explain`, error messages — goes through `Redactor`, which replaces each
secret value written in the layers, and anything shaped like a token, by `<redacted>`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from profilekit.records import record

if TYPE_CHECKING:
    from profilekit.errors import Finding
    from profilekit.load.layers import Layer
    from profilekit.tomlio.positions import Path as KeyPath

REDACTED = "<redacted>"

# names whose value is a credential whatever it looks like (env names, serve options, JSON-option keys)
SECRET_NAME = re.compile(
    r"(^|[_-])(TOKEN|API[_-]?KEY|APIKEY|SECRET|SECRET[_-]KEY|ACCESS[_-]KEY|CREDENTIALS?|PRIVATE[_-]KEY)$"
    r"|PASSWORD|PASSWD",
    re.IGNORECASE,
)
# values that are credentials whatever they are called
SECRET_VALUE = re.compile(
    r"\b("
    r"hf_[A-Za-z0-9]{30,}"  # Hugging Face user access token
    r"|sk-[A-Za-z0-9_-]{20,}"  # OpenAI-style API key
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub token
    r"|github_pat_[A-Za-z0-9_]{40,}"
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack token
    r")\b"
)
# values that point elsewhere rather than hold the secret: `$NAME`, `${NAME}`, a profilekit reference
# `${env.NAME}`, its escaped literal `$${NAME}` (references.py), a path
REFERENCE = re.compile(r"^(\$\$?\{?[A-Za-z_][A-Za-z0-9_.]*\}?|/.*|file:.*)$")
# a secret this short is replaced only where it stands alone, so that it does not shred every other word
_SHORT = 6
_MINIMUM = 4


def is_secret_name(name: str) -> bool:
    """Whether a key (an env name, a serve option, a key inside a JSON-valued option) names a credential."""
    return SECRET_NAME.search(name) is not None


def looks_like_token(value: str) -> bool:
    return SECRET_VALUE.search(value) is not None


def is_secret_entry(name: str, value: str) -> bool:
    """Whether an env entry of a launch is a secret, whatever its value: a credential's name, or a token's shape.

    The one definition of `is_secret`, for what `import` keeps out of a layer (a secret-named entry is written
    `{ secret = true }` even when its value is `$HF_TOKEN`, which `literal-secret` would let stand)."""
    return is_secret_name(name) or looks_like_token(value)


def is_secret(name: str | None, value: str) -> bool:
    """The `literal-secret` test: a token-shaped value, or a literal (not a reference) under a secret name."""
    if not value.strip():
        return False
    if looks_like_token(value):
        return True
    return name is not None and is_secret_name(name) and REFERENCE.match(value) is None


def _strings(value: Any, path: KeyPath) -> Iterator[tuple[KeyPath, str]]:
    """Every scalar below `value` as written text (a numeric password is a password too)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, str(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def leaf_name(path: KeyPath) -> str | None:
    """The key a value is written under: the last name of its path (array indices skipped)."""
    for part in reversed(path):
        if isinstance(part, str):
            return part
    return None


def _command_values(command: list[str], prefix: KeyPath) -> Iterator[tuple[KeyPath, str, str | None]]:
    """(path, word, the secret-named option it is the value of, or None) for every word of a command."""
    option: str | None = None
    for index, word in enumerate(command):
        path = (*prefix, index)
        if option is not None and not word.startswith("-"):
            yield path, word, option
            option = None
            continue
        option = None
        if word.startswith("-") and "=" in word:
            name, _, value = word.partition("=")
            yield path, value, name.lstrip("-") if is_secret_name(name.lstrip("-")) else None
            continue
        if word.startswith("-") and is_secret_name(word.lstrip("-")):
            option = word.lstrip("-")
        yield path, word, None


def layer_strings(layer: Layer) -> Iterator[tuple[KeyPath, str, str | None]]:
    """(path, value, the name it is judged by) for every string a layer writes into serve, env or a command.

    The name is the key the value is written under (for a command word: the option it is the value of).
    """
    data = layer.data
    for name, value in data.env.items():
        if isinstance(value, str):
            yield ("env", name), value, name
    for path, value in _strings(layer.serve, ("serve",)):
        yield path, value, leaf_name(path[1:])
    for role, spec in data.roles.items():
        for name, value in spec.env.items():
            if isinstance(value, str):
                yield ("roles", role, "env", name), value, name
        for path, value in _strings(layer.role_serve.get(role, {}), ("roles", role, "serve")):
            yield path, value, leaf_name(path[3:])
        if spec.command:
            yield from _command_values(list(spec.command), ("roles", role, "command"))


def layer_secrets(layer: Layer) -> tuple[tuple[KeyPath, str, str | None], ...]:
    """The secret-looking strings of `layer_strings` (found once per layer: lint puts a layer in many stacks)."""
    known: tuple[tuple[KeyPath, str, str | None], ...] | None = layer.memo.get("secrets")
    if known is None:
        known = layer.memo["secrets"] = tuple(item for item in layer_strings(layer) if is_secret(item[2], item[1]))
    return known


@record(slots=True)
class Redactor:
    """Replaces known secret values, and anything shaped like a token, by `<redacted>`."""

    secrets: set[str] = field(default_factory=set)
    _pattern: re.Pattern[str] | None = None

    @classmethod
    def of_layers(cls, layers: Iterable[Layer]) -> Redactor:
        found: set[str] = set()
        for layer in layers:
            for _path, value, _name in layer_secrets(layer):
                found.add(value)
                found.update(m.group(0) for m in SECRET_VALUE.finditer(value))
        # a value of a few characters protects nothing, and redacting it would shred every message
        return cls({s for s in found if len(s.strip()) >= _MINIMUM})

    def _compiled(self) -> re.Pattern[str] | None:
        if self._pattern is None and self.secrets:
            forms: set[str] = set()
            for secret in self.secrets:
                forms.update({secret, json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1]})
            parts = []
            for form in sorted(forms, key=len, reverse=True):
                escaped = re.escape(form)
                parts.append(escaped if len(form) >= _SHORT else rf"(?<![A-Za-z0-9]){escaped}(?![A-Za-z0-9])")
            self._pattern = re.compile("|".join(parts))
        return self._pattern

    def text(self, text: str) -> str:
        pattern = self._compiled()
        if pattern is not None:
            text = pattern.sub(REDACTED, text)
        return SECRET_VALUE.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        """A value (a string, or a table or array of them) with every secret in it redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value

    def finding(self, finding: Finding) -> Finding:
        """The finding with its message, fix and notes redacted (locations name keys, never values)."""
        return replace(
            finding,
            message=self.text(finding.message),
            fix=self.text(finding.fix),
            notes=[self.text(note) for note in finding.notes],
        )

    def findings(self, findings: list[Finding]) -> list[Finding]:
        return [self.finding(f) for f in findings]
