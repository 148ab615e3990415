"""The hot commands (check, lint, render, show, explain, list) parsed without typer.

Importing typer, and typer building each parameter's pydantic adapter at parse time, is a third of a cold
`profilekit check`. The commands run most often take a handful of plain options, so a table per command
(below) parses the argument lists it is sure of: `--opt value`, `--opt=value`, flags, positionals, global
options anywhere (hoisted as `cli.app`'s group does). Anything else — `--help`, an unknown option, a value
that starts with '-', `--`, a missing value or argument — is declined, and typer parses the whole argument
list as before: it remains the parser of record, and what it would say about a mistake is said by it.
tests/test_fastpath.py holds the two parsers to the same keyword arguments for every list this one accepts,
and the tables to the options typer declares.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, NamedTuple

from profilekit.cli.common import GLOBAL_FLAGS, GLOBAL_VALUED, hoist_global_options, run_command, set_globals

FLAG = "flag"  # --strict: True when present
VALUE = "value"  # --format X: the last one written wins
MANY = "many"  # --target X --target Y: a list, None when absent

ONE = "one"  # a required positional
OPTIONAL = "optional"  # a positional that may be left out: None
REST = "rest"  # any number of positionals: a list, None when there are none


class Option(NamedTuple):
    kind: str
    dest: str
    default: Any = None
    path: bool = False  # typer gives a `Path` for a `Path` parameter


class Command(NamedTuple):
    module: str  # where its body is: `profilekit.cli.commands.*`
    function: str
    options: dict[str, Option]
    positionals: tuple[tuple[str, str], ...] = ()  # (dest, ONE | OPTIONAL | REST), in order


_STACKS = (("stacks", REST),)
_ALL = Option(FLAG, "every", False)
_ROLE = Option(VALUE, "role")
# the rule selection of the commands that print findings: repeatable, each value maybe comma-separated
_SELECTION = {"--select": Option(MANY, "select"), "--ignore": Option(MANY, "ignore")}


def _format(default: str) -> Option:
    return Option(VALUE, "fmt", default)


COMMANDS: dict[str, Command] = {
    "check": Command(
        "profilekit.cli.commands.checking",
        "check",
        {"--all": _ALL, "--format": _format("text"), "--strict": Option(FLAG, "strict", False), **_SELECTION},
        _STACKS,
    ),
    "lint": Command(
        "profilekit.cli.commands.checking",
        "lint",
        {
            "--format": _format("text"),
            "--strict": Option(FLAG, "strict", False),
            "--combinations": Option(VALUE, "combinations"),
            "--to-release": Option(VALUE, "to_release"),
            "--sources": Option(FLAG, "sources", False),
            **_SELECTION,
        },
    ),
    "render": Command(
        "profilekit.cli.commands.render",
        "render",
        {
            "--all": _ALL,
            "--out": Option(VALUE, "out_dir", path=True),
            "--role": _ROLE,
            "--print": Option(FLAG, "print_", False),
            "--target": Option(MANY, "target"),
            "--explain": Option(FLAG, "explain", False),
            **_SELECTION,
        },
        _STACKS,
    ),
    "show": Command(
        "profilekit.cli.commands.show", "show", {"--all": _ALL, "--role": _ROLE, "--format": _format("toml")}, _STACKS
    ),
    "explain": Command(
        "profilekit.cli.commands.explain",
        "explain",
        {"--role": _ROLE, "--format": _format("text")},
        (("stack", ONE), ("key", OPTIONAL)),
    ),
    "list": Command("profilekit.cli.commands.listing", "list_layers", {"--format": _format("text")}),
}

_GLOBALS = {
    "--repo": Option(VALUE, "repo", path=True),
    "--vllm-version": Option(VALUE, "vllm_version"),
    "--debug": Option(FLAG, "debug", False),
    "--no-cache": Option(FLAG, "no_cache", False),
}
assert set(_GLOBALS) == {*GLOBAL_VALUED, *GLOBAL_FLAGS}


class Parsed(NamedTuple):
    command: Command
    kwargs: dict[str, Any]  # the body's keyword arguments, as typer would pass them
    globals: dict[str, Any]  # `common.set_globals`'s


def run_fast(args: list[str]) -> int | None:
    """Run `args` if it is a hot command this parser is sure of, and return its exit code; else None."""
    if os.environ.get("_PROFILEKIT_COMPLETE"):  # typer answers a completion request whatever the arguments
        return None
    parsed = parse(args)
    if parsed is None:
        return None
    set_globals(**parsed.globals)
    body = getattr(importlib.import_module(parsed.command.module), parsed.command.function)
    return run_command(body, **parsed.kwargs)


def parse(args: list[str]) -> Parsed | None:
    """The command, its body's keyword arguments and the global options of `args`; None when unsure."""
    args = hoist_global_options(args)
    index, globals_ = _options(args, 0, _GLOBALS, stop_at_positional=True)
    if index is None or index >= len(args):
        return None
    command = COMMANDS.get(args[index])
    if command is None:
        return None
    end, kwargs = _options(args, index + 1, command.options, stop_at_positional=False)
    if end is None:
        return None
    words = kwargs.pop("", [])
    for dest, kind in command.positionals:
        if kind == REST:
            kwargs[dest], words = (words or None), []
        elif words:
            kwargs[dest], words = words[0], words[1:]
        elif kind == ONE:
            return None  # typer says it is missing
        else:
            kwargs[dest] = None
    if words:
        return None  # more than the command takes: typer says so
    return Parsed(command, kwargs, globals_)


def _options(
    args: list[str], index: int, table: dict[str, Option], *, stop_at_positional: bool
) -> tuple[int | None, dict[str, Any]]:
    """Read `table`'s options from `args[index:]`: (where reading stopped, or None to decline; the values).

    The global options stop at the command word; a command's options collect its positionals under ''.
    """
    values: dict[str, Any] = {option.dest: option.default for option in table.values()}
    words: list[str] = []
    while index < len(args):
        arg = args[index]
        if not arg.startswith("-"):
            if stop_at_positional:
                break
            words.append(arg)
            index += 1
            continue
        name, equals, value = arg.partition("=")
        option = table.get(name)
        if option is None:  # -h, --help, --, -x, an unknown option
            return None, values
        if option.kind == FLAG:
            if equals:
                return None, values  # click: "Option '--strict' does not take a value"
            values[option.dest] = True
            index += 1
            continue
        if not equals:
            if index + 1 >= len(args):
                return None, values  # click: "Option '--format' requires an argument"
            value = args[index + 1]
            index += 1
        if value.startswith("-"):
            return None, values
        converted = Path(value) if option.path else value
        if option.kind == MANY:
            values[option.dest] = [*(values[option.dest] or []), converted]
        else:
            values[option.dest] = converted
        index += 1
    if not stop_at_positional:
        values[""] = words
    return index, values
