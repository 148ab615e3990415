"""The fast parser of the hot commands (`cli.fastpath`) against typer, the parser of record.

For every argument list the fast parser accepts, a command's body gets the keyword arguments typer would give
it, and the global options are set as typer's callback sets them; what it declines is typer's to parse. Its
tables hold every option typer declares, and a cold run of a hot command does not import typer at all.
"""

from __future__ import annotations

import functools
import importlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profilekit.cli.common import G, set_globals
from profilekit.cli.fastpath import COMMANDS, FLAG, MANY, ONE, OPTIONAL, REST, VALUE, parse, run_fast
from profilekit.cli.run import run as run_cli
from profilekit.cli.run import run_typer
from tests.conftest import REPO_ROOT

STACK = "nemotron-replayssm"

# every option of every hot command, written out: an option added to a typer command must be added here and to
# cli.fastpath's table (else the fast parser would decline it, or worse, the tables would drift apart unseen)
HOT_OPTIONS = {
    "check": ["--all", "--format", "--strict", "--select", "--ignore"],
    "lint": ["--format", "--strict", "--combinations", "--to-release", "--sources", "--select", "--ignore"],
    "render": ["--all", "--out", "--role", "--print", "--target", "--explain", "--select", "--ignore"],
    "show": ["--all", "--role", "--format"],
    "explain": ["--role", "--format"],
    "list": ["--format"],
}
GLOBAL_OPTIONS = ["--repo", "--vllm-version", "--debug", "--no-cache", "--version"]


@functools.cache
def _typer_group() -> Any:
    import typer.main

    from profilekit.cli.run import typer_app

    for name in COMMANDS:
        typer_app([name])  # imports the module registering it
    return typer.main.get_command(typer_app([]))


def _kind(param: Any) -> str:
    return FLAG if param.is_flag else MANY if param.multiple else VALUE


@functools.cache
def _declared(name: str) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str]]]:
    """Typer's options of command `name` (spelling -> (kind, dest)) and its positionals ((dest, kind), in order)."""
    options: dict[str, tuple[str, str]] = {}
    positionals: list[tuple[str, str]] = []
    for param in _typer_group().commands[name].params:
        if param.param_type_name == "option":
            for spelling in (*param.opts, *param.secondary_opts):
                options[spelling] = (_kind(param), param.name)
        else:
            positionals.append((param.name, REST if param.nargs == -1 else ONE if param.required else OPTIONAL))
    return options, positionals


def test_the_tables_hold_every_option_typer_declares() -> None:
    assert set(COMMANDS) == set(HOT_OPTIONS)
    for name, command in COMMANDS.items():
        options, positionals = _declared(name)
        assert sorted(options) == sorted(HOT_OPTIONS[name]), f"`{name}`: update HOT_OPTIONS and cli.fastpath"
        assert {k: (o.kind, o.dest) for k, o in command.options.items()} == options, name
        assert list(command.positionals) == positionals, name
    group_options = [s for p in _typer_group().params for s in (*p.opts, *p.secondary_opts)]
    assert sorted(group_options) == sorted(GLOBAL_OPTIONS)


# ---- the same keyword arguments as typer --------------------------------------------------------------------


class _Stop(Exception):
    """Raised by a recording body to test how each parser's run reports an exception."""


@contextmanager
def _recording(raises: BaseException | None = None) -> Iterator[list[tuple[str, dict[str, Any], tuple[Any, ...]]]]:
    """Replace each hot command's body with one that records its keyword arguments and the globals it sees."""
    calls: list[tuple[str, dict[str, Any], tuple[Any, ...]]] = []

    def recorder(name: str, **kwargs: Any) -> int:
        seen = (G.repo, G.vllm_version, G.debug, G.no_cache, G.session)
        calls.append((name, {k: (type(v), v) for k, v in kwargs.items()}, tuple((type(v), v) for v in seen)))
        if raises is not None:
            raise raises
        return 0

    with pytest.MonkeyPatch.context() as patch:
        for name, command in COMMANDS.items():
            module = importlib.import_module(command.module)
            patch.setattr(module, command.function, functools.partial(recorder, name))
        yield calls


def _both(args: list[str], raises: BaseException | None = None) -> list[tuple[Any, ...]]:
    """What the fast path and typer each do with `args`: exit code and the recorded call, from stale globals."""
    results: list[tuple[Any, ...]] = []
    for run in (run_fast, run_typer):
        set_globals(repo=Path("/stale"), vllm_version="stale", debug=True, no_cache=True)
        with _recording(raises) as calls:
            code = run(list(args))
        results.append((code, calls))
    return results


# values the fast parser should take, and pieces it should decline (each argument list gets at most one of those)
CLEAN = st.one_of(
    st.sampled_from(["", "x", "a b", "=", "a=b", "check", "~/p", "é", "\udcff", "0", "a-"]),
    st.text(alphabet="abc+/.=_ é-", max_size=6).filter(lambda v: not v.startswith("-")),
)
DASHED = st.sampled_from(["-x", "--help", "--", "-", "--repo", "--all", "-1"])
JUNK = st.sampled_from(["--help", "-h", "--", "-x", "--unknown", "-", "--no-strict", "--version", "--all=1"])


def _option(spelling: str, kind: str, values: st.SearchStrategy[str] = CLEAN) -> st.SearchStrategy[list[str]]:
    if kind == FLAG:
        return st.just([spelling])
    return st.one_of(values.map(lambda v: [spelling, v]), values.map(lambda v: [f"{spelling}={v}"]))


def _junk_option(spelling: str, kind: str) -> st.SearchStrategy[list[str]]:
    if kind == FLAG:
        return st.one_of(CLEAN, DASHED).map(lambda v: [f"{spelling}={v}"])
    return st.one_of(_option(spelling, kind, DASHED), st.just([spelling]))  # a dashed value, or none


def _pieces(options: dict[str, tuple[str, str]], make: Callable[..., st.SearchStrategy[list[str]]]) -> list[Any]:
    return [make(spelling, kind) for spelling, (kind, _dest) in options.items()]


def _global_options() -> dict[str, tuple[str, str]]:
    return {s: (_kind(p), p.name) for p in _typer_group().params for s in (*p.opts, *p.secondary_opts)}


@st.composite
def _argv(draw: st.DrawFn, name: str) -> list[str]:
    """An argument list for `name`: its options and positionals, global options before and after the command, and
    sometimes one piece the fast parser must decline (or that typer reads differently from a plain option)."""
    options, _positionals = _declared(name)
    globals_ = {k: v for k, v in _global_options().items() if k != "--version"}
    clean = st.one_of(*_pieces(options, _option), *_pieces(globals_, _option), CLEAN.map(lambda v: [v]))
    junk = st.one_of(
        *_pieces(options, _junk_option),
        *_pieces(globals_, _junk_option),
        JUNK.map(lambda v: [v]),
        DASHED.map(lambda v: [v]),
    )
    before = draw(st.lists(st.one_of(*_pieces(globals_, _option)), max_size=2))
    word = draw(st.sampled_from([name] * 8 + ["", "nosuch", "--"]))
    after = draw(st.lists(clean, max_size=6))
    if draw(st.integers(0, 3)) == 0:
        after.insert(draw(st.integers(0, len(after))), draw(junk))
    return [*(a for p in before for a in p), *([word] if word else []), *(a for p in after for a in p)]


@pytest.mark.parametrize("name", sorted(COMMANDS))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_what_the_fast_parser_accepts_typer_reads_the_same(name: str, data: st.DataObject) -> None:
    args = data.draw(_argv(name))
    parsed = parse(args)
    if parsed is None:
        return  # typer's to parse: nothing assumed
    fast, slow = _both(args)
    assert fast == slow
    assert fast[0] == 0 and len(fast[1]) == 1  # the body ran once, under both


ACCEPTED = [
    ["check", STACK],
    ["check"],
    ["--repo", "r", "check", "a", "b+c", "--strict", "--format=json", "--format", "sarif", "--all"],
    ["check", STACK, "--ignore", "model-facts-missing", "--ignore=a,b", "--select", "x"],
    ["lint", "--select=model-facts-missing,undeclared-conflict", "--ignore", "x"],
    ["render", STACK, "--ignore", "model-facts-missing"],
    ["lint", "--no-cache", "--combinations", "pairs", "--to-release=0.33.0", "--sources", "--vllm-version", "0.30.0"],
    ["render", STACK, "--print", "--target", "script", "--target=env,k8s", "--out", "build/x", "--debug"],
    ["render", "--role", "decode", "a", "--explain", "--repo=."],
    ["show", "a", "b", "--role=", "--format", "json"],
    ["explain", STACK],
    ["explain", STACK, "max_num_seqs", "--role", "decode", "--format", "json"],
    ["--debug", "--no-cache", "list", "--format", "json", "--repo", "/r"],
]


@pytest.mark.parametrize("args", ACCEPTED, ids=" ".join)
def test_plain_argument_lists_are_parsed_fast_and_as_typer_reads_them(args: list[str]) -> None:
    assert parse(args) is not None
    fast, slow = _both(args)
    assert fast == slow


DECLINED = [
    [],
    ["--repo", "r"],
    ["check", "--help"],
    ["check", STACK, "-h"],
    ["--help", "check"],
    ["check", "--", STACK],
    ["check", "--format"],
    ["check", "--format", "-x"],
    ["check", "--strict=yes"],
    ["check", "--no-such-option"],
    ["check", "-x"],
    ["check", "-"],
    ["explain"],
    ["explain", "a", "b", "c"],
    ["list", "extra"],
    ["render", "--target", "--print"],
    ["--version", "check"],
    ["check", STACK, "--repo"],
    ["--repo", "-r", "check"],
    ["flags", "prefix"],
    ["nosuch"],
]


@pytest.mark.parametrize("args", DECLINED, ids=" ".join)
def test_anything_unsure_is_left_to_typer(args: list[str]) -> None:
    assert parse(args) is None
    with _recording() as calls:
        assert run_fast(args) is None
    assert calls == []


def test_a_completion_request_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_PROFILEKIT_COMPLETE", "bash_complete")
    assert run_fast(["check", STACK]) is None


# ---- the same exit codes and messages ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raises", "code"), [(KeyboardInterrupt(), 130), (_Stop("boom"), 3), (BrokenPipeError(), 141)], ids=repr
)
def test_an_exception_in_a_body_ends_alike_under_both(
    raises: BaseException, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    fast, slow = (_run_case(run, raises, capsys) for run in (run_fast, run_typer))
    assert fast == slow
    assert fast[0] == code


def _run_case(
    run: Callable[[list[str]], int | None], raises: BaseException, capsys: pytest.CaptureFixture[str]
) -> tuple[Any, ...]:
    capsys.readouterr()
    with _recording(raises):
        code = run(["check", STACK])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


ERRORS = [
    ["check", "no-such-stack"],
    ["check", STACK, "--format", "bad"],
    ["render", STACK, "--print", "--role", "nope"],
    ["render", STACK, "--target", "nope"],
    ["explain", STACK, "no_such_option"],
    ["show", STACK, "--format", "yaml"],
    ["lint", "--combinations", "some"],
    ["list", "--format", "x"],
]


@pytest.mark.parametrize("args", ERRORS, ids=" ".join)
def test_an_error_reads_the_same_from_the_fast_path(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--no-cache", "--repo", str(REPO_ROOT), *args]
    assert parse(args) is not None
    results = []
    for run in (run_cli, run_typer):
        capsys.readouterr()
        code = run(list(args))
        captured = capsys.readouterr()
        results.append((code, captured.out, captured.err))
    assert results[0] == results[1]
    assert results[0][0] == 2 or "error" in results[0][2]


# ---- a cold run does not import typer ----------------------------------------------------------------------


def _imported(args: list[str], cache: Path) -> tuple[int, list[str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPROFILEIMPORTTIME", "_PROFILEKIT_COMPLETE")}
    env["PROFILEKIT_CACHE_DIR"] = str(cache)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "profilekit", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    return done.returncode, [line.rsplit("|", 1)[-1].strip() for line in lines[1:]]


COLD = [["check", STACK], ["render", STACK, "--print"], ["lint"], ["show", STACK]]


@pytest.mark.parametrize("args", COLD, ids=" ".join)
def test_a_cold_hot_command_does_not_import_typer(args: list[str], tmp_path: Path) -> None:
    code, names = _imported(args, tmp_path / "empty-cache")
    assert code in (0, 1)
    assert "profilekit.session" in names  # the command ran, it was not answered from a cache
    assert "profilekit.cli.fastpath" in names
    assert not [n for n in names if n.split(".")[0] in ("typer", "click")]


def test_a_hot_command_asking_for_help_gets_typer(tmp_path: Path) -> None:
    code, names = _imported(["check", "--help"], tmp_path / "empty-cache")
    assert code == 0
    assert "typer" in names
