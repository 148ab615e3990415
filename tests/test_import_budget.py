"""The import budget of each command (`python -X importtime`): the set of modules a command loads cannot grow
silently. Start-up is most of what a short command costs (README, Performance), so each command may load only
the heavy libraries it uses: no pydantic, TOML reader or rule modules for `--help`, no jinja2 outside `render`,
no tomlkit outside the commands that write TOML, no typer for the hot commands (`cli.fastpath` parses them),
and a ceiling on how many modules it loads in all.

Every command is measured without the cache (`--no-cache`): what a first run on a new machine loads. A repeat
run answered from the cache is measured apart: it may load none of the libraries at all.

The ceilings are the counts measured when the test was written (profilekit's own modules exactly as many as
then, plus a few; all modules with a margin for other releases of the libraries). A change that crosses one
either imports something lazily again, or raises the ceiling here with the reason in its commit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STACK = "nemotron-replayssm"
HEAVY = frozenset({"pydantic", "jinja2", "tomlkit", "tomli", "packaging", "typer"})

# command -> (heavy libraries it may load, ceiling on profilekit's modules, ceiling on all modules); profilekit's
# ceilings grew by 3 with the cache: profilekit.cache, .record and .replay decide whether a run may be answered.
# The hot commands lost typer (and with it about 90 modules) to cli.fastpath; `flags` still parses with typer, and
# loads cli.fastpath (which declines it) and cli.common under cli.app: one module more than before. They lost
# pydantic (about 150 modules) to profilekit.load.layerdata, which validates a valid layer without it: pydantic is
# loaded only to word what is wrong with an invalid one (tests/test_layerdata.py). profilekit.records (the
# classes every run defines, built without compiling five methods each) is one module more for every command.
# One package per pipeline stage (tomlio, load, compose, render, lint, report, cli.run, cli.commands) adds each
# package's __init__ and splits compose.py into its floors: 1 to 12 modules more for the commands that compose, no
# library more; explain and show no longer load the rule modules (the layer-name checks moved to compose.names).
# Issue 25 adds rule modules, no library: rules.wiring (the wiring between roles), compose.overrides and
# rules.layering (override-order), and for the commands that report findings rules.selection and rules.outside
# (`select`/`ignore` know every rule id): 3 to 5 modules more. Issue 26 adds cli.ending to every command (how a
# run ends on Ctrl-C, SIGTERM and a closed pipe, and the write that notices a closed pipe): one module more.
# Issue 27 adds profilekit.hardware (the GPU catalogue a `[hardware] gpu` names) to every command that opens a
# repository: one module more. Issue 27 item 3 adds rules.platforms (what the declared GPU lets vLLM start) to
# the commands that run the rules: `check` and `lint` had the room, `render` one module more. Issue 32 adds
# rules.capacity to the commands that run the rules, and the capacity stage (capacity, .weights, .memory, .kv,
# .plan) where a checked role declares a GPU: `lint` of this repository (its lint stacks declare H100s) five
# modules more, `render` one (and one of issue 27 it lacked room for). vllm.modelshape (the one reading of a
# config.json, split out of rules.modelcfg so that the capacity stage shares it) is one module more for each.
# capacity.mamba (a hybrid model's Mamba state) is one more where the capacity stage loads (`lint`), and the
# standard library's math (the lcm of vLLM's hybrid block alignment) one more in all. Roles larger than one node
# (issue 28): compose.shape (a role's nodes) and rules.multinode wherever the rules run, and render.nodes (each node's
# command) in `render`: two modules more, three for `render`.
BUDGETS: list[tuple[list[str], frozenset[str], int, int]] = [
    # after --repo and --no-cache typer answers them (a bare --version or --help is answered without it)
    (["--version"], frozenset({"typer"}), 14, 200),
    (["--help"], frozenset({"typer"}), 14, 200),
    (["flags", "prefix"], frozenset({"pydantic", "tomli", "typer"}), 27, 330),
    (["list"], frozenset({"tomli", "packaging"}), 95, 200),
    (["check", STACK], frozenset({"tomli", "packaging"}), 98, 205),
    (["lint"], frozenset({"tomli", "packaging"}), 109, 214),
    (["explain", STACK, "max_num_seqs"], frozenset({"tomli", "packaging"}), 80, 200),
    (["show", STACK], frozenset({"tomli", "tomlkit", "packaging"}), 82, 215),
    (["render", STACK, "--print"], frozenset({"tomli", "jinja2", "packaging"}), 108, 265),
]


def imported(args: list[str], cache: Path | None = None) -> list[str]:
    """The modules `profilekit ARGS` imports, in order (from `-X importtime`); with no `cache`, `--no-cache`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPROFILEIMPORTTIME"}
    if cache is not None:
        env["PROFILEKIT_CACHE_DIR"] = str(cache)
    options = ["--repo", str(ROOT)] if cache is not None else ["--repo", str(ROOT), "--no-cache"]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "profilekit", *options, *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    return [line.rsplit("|", 1)[-1].strip() for line in lines[1:]]  # the first line is the header


@pytest.mark.parametrize(("args", "allowed", "own", "total"), BUDGETS, ids=[" ".join(b[0]) for b in BUDGETS])
def test_a_command_imports_only_what_it_uses(args: list[str], allowed: frozenset[str], own: int, total: int) -> None:
    names = imported(args)
    heavy = sorted({name.split(".")[0] for name in names} & (HEAVY - allowed))
    assert heavy == [], f"`profilekit {' '.join(args)}` imports {heavy}: import them where they are used"
    mine = [name for name in names if name.split(".")[0] == "profilekit"]
    assert len(mine) <= own, f"{len(mine)} profilekit modules (budget {own}): {mine}"
    assert len(names) <= total, f"{len(names)} modules in all (budget {total})"


def test_the_budget_sees_a_heavy_import() -> None:
    """The parser of `-X importtime` finds what a command loads (a budget that sees nothing passes anything)."""
    names = imported(["render", STACK, "--print"])
    assert "jinja2" in names
    assert "profilekit.rules.engine" in names


REPEATED = [["check", STACK], ["lint"], ["list"], ["show", STACK], ["explain", STACK, "max_num_seqs"]]
REPEATED += [["render", STACK, "--print"], ["render", STACK, "--out", "{out}"]]
# what a repeat run may load at most: the interpreter's start-up, json and hashlib, the cache's own modules (about
# 95), and for a render into a folder the writer's pathlib, tempfile and dataclasses (about 115)
WARM_TOTAL = 125


@pytest.mark.parametrize("args", REPEATED, ids=[" ".join(a) for a in REPEATED])
def test_a_repeat_run_loads_no_library(args: list[str], tmp_path: Path) -> None:
    """Answered from the cache: no typer, click, pydantic, jinja2 or TOML reader, and no rule module."""
    args = [a.replace("{out}", str(tmp_path / "out")) for a in args]
    first = imported(args, tmp_path / "cache")
    assert "profilekit.session" in first  # the first run was made, not answered
    names = imported(args, tmp_path / "cache")
    libraries = sorted({name.split(".")[0] for name in names} & (HEAVY | {"typer", "click", "rich"}))
    assert libraries == [], f"a repeat of `profilekit {' '.join(args)}` imports {libraries}"
    assert not [n for n in names if n.startswith(("profilekit.rules", "profilekit.vllm", "profilekit.cli.app"))]
    assert len(names) <= WARM_TOTAL, f"{len(names)} modules in all (budget {WARM_TOTAL}): {names}"
