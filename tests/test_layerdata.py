"""layerdata.py against pydantic itself: the fast validator refuses exactly what the models refuse, and builds
what they build. A valid file is never seen by pydantic, so any difference would change what a run does.

Raw data is what a TOML reader gives (dict, list, str, int, float, bool, datetime, date, time; and None, which
a caller could pass), generated near the schema's edges: right and wrong types at every level, extra keys,
names that match a pattern and names that just miss it ("FOO\\n", unicode letters, '@', the 254th character).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from profilekit import layerdata, models
from tests.conftest import MakeRepo

EXAMPLES = int(os.environ.get("PROFILEKIT_LAYERDATA_EXAMPLES", "300"))

# names that pass or just fail one of the patterns (role, env, source, reference, capability, Secret name and
# key, sbatch word); no lone surrogates: a TOML reader never gives one
NAMES = [
    *("a", "A", "_", "_x", "FOO", "FOO_1", "x.y", "x-y", "a.b-c", "01:00:00", "gpu,cpu", "a+b", "Plat"),
    *("site/h100", "plat:base", "plat:site/h100", "@cap", "@", "@-x", "platform"),
    *("", " ", "FOO\n", "a\n", "\nfoo", "-x", ".x", "1abc", "é", "Ωmega", "a b", "a=b", "ab@"),
    *("site//x", "/x", "x/", "Plat:x", "x:y:z", "a..b", "a-", "a.", "a" * 253, "a" * 254, "b." * 126 + "b"),
]
names = st.one_of(st.sampled_from(NAMES), st.text(alphabet="aZ09_.-@:/ \né,", max_size=6))
texts = st.one_of(
    st.sampled_from(["", "x", "vllm/vllm-openai:v0.33.0", "FOO\n"]),
    st.text(max_size=4).filter(lambda text: not any("\ud800" <= char <= "\udfff" for char in text)),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([0.0, 1.0, -1.0, 1.5, float("inf")]),
    names,
    st.datetimes(max_value=datetime.datetime(2100, 1, 1)),
    st.dates(),
    st.times(),
)
anything = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3), max_leaves=6
)


GOOD = st.sampled_from(["a", "FOO", "_x", "x.y", "prefill", "a.b-c", "plat", "site/h100", "plat:base"])
# what a mistake puts in place of a value: each TOML type, the values a strict validator must tell apart (1 and
# True, 1.0 and 1, "" and a missing key), tables that are and are not secrets, and the names of NAMES
MISTAKES = st.one_of(
    st.sampled_from([1, 0, 2, 1.0, 1.5, True, False, "1", "", "true", None, [], {}, ["x"], [1], [""], [[]]]),
    st.sampled_from([{"secret": True}, {"secret": 1}, {"secret": False}, {"secret": True, "x": 1}, {"x": 1}]),
    st.sampled_from([datetime.datetime(2024, 1, 1, 12, 0), datetime.date(2024, 1, 1), datetime.time(12, 0)]),
    st.sampled_from(NAMES),
    anything,
)


# a written name made one step wrong: each crosses the edge of at least one pattern
MISSES = st.sampled_from(
    [
        lambda name: name + "\n",
        lambda name: "@" + name,
        lambda name: "-" + name,
        lambda name: name + "é",
        lambda name: name + " ",
        lambda name: name.upper(),
        lambda name: "plat:" + name,
        lambda name: name + "/",
        lambda name: "",
        lambda name: (name or "a") * (254 // max(len(name), 1) + 1),
    ]
)


def mistake(draw: st.DrawFn) -> Any:
    return copy.deepcopy(draw(MISTAKES))  # a copy: a later mistake may go inside it


def right(names: st.SearchStrategy[str] | None = None) -> dict[str, st.SearchStrategy[Any]]:
    """The files' tables with values of the right types: with `names`, every name is drawn from it (and may
    miss its pattern); without, each is a valid name of its kind, so that one mistake is the only one."""

    def valid(*good: str) -> st.SearchStrategy[str]:
        return st.sampled_from(good) if names is None else names

    text = texts
    env_name, role_name = valid("FOO", "_x", "A1"), valid("prefill", "a.b-c", "0")
    ref, capability = valid("base", "site/h100", "plat:base", "@kv"), valid("kv", "a.b-c")
    source_name, secret_name = valid("plat", "a-1"), valid("hf", "a.b", "a" * 253)
    secret_key, sbatch = valid("hf.token", "K"), valid("gpu", "01:00:00")
    optional = st.none() | texts
    nonempty = text.filter(bool) if names is None else text
    refs = st.lists(ref, max_size=3)
    secret = st.fixed_dictionaries({"secret": st.just(True)})
    env = st.dictionaries(env_name, st.one_of(text, secret), max_size=3)
    serve = st.dictionaries(GOOD if names is None else names, anything, max_size=3)
    role = st.fixed_dictionaries(
        {}, optional={"serve": serve, "env": env, "command": st.none() | st.lists(text, min_size=1, max_size=2)}
    )
    extends = st.lists(ref.filter(lambda name: not name.startswith("@")), max_size=3)
    provides = st.lists(capability, max_size=2)
    meta = {"description": text, "extends": extends, "group": optional, "provides": provides, "conflicts": refs}
    meta |= {"requires": refs, "abstract": st.booleans(), "unset": st.lists(text, max_size=2)}
    layer = {
        "layer": st.fixed_dictionaries({}, optional=meta),
        "model": st.fixed_dictionaries({}, optional={"architecture": optional, "config": optional}),
        "serve": serve,
        "env": env,
        "roles": st.dictionaries(role_name, role, max_size=2),
    }
    word = st.none() | sbatch
    k8s = {"image": optional, "images": st.dictionaries(role_name, text, max_size=2)}
    k8s |= {"secret_name": st.none() | secret_name, "secret_keys": st.dictionaries(env_name, secret_key, max_size=2)}
    render = {
        "templates": optional,
        "k8s": st.fixed_dictionaries({}, optional=k8s),
        "slurm": st.fixed_dictionaries({}, optional={"partition": word, "time": word, "account": word}),
    }
    config = {
        "vllm": st.fixed_dictionaries({}, optional={"version": optional}),
        "lint": st.fixed_dictionaries(
            {}, optional={"stacks": st.lists(text, max_size=2), "combinations": st.sampled_from(COMBINATIONS)}
        ),
        "render": st.fixed_dictionaries({}, optional=render),
        "sources": st.dictionaries(source_name, st.fixed_dictionaries({"git": nonempty, "rev": nonempty}), max_size=2),
    }
    return {"layer": st.fixed_dictionaries({}, optional=layer), "config": st.fixed_dictionaries({}, optional=config)}


COMBINATIONS = ["none", "pairs", "all"]


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `value` (tables and arrays), `value` itself first; not inside a `serve`
    value, which may be anything (a mistake there would change nothing but leave fewer for the schema)."""
    places = [path]
    serve = path[-2:-1] == ("serve",)
    if isinstance(value, dict) and not serve:
        for key, item in value.items():
            places += _places(item, (*path, key))
    elif isinstance(value, list) and not serve:
        for index, item in enumerate(value):
            places += _places(item, (*path, index))
    return places


@st.composite
def near_misses(draw: st.DrawFn, kind: str) -> Any:
    """A file of the right shape with up to two mistakes: a value replaced (by another type, a near-miss
    name or literal), a key renamed (to a name near an edge, or to no string), or an unknown key added."""
    raw = draw(right()[kind])
    for _ in range(draw(st.integers(0, 2))):
        path = draw(st.sampled_from(_places(raw)))
        if not path:
            if draw(st.integers(0, 9)) == 0:  # now and then the whole file is no table
                raw = mistake(draw)
            continue
        parent = raw
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["miss", "miss", "value", "key", "extra"]))
        if action == "miss":  # the string written there, or its key, just outside its pattern
            if isinstance(parent[path[-1]], str):
                parent[path[-1]] = draw(MISSES)(parent[path[-1]])
            elif isinstance(parent, dict) and isinstance(path[-1], str):
                parent[draw(MISSES)(path[-1])] = parent.pop(path[-1])
        elif action == "value" or not isinstance(parent, dict):
            parent[path[-1]] = mistake(draw)
        elif action == "key":
            parent[draw(st.one_of(st.sampled_from(NAMES), scalars))] = parent.pop(path[-1])
        else:
            target = parent[path[-1]] if isinstance(parent[path[-1]], dict) else parent
            target[draw(st.one_of(GOOD, st.sampled_from(NAMES)))] = mistake(draw)
    return raw


layer_files = st.one_of(right(st.one_of(GOOD, st.sampled_from(NAMES)))["layer"], near_misses("layer"))
repo_configs = st.one_of(right(st.one_of(GOOD, st.sampled_from(NAMES)))["config"], near_misses("config"))


def agree(fast: Callable[[object], object], model: type[BaseModel], raw: object) -> bool:
    """Assert the fast validator and `model` agree on `raw`; whether `raw` was valid."""
    got = fast(raw)
    try:
        expected = models.plain(model.model_validate(raw))
    except ValidationError:
        assert got is None, f"pydantic refuses {raw!r}, layerdata accepts it"
        return False
    assert got is not None, f"pydantic accepts {raw!r}, layerdata refuses it"
    # repr too: `==` takes 1 for True, and the same value must be of the same type
    assert (got, repr(got)) == (expected, repr(expected))
    return True


@settings(max_examples=EXAMPLES, deadline=None)
@given(raw=layer_files)
def test_a_layer_file_is_valid_for_layerdata_exactly_when_pydantic_accepts_it(raw: dict[str, Any]) -> None:
    event("valid" if agree(layerdata.layer_file, models.LayerFile, raw) else "invalid")


@settings(max_examples=EXAMPLES, deadline=None)
@given(raw=repo_configs)
def test_profilekit_toml_is_valid_for_layerdata_exactly_when_pydantic_accepts_it(raw: dict[str, Any]) -> None:
    event("valid" if agree(layerdata.repo_config, models.RepoConfig, raw) else "invalid")


# the edges one at a time, each with pydantic's verdict written down: the property test must meet both answers
EDGES: list[tuple[str, Any, bool]] = [
    ("layer", {}, True),
    ("layer", {"env": {"FOO": "1", "TOKEN": {"secret": True}}}, True),
    ("layer", {"env": {"FOO\n": "1"}}, False),
    ("layer", {"env": {"FOO": 1}}, False),
    ("layer", {"env": {"FOO": {"secret": False}}}, False),
    ("layer", {"env": {"FOO": {"secret": 1}}}, True),  # pydantic-core finds a literal by equality: 1 == True
    ("layer", {"env": {"FOO": {"secret": 1.0}}}, True),
    ("layer", {"env": {"FOO": {"secret": 2}}}, False),
    ("layer", {"env": {"FOO": {"secret": True, "default": "x"}}}, False),
    ("layer", {"env": {"FOO": {}}}, False),
    ("layer", {"layer": {"abstract": 1}}, False),
    ("layer", {"layer": {"abstract": True, "group": None}}, True),
    ("layer", {"layer": {"extends": ["@cap"]}}, False),
    ("layer", {"layer": {"requires": ["@cap", "plat:site/h100"]}}, True),
    ("layer", {"layer": {"extends": ["site/h100\n"]}}, False),
    ("layer", {"layer": {"provides": ["@cap"]}}, False),
    ("layer", {"layer": {"description": datetime.date(2024, 1, 1)}}, False),
    ("layer", {"roles": {"prefill": {"command": []}}}, False),
    ("layer", {"roles": {"prefill": {"command": ["run"], "serve": {"port": 1}}}}, True),
    ("layer", {"roles": {"é": {}}}, False),
    ("layer", {"roles": {"a": {"other": 1}}}, False),
    ("layer", {"serve": {"when": datetime.time(1, 2)}, "model": {"architecture": "X"}}, True),
    ("layer", {"model": {"architecture": 1}}, False),
    ("layer", {"extra": 1}, False),
    ("layer", [], False),
    ("config", {}, True),
    ("config", {"lint": {"combinations": "all", "stacks": ["a+b"]}}, True),
    ("config", {"lint": {"combinations": "Pairs"}}, False),
    ("config", {"render": {"k8s": {"secret_name": "a" * 253}}}, True),
    ("config", {"render": {"k8s": {"secret_name": "a" * 254}}}, False),
    ("config", {"render": {"k8s": {"secret_name": "A"}}}, False),
    ("config", {"render": {"k8s": {"secret_keys": {"TOKEN": "hf.token"}, "images": {"r": "img"}}}}, True),
    ("config", {"render": {"k8s": {"secret_keys": {"TOKEN": "hf token"}}}}, False),
    ("config", {"render": {"slurm": {"time": "01:00:00", "partition": "gpu,cpu"}}}, True),
    ("config", {"render": {"slurm": {"time": "1 hour"}}}, False),
    ("config", {"sources": {"platform": {"git": "x", "rev": "v1"}}}, True),
    ("config", {"sources": {"platform": {"git": "", "rev": "v1"}}}, False),
    ("config", {"sources": {"platform": {"git": "x"}}}, False),
    ("config", {"sources": {"Platform": {"git": "x", "rev": "v1"}}}, False),
    ("config", {"vllm": {"version": 0.33}}, False),
]


@pytest.mark.parametrize(("kind", "raw", "valid"), EDGES, ids=[f"{e[0]}-{i}" for i, e in enumerate(EDGES)])
def test_each_edge_has_pydantic_s_verdict(kind: str, raw: Any, valid: bool) -> None:
    if kind == "layer":
        assert agree(layerdata.layer_file, models.LayerFile, raw) is valid
    else:
        assert agree(layerdata.repo_config, models.RepoConfig, raw) is valid


def _model_classes() -> list[type[BaseModel]]:
    return [
        value
        for value in vars(models).values()
        if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel
    ]


@pytest.mark.parametrize("model", _model_classes(), ids=lambda m: m.__name__)
def test_each_model_has_a_plain_class_of_the_same_fields_and_defaults(model: type[BaseModel]) -> None:
    plain = getattr(layerdata, model.__name__)
    assert [f.name for f in dataclasses.fields(plain)] == list(model.model_fields)
    required = [name for name, info in model.model_fields.items() if info.is_required()]
    missing = dataclasses.MISSING
    assert [f.name for f in dataclasses.fields(plain) if f.default is missing and f.default_factory is missing] == (
        required
    )
    if not required:
        assert models.plain(model()) == plain()


ROOT = Path(__file__).resolve().parents[1]
CHECK = """
import sys
from pathlib import Path
from profilekit.errors import FindingsError
from profilekit.session import Session
session = Session.open(repo=Path(sys.argv[1]), vllm_version=None)
try:
    session.check(session.stack(sys.argv[2]))
except FindingsError as exc:
    print(*(f.message for f in exc.findings), sep=chr(10))
print(sorted(name for name in ("pydantic", "profilekit.models") if name in sys.modules))
"""


def _library_check(root: Path, spec: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHECK, str(root), spec], capture_output=True, text=True, check=False)


def test_checking_the_example_repository_never_imports_pydantic() -> None:
    """The example repository's files are valid: loading, composing and checking a stack reads them with
    layerdata alone (typer imports pydantic on its own, so this is the library, not the command)."""
    done = _library_check(ROOT, "nemotron-replayssm")
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr[-2000:]


def test_an_invalid_layer_is_explained_by_pydantic(make_repo: MakeRepo) -> None:
    """The subprocess above is not blind: a layer layerdata refuses brings pydantic in for its findings."""
    root = make_repo({"bad.toml": '[serve]\nmodel = "m"\n[env]\n"FOO-1" = "x"\n'})
    done = _library_check(root, "bad")
    assert (done.returncode, done.stdout) == (
        0,
        "env.FOO-1: 'FOO-1' is not a valid environment variable name: letters, digits and '_', "
        "not starting with a digit\n['profilekit.models', 'pydantic']\n",
    ), done.stderr[-2000:]
