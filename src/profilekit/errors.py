"""Findings, locations, the exception tree and exit codes: the vocabulary every module shares."""

from __future__ import annotations

import enum
from dataclasses import field
from typing import Any

from profilekit.records import record

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
# 128 + SIGPIPE: the status a shell reports for a command whose reader closed the pipe
EXIT_BROKEN_PIPE = 141


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"


@record(frozen=True, slots=True)
class Location:
    """Where a value was written: a file relative to the repository root, 1-based line and column."""

    file: str
    line: int
    column: int
    key: str = ""
    layer: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "line": self.line, "column": self.column}
        if self.key:
            out["key"] = self.key
        if self.layer:
            out["layer"] = self.layer
        return out

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    def in_source(self) -> tuple[str, str] | None:
        """(`platform@3f2a9c1`, `profiles/base.toml`) for a file of a source (docs/SOURCES.md), else None."""
        label, sep, path = self.file.partition(":")
        name, at, commit = label.partition("@")
        # a file of the repository itself is below profiles/ (or profilekit.toml): its part before ':' has a '/'
        if (
            sep
            and at
            and name
            and "/" not in name
            and len(commit) == 7
            and all(c in "0123456789abcdef" for c in commit)
        ):
            return label, path
        return None

    def provenance(self) -> str:
        """`file:line:col  (key, layer L)`: where `explain` and `render --explain` say a value came from."""
        return f"{self}  ({self.key}, layer {self.layer})"


@record(slots=True)
class Finding:
    """One problem found by a check. Returned as data; only the CLI turns findings into exit codes."""

    rule: str
    severity: Severity
    message: str
    locations: list[Location] = field(default_factory=list)
    fix: str = ""
    stack: str | None = None
    role: str | None = None
    # free-form notes shown under the first line in text output (e.g. the other side's value)
    notes: list[str] = field(default_factory=list)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
        }
        if self.stack is not None:
            out["stack"] = self.stack
        if self.role is not None:
            out["role"] = self.role
        out["locations"] = [loc.as_dict() for loc in self.locations]
        out["fix"] = self.fix
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def sort_key(self) -> tuple[str, int, int, str, str, str]:
        first = self.locations[0] if self.locations else Location("", 0, 0)
        return (first.file, first.line, first.column, self.rule, self.role or "", self.message)


@record(frozen=True, slots=True)
class Ignored:
    """A warning a rule selection kept out of the report (docs/RULES.md, "Choosing rules"): counted, not shown.

    `by` says what ignored it: `--ignore`, `--select` (it was not among those chosen), `[lint] ignore` and
    `[lint] select` of profilekit.toml, or `[layer] ignore` of the layer it is reported at, whose `reason` it
    carries.
    """

    finding: Finding
    by: str
    reason: str = ""


class ProfilekitError(Exception):
    """Base of every error a user can cause; carries its exit code and one clear message."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(ProfilekitError):
    """A bad option, an unknown layer named on the command line, no repository: exit 2."""

    exit_code = EXIT_USAGE


class FindingsError(ProfilekitError):
    """Problems inside files that stop a command (e.g. a stack whose layers do not load): exit 1."""

    exit_code = EXIT_FINDINGS

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__(f"{len(findings)} problem(s) found")
        self.findings = findings


def count(findings: list[Finding]) -> tuple[int, int]:
    errors = sum(1 for f in findings if f.severity is Severity.ERROR)
    return errors, len(findings) - errors
