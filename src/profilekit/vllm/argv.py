"""Turn a role's effective `serve` table into the argv that `vllm serve` parses back to the same values."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Catalogue, Flag


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return compact_json(value)
    return str(value)


def _valued(option: str, value: str) -> list[str]:
    # argparse takes a separate argument that starts with '-' for an option: glue it with '='
    return [f"{option}={value}"] if value.startswith("-") else [option, value]


def _generic(dest: str, value: Any) -> list[str]:
    """Before a catalogue is known: `--x` / `--no-x`, one JSON argument, values after one flag."""
    option = "--" + dest.replace("_", "-")
    if isinstance(value, bool):
        return [option] if value else ["--no-" + option[2:]]
    if isinstance(value, list):
        if not value:
            return []
        return [option, *[_scalar(v) for v in value]]
    return _valued(option, _scalar(value))


def _with_flag(flag: Flag, value: Any) -> list[str]:
    if flag.is_bool:
        option = flag.true_option if value else flag.false_option
        return [option] if option else []
    if flag.action == "append":
        items = value if isinstance(value, list) else [value]
        out: list[str] = []
        for item in items:
            out += _valued(flag.option, _scalar(item))
        return out
    if flag.takes_many:
        items = value if isinstance(value, list) else [value]
        if not items:
            return []
        first = _scalar(items[0])
        head = [f"{flag.option}={first}"] if first.startswith("-") else [flag.option, first]
        return [*head, *[_scalar(v) for v in items[1:]]]
    return _valued(flag.option, _scalar(value))


def render_argv(serve: dict[str, Any], catalogue: Catalogue | None = None) -> list[str]:
    """The arguments after `vllm serve`: the model positional first, then one option per key."""
    args: list[str] = []
    model = serve.get("model")
    if model is not None:
        args.append(str(model))
    for dest, value in serve.items():
        if dest == "model":
            continue
        flag = catalogue.flag(dest) if catalogue is not None else None
        args += _with_flag(flag, value) if flag is not None else _generic(dest, value)
    return args
