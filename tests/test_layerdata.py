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

from profilekit.load import layerdata, models
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


# A valid file first, every table and field present with realistic values (some at an edge that is still
# valid: "0" as a role name, 253 characters in a Secret name), then mistakes. A property that mutates anything
# anywhere spreads its examples too thin: a rule broken in one place for one kind of value (`abstract = 1`, an
# '@' in `extends`, `command = []`) is met once in thousands. So a mistake is chosen in three steps, each
# uniform over a short list: its kind, then the place of the schema it fits (a field of a model, whichever
# table or index it is at), then its value; and each example tries many mutants of its valid file.
MUTANTS = 25  # mutants per example: the valid file with one or two mistakes each

ENV_NAMES = ["HF_TOKEN", "VLLM_LOGGING_LEVEL", "CUDA_VISIBLE_DEVICES", "NCCL_DEBUG", "_PROFILE", "UCX_TLS"]
ENV_VALUES = ["INFO", "0,1,2,3", "", "hf_abc", "a=b c", "é\n"]  # free text
ROLE_NAMES = ["prefill", "decode", "router", "kv.cache-1", "0", "proxy_2"]
LAYERS = ["base", "llama-8b", "fp8", "v0.8", "site/h100", "platform:base", "platform:site/h100", "_common"]
CAPABILITIES = ["kv-offload", "fp8", "spec.decode", "0"]
REFERENCES = [*LAYERS, *(f"@{capability}" for capability in CAPABILITIES)]
SERVE = {
    "model": "meta-llama/Llama-3.1-8B-Instruct",
    "tensor-parallel-size": 2,
    "enable-prefix-caching": True,
    "gpu-memory-utilization": 0.9,
    "kv-transfer-config": {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
    "api-key": {"secret": True},
    "served-model-name": ["llama", "llama-8b"],
    "max-model-len": 8192,
    "FOO\n": None,  # serve's keys are vLLM's: any string
    "when": datetime.time(1, 2),
}


def _pick(values: list[Any], size: int = 0) -> st.SearchStrategy[Any]:
    """A realistic value, or (with `size`) a non-empty list of up to `size` of them: a mistake needs a place."""
    one = st.sampled_from(values)
    return one if not size else st.lists(one, min_size=1, max_size=size)


_serve = st.one_of(
    st.lists(st.sampled_from(list(SERVE)), min_size=1, max_size=4, unique=True).map(
        lambda keys: {key: copy.deepcopy(SERVE[key]) for key in keys}
    ),
    st.dictionaries(names, anything, min_size=1, max_size=3),
)
_env = st.dictionaries(_pick(ENV_NAMES), _pick(ENV_VALUES) | st.just({"secret": True}), min_size=1, max_size=3)
_meta = {
    "description": _pick(["", "Llama 3.1 8B on one H100", "disaggregated prefill/decode", "é — 😀"]),
    "extends": _pick([name for name in REFERENCES if not name.startswith("@")], 3),
    "group": _pick(["model", "site", "", "hardware"]),
    "provides": _pick(CAPABILITIES, 2),
    "conflicts": _pick(REFERENCES, 2),
    "requires": _pick(REFERENCES, 2),
    "abstract": st.booleans(),
    "unset": _pick(["serve.max-model-len", "env.NCCL_DEBUG", "serve.kv-transfer-config.kv_role", "roles.decode"], 2),
    "ignore": st.dictionaries(
        _pick(["model-facts-missing", "undeclared-conflict", "no-such-rule", ""]),
        _pick(["served from a mirror", " x ", "é — 😀", "\tthe checks run on staging"]),
        min_size=1,
        max_size=2,
    ),
}
_role = {"serve": _serve, "env": _env, "command": _pick(["python", "-m", "router", "--port=8000", "a b", ""], 3)}
VALID_LAYERS = st.fixed_dictionaries(
    {
        "layer": st.fixed_dictionaries(_meta),
        "model": st.fixed_dictionaries(
            {"architecture": _pick(["LlamaForCausalLM", "NemotronHForCausalLM", ""]), "config": _pick(["c.json", ""])}
        ),
        "serve": _serve,
        "env": _env,
        "roles": st.dictionaries(_pick(ROLE_NAMES), st.fixed_dictionaries(_role), min_size=1, max_size=2),
    }
)
_k8s = {
    "image": _pick(["vllm/vllm-openai:v0.8.5", ""]),
    "images": st.dictionaries(_pick(ROLE_NAMES), _pick(["ghcr.io/acme/router:1.2", ""]), min_size=1, max_size=2),
    "secret_name": _pick(["hf-secrets", "llm.prod", "0", "a" * 253]),
    "secret_keys": st.dictionaries(_pick(ENV_NAMES), _pick(["hf.token", "HF_TOKEN", "-", "k" * 253]), min_size=1),
}
_slurm = {
    "partition": _pick(["gpu", "h100,a100"]),
    "time": _pick(["01:00:00", "2-00", "90"]),
    "account": _pick(["ml+1"]),
}
_source = {
    "git": _pick(["https://github.com/acme/p.git", "../platform", " "]),
    "rev": _pick(["v1.2.0", "main", "3f2a"]),
}
VALID_CONFIGS = st.fixed_dictionaries(
    {
        "vllm": st.fixed_dictionaries({"version": _pick(["0.8.5", "0.10.1.1", ""])}),
        "lint": st.fixed_dictionaries(
            {
                "stacks": _pick(["base+site/h100", "llama-8b", ""], 2),
                "combinations": _pick(["none", "pairs", "all"]),
                "select": _pick(["model-facts-missing", "undeclared-conflict", ""], 2),
                "ignore": _pick(["model-facts-missing", "x"], 2),
            }
        ),
        "render": st.fixed_dictionaries(
            {
                "templates": _pick(["templates", "platform:templates"]),
                "k8s": st.fixed_dictionaries(_k8s),
                "slurm": st.fixed_dictionaries(_slurm),
            }
        ),
        "sources": st.dictionaries(
            _pick(["platform", "site-configs", "0x", "a_b"]), st.fixed_dictionaries(_source), min_size=1, max_size=2
        ),
        "models": st.dictionaries(
            _pick(["Qwen/Qwen3-0.6B", "acme/llm", "", "a b"]),
            st.fixed_dictionaries({"config": _pick(["models/q/config.json", "models/q", "x"])}),
            min_size=1,
            max_size=2,
        ),
    }
)

# the tables keyed by a name (a role, an environment variable, a source): their keys are one place, written '*'
NAMED = frozenset({"env", "roles", "images", "secret_keys", "sources", "models"})
# the strings checked beyond their type (pattern, length, literal); a key of a NAMED table is checked too
CHECKED = {
    ("layer", "extends", "#"),
    ("layer", "provides", "#"),
    ("layer", "conflicts", "#"),
    ("layer", "requires", "#"),
    ("lint", "combinations"),
    ("render", "k8s", "secret_name"),
    ("render", "k8s", "secret_keys", "*"),
    ("render", "slurm", "partition"),
    ("render", "slurm", "time"),
    ("render", "slurm", "account"),
    ("sources", "*", "git"),
    ("sources", "*", "rev"),
    ("models", "*", "config"),
    ("layer", "ignore", "model-facts-missing"),
    ("layer", "ignore", "undeclared-conflict"),
    ("layer", "ignore", "no-such-rule"),
    ("layer", "ignore", ""),
}
# a checked string made one step wrong: each crosses the edge of at least one pattern ("\n" only its end: `$`
# matches before a final newline, fullmatch does not), a length or a literal
MISSES: list[Callable[[str], str]] = [
    lambda name: name + "\n",
    lambda name: "\n" + name,
    lambda name: "@" + name,
    lambda name: "@kv",
    lambda name: "-" + name,
    lambda name: name + "é",
    lambda name: name + " ",
    lambda name: name + "_",
    lambda name: name.upper(),
    lambda name: name.capitalize(),
    lambda name: "plat:" + name,
    lambda name: name + "/",
    lambda name: "",
    lambda name: name + "a" * (253 - len(name)),
    lambda name: name + "a" * (254 - len(name)),
]
TYPES = {  # a value of each type a TOML reader gives (and None, which a caller could pass)
    "bool": [True, False],
    "int": [1, 0, 2],
    "float": [1.0, 0.0, 1.5],
    "str": ["x", "1", "true", ""],
    "none": [None],
    "list": [[], ["x"], [1]],
    "table": [{}, {"x": "1"}, {"secret": True}],
    "datetime": [datetime.datetime(2024, 1, 1, 12, 0), datetime.date(2024, 1, 1), datetime.time(12, 0)],
}
# the types a strict validator is most likely to let through in place of each (pydantic's lax mode would)
CONFUSED = {
    "bool": ["int", "float", "str"],
    "int": ["bool", "float"],
    "float": ["int", "bool"],
    "str": ["none", "int", "bool", "datetime", "list"],
    "none": ["str", "list", "table"],
    "list": ["str", "table", "none"],
    "table": ["list", "str", "none"],
    "datetime": ["str"],
}
SECRETS = [  # what stands where `{ secret = true }` does
    {"secret": False},
    {"secret": "yes"},
    {"secret": "true"},
    {"secret": True, "x": 1},
    {"secret": 1},
    {"secret": 1.0},
    {"secret": 0},
    {"secret": 2},
    {"secret": None},
    {"secret": [True]},
    {"Secret": True},
    {},
    True,
    "secret",
]
EXTRA_KEYS = ["extend", "Abstract", "comand", "secrets", "default", "x", "", "FOO\n", 1, None]
KINDS = {
    "layer": ["type", "name", "list", "extra", "secret", "scalar", "drop"],
    "config": ["type", "name", "list", "extra", "scalar", "drop"],
}


def _type_of(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, datetime.date | datetime.time):
        return "datetime"
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list"}.get(type(value), "table")


def _walk(value: Any, path: tuple[Any, ...] = (), shape: tuple[Any, ...] = ()) -> Any:
    """(path, shape, value) of `value` and of every value inside it: the shape is the path with '*' for a name in
    a NAMED table and '#' for an index; not inside a `serve` table, whose values may be anything."""
    yield path, shape, value
    if shape[-1:] == ("serve",):
        return
    if isinstance(value, dict):
        named = shape[-1:] != () and shape[-1] in NAMED
        for key, item in value.items():
            yield from _walk(item, (*path, key), (*shape, "*" if named else key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, (*path, index), (*shape, "#"))


def _places(raw: Any, kind: str) -> dict[tuple[Any, ...], list[tuple[Any, ...]]]:
    """Where a mistake of `kind` fits in `raw`: the paths to it, by shape (a "key" shape for a name that is a key)."""
    places: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for path, shape, value in _walk(raw):
        if kind == "type":
            fits = path != ()
        elif kind == "name":
            if shape[-1:] == ("*",) and isinstance(path[-1], str):  # not a key an earlier mistake made no string
                places.setdefault(("key", *shape), []).append(path)
            fits = shape in CHECKED and isinstance(value, str)
        elif kind == "list":
            fits = isinstance(value, list)
        elif kind in ("extra", "scalar"):
            fits = isinstance(value, dict)
        elif kind == "secret":
            fits = shape in (("env", "*"), ("roles", "*", "env", "*"))
        else:  # drop
            fits = path != () and shape[-1] not in ("#", "*")
        if fits:
            places.setdefault(shape, []).append(path)
    return places


def _at(raw: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        raw = raw[step]
    return raw


@st.composite
def _mutate(draw: st.DrawFn, raw: Any, kinds: list[str]) -> tuple[Any, str]:
    """`raw` with one mistake (changed in place, or the whole file replaced), and what it was."""
    kind = draw(st.sampled_from(kinds))
    places = _places(raw, kind)
    if not places:  # an earlier mistake took its place away
        return raw, f"{kind} nowhere"
    shape = draw(st.sampled_from(list(places)))
    path = draw(st.sampled_from(places[shape]))
    value = _at(raw, path)
    parent = _at(raw, path[:-1]) if path else None
    if kind == "type":  # a value of another type, a likely confusion half of the time
        was = _type_of(value)
        others = [name for name in TYPES if name != was]
        value = copy.deepcopy(
            draw(st.sampled_from(TYPES[draw(st.sampled_from(CONFUSED[was]) | st.sampled_from(others))]))
        )
    elif kind == "name" and shape[0] == "key":  # a name that is a key
        parent[draw(st.sampled_from(MISSES))(path[-1])] = parent.pop(path[-1])
        return raw, f"{kind} {shape}"
    elif kind == "name":
        value = draw(st.sampled_from(MISSES))(value)
    elif kind == "list":  # emptied, or one item of the wrong type or one step wrong
        items = value
        if not items or draw(st.integers(0, 2)) == 0:
            items.clear()
        else:
            index = draw(st.integers(0, len(items) - 1))
            item = items[index]
            wrong = draw(st.sampled_from(MISSES))(item) if isinstance(item, str) else None
            if wrong is None or draw(st.booleans()):
                wrong = copy.deepcopy(draw(st.sampled_from([1, True, 1.0, None, [], {}, ["x"], TYPES["datetime"][1]])))
            if draw(st.booleans()):
                items[index] = wrong
            else:
                items.insert(index, wrong)
        return raw, f"{kind} {shape}"
    elif kind == "extra":  # a key no model has (a name one step wrong, in a NAMED table), with a sibling's value
        key = draw(st.sampled_from(EXTRA_KEYS) | st.sampled_from(NAMES))
        sibling = next(iter(value.values()), "x")
        value[key] = copy.deepcopy(sibling) if draw(st.booleans()) else copy.deepcopy(draw(st.sampled_from(SECRETS)))
        return raw, f"{kind} {shape}"
    elif kind == "secret":
        value = copy.deepcopy(draw(st.sampled_from(SECRETS)))
    elif kind == "scalar":  # a table replaced by something else
        value = copy.deepcopy(draw(st.sampled_from([1, True, 1.5, "x", "", None, [], [{}], TYPES["datetime"][0]])))
    else:  # drop: a field left out, its default or a missing required field
        del parent[path[-1]]
        return raw, f"{kind} {shape}"
    if not path:
        return value, f"{kind} {shape}"
    parent[path[-1]] = value
    return raw, f"{kind} {shape}"


@st.composite
def mutants(draw: st.DrawFn, valid: Any, kinds: list[str]) -> tuple[Any, list[str]]:
    """A copy of `valid` with one mistake, or two (the second may hide or undo the first)."""
    raw, made = copy.deepcopy(valid), []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2]))):
        raw, what = draw(_mutate(raw, kinds))
        made.append(what)
    return raw, made


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


def _property(
    fast: Callable[[object], object], model: type[BaseModel], kind: str, valid: Any, data: st.DataObject
) -> None:
    assert agree(fast, model, valid), "the generated file is meant to be valid"
    for _ in range(MUTANTS):
        raw, made = data.draw(mutants(valid, KINDS[kind]), label="mutant")
        for what in made:
            event(what.split(" ")[0])
        event("mutant valid" if agree(fast, model, raw) else "mutant invalid")


@settings(max_examples=EXAMPLES, deadline=None)
@given(valid=VALID_LAYERS, data=st.data())
def test_a_layer_file_is_valid_for_layerdata_exactly_when_pydantic_accepts_it(valid: Any, data: st.DataObject) -> None:
    _property(layerdata.layer_file, models.LayerFile, "layer", valid, data)


@settings(max_examples=EXAMPLES, deadline=None)
@given(valid=VALID_CONFIGS, data=st.data())
def test_profilekit_toml_is_valid_for_layerdata_exactly_when_pydantic_accepts_it(
    valid: Any, data: st.DataObject
) -> None:
    _property(layerdata.repo_config, models.RepoConfig, "config", valid, data)


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
    ("layer", {"layer": {"ignore": {"model-facts-missing": "served from a mirror"}}}, True),
    ("layer", {"layer": {"ignore": ["model-facts-missing"]}}, False),
    ("layer", {"layer": {"ignore": {"model-facts-missing": ""}}}, False),
    ("layer", {"layer": {"ignore": {"model-facts-missing": " \t\n"}}}, False),
    ("layer", {"layer": {"ignore": {"model-facts-missing": True}}}, False),
    ("config", {"lint": {"select": [], "ignore": ["x"]}}, True),
    ("config", {"lint": {"select": "model-facts-missing"}}, False),
    ("config", {"models": {"acme/llm": {"config": "m/config.json"}}}, True),
    ("config", {"models": {"acme/llm": {"config": ""}}}, False),
    ("config", {"models": {"acme/llm": {}}}, False),
    ("config", {"models": {"acme/llm": {"config": "x", "architecture": "X"}}}, False),
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
print(sorted(name for name in ("pydantic", "profilekit.load.models") if name in sys.modules))
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
        "not starting with a digit\n['profilekit.load.models', 'pydantic']\n",
    ), done.stderr[-2000:]
