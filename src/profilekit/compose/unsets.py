"""`[layer] unset`: the paths each entry removes, and `unset-removes-nothing` for an entry that names nothing."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from profilekit.compose.model import SCOPES, Scope, Unset
from profilekit.errors import Finding, Location, Severity
from profilekit.tomlio.positions import Path as KeyPath
from profilekit.tomlio.positions import format_key, parse_key

if TYPE_CHECKING:
    from collections.abc import Iterable

    from profilekit.load.layers import Layer


def unset_paths(layer: Layer, position: int) -> tuple[list[Unset], list[Finding]]:
    out: list[Unset] = []
    findings: list[Finding] = []
    for index, text in enumerate(layer.data.layer.unset):
        loc = layer.location(("layer", "unset", index))
        try:
            path = parse_key(text)
        except ValueError as exc:
            findings.append(
                Finding(
                    "invalid-layer",
                    Severity.ERROR,
                    f"layer.unset[{index}]: {exc}",
                    [loc],
                    fix='write a dotted key such as "serve.enable_prefix_caching"',
                )
            )
            continue
        valid = (
            (len(path) >= 2 and path[0] in SCOPES)
            or (len(path) == 2 and path[0] == "roles")
            or (len(path) == 3 and path[0] == "roles" and path[2] == "command")
            or (len(path) >= 4 and path[0] == "roles" and path[2] in ("serve", "env", "hardware"))
        )
        if not valid:
            findings.append(
                Finding(
                    "invalid-layer",
                    Severity.ERROR,
                    f"layer.unset[{index}]: {text!r} is not a path that can be unset",
                    [loc],
                    fix="unset serve.KEY, env.NAME, model.KEY, hardware.KEY, roles.NAME, or roles.NAME.serve/env/hardware.KEY",
                )
            )
            continue
        if path[0] == "serve":
            path = ("serve", layer.dest(str(path[1])), *path[2:])
        elif path[0] == "roles" and len(path) >= 4 and path[2] == "serve":
            path = (*path[:3], layer.dest(str(path[3])), *path[4:])
        origin = Location(loc.file, loc.line, loc.column, f"layer.unset[{index}]", loc.layer)
        out.append(Unset(path, origin, text, position))
    return out, findings


def effective_keys(paths: Iterable[KeyPath], prefix: KeyPath = ()) -> list[str]:
    """Every effective key and table path (as dotted keys, below `prefix`): the names an `unset` can take."""
    keys: dict[str, None] = {}
    for path in paths:
        for depth in range(2, len(path) + 1):
            keys[format_key((*prefix, *path[:depth]))] = None
    return list(keys)


def unset_removes_nothing(unset: Unset, why: str, candidates: list[str], notes: list[str] | None = None) -> Finding:
    """`unset-removes-nothing`: an `unset` entry that names nothing effective at its layer's position."""
    close = difflib.get_close_matches(format_key(unset.path), candidates, n=1, cutoff=0.6)
    fix = (
        f"did you mean {close[0]!r}?"
        if close
        else "fix the key, or remove the entry: an unset removes what the layers before it (and its own layer) set"
    )
    # legal (vLLM's default or the later value applies) but very likely a mistake: DESIGN's warning
    return Finding(
        "unset-removes-nothing",
        Severity.WARNING,
        f"unset {unset.written!r} removes nothing: {why}",
        [unset.origin],
        fix=fix,
        notes=list(notes or []),
    )


def _set_later(top: Scope, unset: Unset, order: dict[str, int]) -> list[str]:
    """Where a later layer sets what an unset named too early: the unset applies at its own position."""
    notes: list[str] = []
    for path, entry in top.entries.items():
        if path[: len(unset.path)] == unset.path and order.get(entry.origin.layer, -1) > unset.position:
            notes.append(
                f"layer {entry.origin.layer!r} sets {format_key(path)} later ({entry.origin}); "
                "an unset removes only what is set up to its own layer"
            )
    return notes[:3]


Missed = list[tuple[Unset, list[str]]]  # unsets that removed nothing, with the keys they could have named


def missed_findings(top: Scope, missed: Missed, layers: list[Layer]) -> list[Finding]:
    """`unset-removes-nothing` for each miss, noting the later layers of the whole stack that set the key."""
    if not missed:
        return []
    order = {layer.name: index for index, layer in enumerate(layers)}
    return [
        unset_removes_nothing(
            unset,
            f"nothing sets {format_key(unset.path)} up to layer {unset.origin.layer!r}",
            candidates,
            _set_later(top, unset, order),
        )
        for unset, candidates in missed
    ]
