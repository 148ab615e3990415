"""Turn a role's effective `serve` table into the argv that `vllm serve` parses back to the same values.

With the release's flag catalogue (DESIGN section 7): `true` -> the option string that sets the dest to
true, `false` -> the visible one that sets it to false (nothing for a store-true flag), a value -> the long
option and the value (`--opt=VALUE` when VALUE starts with '-'), JSON options -> one compact JSON word,
nargs options -> the values after one flag, append options -> the flag repeated per value, and the
model as the positional. The oracle suite (tests/oracle/test_roundtrip.py) proves this against vLLM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from profilekit.vllm.values import as_args, compact_json, glued

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Catalogue

__all__ = ["compact_json", "option_args", "render_argv"]


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return compact_json(value)
    return str(value)


def _generic(dest: str, value: Any) -> list[str]:
    """Without a catalogue entry: `--x` / `--no-x`, one JSON argument, values after one flag."""
    option = "--" + dest.replace("_", "-")
    if isinstance(value, bool):
        return [option] if value else ["--no-" + option[2:]]
    if isinstance(value, list):
        if not value:
            return []
        if len(value) == 1:
            return glued(option, _scalar(value[0]))
        return [option, *[_scalar(v) for v in value]]
    return glued(option, _scalar(value))


def render_argv(serve: dict[str, Any], catalogue: Catalogue | None = None) -> list[str]:
    """The arguments after `vllm serve`: the model positional first, then one option per key."""
    args: list[str] = []
    model = serve.get("model")
    if model is not None:
        args.append(str(model))
    for dest, value in serve.items():
        if dest != "model":
            args += option_args(dest, value, catalogue)
    return args


def option_args(dest: str, value: Any, catalogue: Catalogue | None) -> list[str]:
    """The words of one `serve` key (its catalogue entry's rendering, or the generic one without it)."""
    flag = catalogue.flag(dest) if catalogue is not None else None
    return as_args(flag, value) if flag is not None else _generic(dest, value)
