"""`serve` keys and values checked against the flag catalogue of the targeted vLLM release.

Rules: `unknown-option` (with a did-you-mean), `invalid-value` (TOML type, choices, enums vLLM converts
after parsing, values no command line can carry) and `deprecated-option` (a warning with vLLM's reason).
Each layer is judged where it is written: a key of a layer is reported once, at its own location, however
many roles inherit it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from profilekit.errors import Finding, Severity
from profilekit.tomlpos import format_key
from profilekit.vllm.values import problem

if TYPE_CHECKING:
    from profilekit.compose import Stack
    from profilekit.layers import Layer
    from profilekit.tomlpos import Path as KeyPath
    from profilekit.vllm.catalogue import Catalogue, Flag


def option_findings(stack: Stack, catalogue: Catalogue) -> list[Finding]:
    """Every unknown, invalid or deprecated `serve` option written by the layers of `stack`."""
    findings: list[Finding] = []
    for layer in stack.layers:
        findings += layer_option_findings(layer, catalogue)
    for finding in findings:
        finding.stack = stack.spec
    return findings


def layer_option_findings(layer: Layer, catalogue: Catalogue) -> list[Finding]:
    """The option findings of one layer file: its top-level `serve` table and each role's."""
    findings = _table_findings(layer, ("serve",), layer.serve, catalogue, role=None)
    for role, table in layer.role_serve.items():
        findings += _table_findings(layer, ("roles", role, "serve"), table, catalogue, role=role)
    return findings


def _table_findings(
    layer: Layer, prefix: KeyPath, table: dict[str, Any], catalogue: Catalogue, *, role: str | None
) -> list[Finding]:
    findings: list[Finding] = []
    version = catalogue.version
    for key, value in table.items():
        flag = catalogue.resolve(key)
        if flag is None:
            findings.append(_unknown(layer, prefix, key, value, catalogue, role=role))
            continue
        where = layer.location((*prefix, key))
        name = format_key((*prefix, flag.dest))
        if flag.deprecated:
            findings.append(
                Finding(
                    "deprecated-option",
                    Severity.WARNING,
                    f"{name}: vLLM {version} deprecates option {flag.dest!r}" + (f": {flag.help}" if flag.help else ""),
                    [where],
                    fix=f"remove {flag.dest} from this layer" + _deprecation_hint(flag),
                    role=role,
                )
            )
        found = problem(flag, value, version)
        if found is not None:
            path = (*prefix, key, *found.path)
            findings.append(
                Finding(
                    "invalid-value",
                    Severity.ERROR,
                    f"{format_key((*prefix, flag.dest, *found.path))}: {found.message}",
                    [layer.location(path)],
                    fix=found.fix,
                    role=role,
                )
            )
    return findings


def _deprecation_hint(flag: Flag) -> str:
    text = flag.help
    marker = "Use "
    if marker in text:
        return "; " + text[text.index(marker) :].rstrip(".").replace("Use ", "use ", 1)
    return ""


def _unknown(layer: Layer, prefix: KeyPath, key: str, value: Any, catalogue: Catalogue, *, role: str | None) -> Finding:
    version = catalogue.version
    spelled = key.replace("-", "_")
    negated = catalogue.negated(key)
    if negated is not None:
        flag, option = negated
        fix = f"write {flag.dest} = {str(not value).lower() if isinstance(value, bool) else 'false'} ({option} sets {flag.dest} to false)"
    else:
        close = catalogue.suggest(key)
        fix = (
            f"did you mean {close!r}?"
            if close
            else f"`profilekit flags {spelled}` searches the options of vLLM {version}"
        )
    return Finding(
        "unknown-option",
        Severity.ERROR,
        f"{format_key((*prefix, spelled))}: vLLM {version} has no option {spelled!r}",
        [layer.location((*prefix, key))],
        fix=fix,
        role=role,
    )
