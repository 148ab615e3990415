"""The completion candidates of layer, stack, role, source and key arguments (the typer declarations name them).

Candidates come from listing the repository's layer files, reading one layer's TOML, composing one stack and the
flag catalogue: never the rule engine. A candidate function that fails offers nothing (cli/completion.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer  # the callbacks' `typer.Context` annotations are evaluated by typer

if TYPE_CHECKING:
    from profilekit.compose.model import Stack


def _params(ctx: typer.Context) -> dict[str, Any]:
    return ctx.find_root().params


def _root(ctx: typer.Context) -> Path | None:
    # --help loads every declaration; a candidate loads the pipeline only when a shell asks
    from profilekit.load.layers import find_repo  # noqa: PLC0415

    try:
        return find_repo(None, _params(ctx).get("repo"))
    except Exception:
        return None


def _layer_names(ctx: typer.Context) -> list[str]:
    """The repository's layers, then those of its locked sources whose commit is in the cache (never fetched)."""
    # --help loads every declaration; a candidate loads the pipeline only when a shell asks
    from profilekit.load.layers import discover_layers  # noqa: PLC0415

    root = _root(ctx)
    try:
        if root is None:
            return []
        names = list(discover_layers(root))
        # --help loads every declaration; a candidate loads the pipeline only when a shell asks
        from profilekit.sources import source_layers, tree_path  # noqa: PLC0415

        # --help loads every declaration; a candidate loads the pipeline only when a shell asks
        from profilekit.sources.lockfile import read_lock  # noqa: PLC0415

        lock = read_lock(root)
        for source, entry in (lock.usable() if lock is not None else {}).items():
            tree = tree_path(entry.commit)
            names += list(source_layers(source, tree)) if tree.is_dir() else []
        return names
    except Exception:
        return []


def complete_source(ctx: typer.Context, incomplete: str) -> list[str]:
    """A `[sources.NAME]` of profilekit.toml (`update NAME`)."""
    # --help loads every declaration; a candidate loads the pipeline only when a shell asks
    from profilekit.load.layers import load_repo_config  # noqa: PLC0415

    root = _root(ctx)
    try:
        return _complete(list(load_repo_config(root)[0].sources), incomplete) if root is not None else []
    except Exception:
        return []


def complete_layer(ctx: typer.Context, incomplete: str) -> list[str]:
    """A layer name (`site/h100`)."""
    return [name for name in _layer_names(ctx) if name.startswith(incomplete)]


def complete_stack(ctx: typer.Context, incomplete: str) -> list[str]:
    """Layer names joined by `+`: the word so far, then one more layer not in it yet."""
    head, plus, last = incomplete.rpartition("+")
    taken = set(head.split("+")) if plus else set()
    prefix = head + plus
    return [prefix + name for name in _layer_names(ctx) if name.startswith(last) and name not in taken]


def _keys(table: dict[str, Any], prefix: tuple[str, ...], tables: bool) -> list[str]:
    # --help loads every declaration; a candidate loads the pipeline only when a shell asks
    from profilekit.tomlio.positions import format_key  # noqa: PLC0415

    out: list[str] = []
    for key, value in table.items():
        path = (*prefix, key)
        if isinstance(value, dict) and value:
            if tables:
                out.append(format_key(path))
            out += _keys(value, path, tables)
        else:
            out.append(format_key(path))
    return out


def _layer_keys(ctx: typer.Context, *, tables: bool) -> list[str]:
    """The keys the LAYER argument's file writes, as `set`/`unset` spell them (`roles.prefill.serve.port`)."""
    import tomllib  # noqa: PLC0415 - --help loads every declaration; a candidate loads the pipeline only when a shell asks

    # --help loads every declaration; a candidate loads the pipeline only when a shell asks
    from profilekit.load.layers import discover_layers  # noqa: PLC0415

    root, layer = _root(ctx), ctx.params.get("layer")
    if root is None or not isinstance(layer, str):
        return []
    path = discover_layers(root).get(layer) or (Path(layer) if layer.endswith(".toml") else None)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8")) if path is not None else {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    return _keys(data, (), tables)


def _flag_keys(ctx: typer.Context) -> list[str]:
    """`serve.DEST` for every option of the target release."""
    # --help loads every declaration; a candidate loads the pipeline only when a shell asks
    from profilekit.cli.app import target_release  # noqa: PLC0415

    # --help loads every declaration; a candidate loads the pipeline only when a shell asks
    from profilekit.vllm.catalogue import load_catalogue  # noqa: PLC0415

    params = _params(ctx)
    catalogue = load_catalogue(target_release(params.get("repo"), params.get("vllm_version")))
    return [f"serve.{dest}" for dest in catalogue.flags] if catalogue is not None else []


def _complete(candidates: list[str], incomplete: str) -> list[str]:
    return [key for key in dict.fromkeys(candidates) if key.startswith(incomplete)]


def complete_set_key(ctx: typer.Context, incomplete: str) -> list[str]:
    """A key of `set LAYER KEY`: those the layer writes, then every option of the release."""
    try:
        return _complete(_layer_keys(ctx, tables=False) + _flag_keys(ctx), incomplete)
    except Exception:
        return []


def complete_unset_key(ctx: typer.Context, incomplete: str) -> list[str]:
    """A key of `unset LAYER KEY`: what the layer writes (a table too: unset removes it whole)."""
    try:
        return _complete(_layer_keys(ctx, tables=True), incomplete)
    except Exception:
        return []


def _composed(ctx: typer.Context, spec: str) -> Stack | None:
    """`spec` composed as `Session.compose` does, without the reference checks (they live with the rules);
    None when it does not compose."""
    try:
        # --help loads every declaration; a candidate loads the pipeline only when a shell asks
        from profilekit.compose.linearise import linearise  # noqa: PLC0415

        # --help loads every declaration; a candidate loads the pipeline only when a shell asks
        from profilekit.compose.merge import compose_layers  # noqa: PLC0415

        # --help loads every declaration; a candidate loads the pipeline only when a shell asks
        from profilekit.session import Session  # noqa: PLC0415

        params = _params(ctx)
        session = Session.open(repo=params.get("repo"), vllm_version=params.get("vllm_version"), fetch=False)
        names = session.layers.parse_stack(spec)
        layers, problems = linearise(session.layers, names)
        return None if problems else compose_layers("+".join(names), layers, [])
    except Exception:
        return None


def complete_role(ctx: typer.Context, incomplete: str) -> list[str]:
    """A role of the stack (or stacks) on the command line."""
    # while the option waits for its value, click leaves the positional words unassigned, in `ctx.args`
    given = ctx.params.get("stack") or ctx.params.get("stacks") or ctx.args
    roles: list[str] = []
    for spec in [given] if isinstance(given, str) else list(given):
        stack = _composed(ctx, str(spec))
        roles += list(stack.roles) if stack is not None else []  # a word that is no stack (KEY) adds none
    return _complete(roles, incomplete)


def complete_stack_key(ctx: typer.Context, incomplete: str) -> list[str]:
    """A key of `explain STACK KEY`: the stack's effective keys (`serve.max_num_seqs`, `env.HF_TOKEN`), composed
    without the rules; `roles.R.` forms once the word starts with `roles.`."""
    stack = _composed(ctx, str(ctx.params.get("stack")))
    if stack is None:
        return []
    # --help loads every declaration; a candidate loads the pipeline only when a shell asks
    from profilekit.tomlio.positions import format_key  # noqa: PLC0415

    keys: list[str] = []
    qualified: list[str] = []
    for role in stack.roles.values():
        for path in role.scope.entries:
            named = tuple(part for part in path if isinstance(part, str))
            keys.append(format_key(named))
            qualified.append(format_key(("roles", role.name, *named)))
    return _complete(sorted(qualified) if incomplete.startswith("roles.") else sorted(keys), incomplete)
