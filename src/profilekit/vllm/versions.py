"""The vLLM releases profilekit targets, and how a release is chosen."""

from __future__ import annotations

import functools

from profilekit.errors import UsageError

# 0.27.0 is the first release with --use-replayssm (reference/vllm-facts.md section 1.3a).
SUPPORTED = ("0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
DEFAULT = SUPPORTED[-1]


def resolve_version(cli: str | None, configured: str | None) -> str:
    """`--vllm-version` wins over `[vllm] version`; anything outside SUPPORTED is a usage error."""
    # an empty --vllm-version is a mistake, not "use the default"
    version = cli if cli is not None else configured if configured is not None else DEFAULT
    if version not in SUPPORTED:
        origin = "--vllm-version" if cli is not None else "[vllm] version in profilekit.toml"
        raise UsageError(
            f"unsupported vLLM version {version!r} (from {origin})",
            hint="supported releases: " + ", ".join(SUPPORTED),
        )
    return version


@functools.lru_cache(maxsize=64)
def version_key(version: str) -> tuple[int, ...]:
    """A sortable key for a supported release string (asked per rule and role: computed once per string)."""
    return tuple(int(part) for part in version.split("."))


def at_least(version: str, release: str) -> bool:
    """The release branches of vLLM's code: `version` is `release` or later."""
    return version_key(version) >= version_key(release)
