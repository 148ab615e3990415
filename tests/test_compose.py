"""Composition: linearisation, merge, unset, roles, provenance (DESIGN section 5)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profilekit.compose.index import LayerIndex
from profilekit.compose.merge import compose
from profilekit.compose.model import UNSET
from tests.conftest import MakeRepo, Run


def _stack(root: Path, spec: str):  # type: ignore[no-untyped-def]
    return compose(LayerIndex(root), spec)


def test_linearisation_parents_first_and_first_position_wins(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "a.toml": "[serve]\nmodel = 'm'\n",
            "b.toml": "[layer]\nextends = ['a']\n",
            "c.toml": "[layer]\nextends = ['a', 'b']\n",
            "d.toml": "[layer]\nextends = ['c', 'a']\n",
        }
    )
    assert _stack(root, "d+b").layer_names == ["a", "b", "c", "d"]
    assert _stack(root, "b+d").layer_names == ["a", "b", "c", "d"]


def test_tables_merge_key_by_key_and_scalars_replace(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "base.toml": """
            [serve]
            model = "m"
            served_model_name = ["a", "b"]
            [serve.kv_transfer_config]
            kv_connector = "NixlConnector"
            kv_role = "kv_both"
            kv_connector_extra_config = { backends = ["UCX"], num_threads = 4 }
        """,
            "over.toml": """
            [serve]
            served_model_name = ["c"]
            kv_transfer_config.kv_role = "kv_producer"
            kv_transfer_config.kv_connector_extra_config.num_threads = 8
        """,
        }
    )
    serve = _stack(root, "base+over").roles["serve"].serve
    assert serve["served_model_name"] == ["c"]
    assert serve["kv_transfer_config"] == {
        "kv_connector": "NixlConnector",
        "kv_role": "kv_producer",
        "kv_connector_extra_config": {"backends": ["UCX"], "num_threads": 8},
    }


def test_unset_removes_values_and_keeps_history(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "base.toml": """
            [serve]
            model = "m"
            enable_prefix_caching = true
            kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_both" }
            [env]
            A = "1"
        """,
            "strip.toml": """
            [layer]
            unset = ["serve.enable-prefix-caching", "serve.kv_transfer_config.kv_role", "env.A"]
        """,
            "again.toml": "[serve]\nenable_prefix_caching = false\n",
        }
    )
    role = _stack(root, "base+strip").roles["serve"]
    assert role.serve == {"model": "m", "kv_transfer_config": {"kv_connector": "NixlConnector"}}
    assert role.env == {}
    removed = role.scope.removed[("serve", "enable_prefix_caching")]
    assert removed.value is UNSET
    assert (removed.origin.file, removed.origin.line, removed.origin.key) == (
        "profiles/strip.toml",
        2,
        "layer.unset[0]",
    )
    assert [a.value for a in removed.overridden] == [True]

    again = _stack(root, "base+strip+again").roles["serve"].entry("serve", "enable_prefix_caching")
    assert again is not None
    assert [a.value for a in again.history] == [True, UNSET, False]

    result = run("--repo", root, "explain", "base+strip+again", "serve.enable_prefix_caching")
    assert result.code == 0
    assert result.out == (
        "[serve] serve.enable_prefix_caching = false\n"
        "    set at profiles/again.toml:2:1  (serve.enable_prefix_caching, layer again)\n"
        "    overrides unset from profiles/strip.toml:2:10  (layer.unset[0], layer strip)\n"
        "    overrides true from profiles/base.toml:3:1  (serve.enable_prefix_caching, layer base)\n"
    )


def test_roles_inherit_top_level_then_apply_their_own(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "base.toml": """
            [serve]
            model = "m"
            port = 8000
            [env]
            SHARED = "yes"
        """,
            "pd.toml": """
            [roles.prefill.serve]
            port = 8100
            [roles.decode.serve]
            port = 8200
            [roles.decode.env]
            ONLY_DECODE = "1"
            [roles.proxy]
            kind = "command"
            command = ["router", "--port", "8192"]
            [roles.proxy.env]
            PROXY = "1"

            [roles.decode]
            kind = "vllm"

            [roles.prefill]
            kind = "vllm"
        """,
            "site.toml": "[serve]\nport = 9000\nmax_num_seqs = 8\n",
        }
    )
    stack = _stack(root, "base+pd+site")
    assert list(stack.roles) == ["prefill", "decode", "proxy"]
    assert stack.roles["prefill"].serve == {"model": "m", "port": 8100, "max_num_seqs": 8}
    assert stack.roles["decode"].env == {"SHARED": "yes", "ONLY_DECODE": "1"}
    proxy = stack.roles["proxy"]
    assert not proxy.is_vllm
    assert proxy.command == ["router", "--port", "8192"]
    assert proxy.env == {"PROXY": "1"}  # a command role takes only its own env
    port = stack.roles["prefill"].entry("serve", "port")
    assert port is not None
    assert (port.origin.key, port.origin.line) == ("roles.prefill.serve.port", 2)
    assert [a.value for a in port.overridden] == [8000, 9000]


def test_unset_a_role_removes_it(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "pd.toml": """
            [serve]
            model = "m"
            [roles.prefill.serve]
            port = 1
            [roles.proxy]
            kind = "command"
            command = ["x"]

            [roles.prefill]
            kind = "vllm"
        """,
            "noproxy.toml": "[layer]\nunset = ['roles.proxy']\n",
        }
    )
    assert list(_stack(root, "pd+noproxy").roles) == ["prefill"]


def test_cycle_is_reported_with_the_cycle(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "a.toml": "[layer]\nextends = ['b']\n",
            "b.toml": "[layer]\nextends = ['c']\n",
            "c.toml": "[layer]\nextends = ['a']\n",
        }
    )
    result = run("--repo", root, "show", "a")
    assert result.code == 1
    assert result.err == (
        "profiles/c.toml:2:12: error extends-cycle extends forms a cycle: a -> b -> c -> a\n"
        "    fix: remove one of these `extends` entries\n"
        "1 error, 0 warnings\n"
    )


def test_unknown_layer_on_the_command_line_suggests(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"replayssm.toml": "[serve]\nmodel = 'm'\n"})
    result = run("--repo", root, "show", "replaysm")
    assert result.code == 2
    assert result.err == (
        "profilekit: error: unknown layer 'replaysm' in stack 'replaysm'\n  hint: did you mean 'replayssm'?\n"
    )


def test_unknown_layer_in_extends_is_a_file_finding(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"a.toml": "[layer]\nextends = ['bsae']\n", "base.toml": "[serve]\nmodel = 'm'\n"})
    result = run("--repo", root, "show", "a")
    assert result.code == 1
    assert result.err == (
        "profiles/a.toml:2:12: error unknown-layer layer.extends[0] names no layer: 'bsae'\n"
        "    fix: did you mean 'base'?\n"
        "1 error, 0 warnings\n"
    )


def test_group_and_declared_conflicts(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "base.toml": "[serve]\nmodel = 'm'\n",
            "pd.toml": "[layer]\ngroup = 'kv-path'\n",
            "offload.toml": "[layer]\ngroup = 'kv-path'\nconflicts = ['pd']\nrequires = ['extra']\n",
            "extra.toml": "[env]\nX = '1'\n",
        }
    )
    result = run("--repo", root, "check", "base+pd+offload", "--format", "json")
    assert result.code == 1
    findings = json.loads(result.out)["findings"]
    declared = {"declared-conflict", "group-conflict", "missing-requirement"}
    assert sorted(f["rule"] for f in findings if f["rule"] in declared) == sorted(declared)
    by_rule = {f["rule"]: f for f in findings}
    assert [(loc["file"], loc["line"], loc["key"]) for loc in by_rule["group-conflict"]["locations"]] == [
        ("profiles/offload.toml", 2, "layer.group"),
        ("profiles/pd.toml", 2, "layer.group"),
    ]
    assert by_rule["missing-requirement"]["message"] == (
        "layer 'offload' requires layer 'extra', which is not in the stack"
    )
    # show does not run rules
    assert run("--repo", root, "show", "base+pd+offload").code == 0


def test_abstract_only_stack_is_a_usage_error(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"base.toml": "[layer]\nabstract = true\n", "app.toml": "[serve]\nmodel = 'm'\n"})
    result = run("--repo", root, "render", "base")
    assert result.code == 2
    assert result.err.startswith("profilekit: error: stack 'base' names only abstract layers\n")


# ---- properties -----------------------------------------------------------------------------------

OPTIONS = ["max_num_seqs", "port", "seed", "max_model_len"]
layer_bodies = st.lists(
    st.dictionaries(st.sampled_from(OPTIONS), st.integers(1, 10_000), max_size=4), min_size=1, max_size=5
)


def _write(root: Path, bodies: list[dict[str, int]], *, empty_at: int | None = None) -> list[str]:
    names = []
    for i, body in enumerate(bodies):
        lines = ["# generated", "[serve]", *(f"{k} = {v}" for k, v in body.items())]
        (root / "profiles" / f"l{i}.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        names.append(f"l{i}")
    (root / "profiles" / "empty.toml").write_text("# nothing\n", encoding="utf-8")
    (root / "profiles" / "model.toml").write_text("[serve]\nmodel = 'm'\n", encoding="utf-8")
    names.insert(0, "model")
    if empty_at is not None:
        names.insert(min(empty_at, len(names)), "empty")
    return names


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layer_bodies, st.integers(0, 6))
def test_last_layer_wins_with_its_line(make_repo: MakeRepo, bodies: list[dict[str, int]], empty_at: int) -> None:
    root = make_repo({})
    for old in (root / "profiles").glob("*.toml"):
        old.unlink()
    names = _write(root, bodies)
    role = _stack(root, "+".join(names)).roles["serve"]
    for option in OPTIONS:
        setters = [(i, body) for i, body in enumerate(bodies) if option in body]
        entry = role.entry("serve", option)
        if not setters:
            assert entry is None
            continue
        last_index, last_body = setters[-1]
        assert entry is not None
        assert entry.value == last_body[option]
        assert entry.origin.layer == f"l{last_index}"
        assert entry.origin.line == 3 + list(last_body).index(option)
        assert [a.value for a in entry.overridden] == [body[option] for _, body in setters[:-1]]
    # an empty layer anywhere changes nothing
    with_empty = _write(root, bodies, empty_at=empty_at)
    again = _stack(root, "+".join(with_empty)).roles["serve"]
    assert again.serve == role.serve
    assert {k: e.value for k, e in again.scope.entries.items()} == {k: e.value for k, e in role.scope.entries.items()}


def test_layer_files_round_trip_byte_identical_through_tomlkit() -> None:
    """The base of style-preserving edits: tomlkit writes back exactly what it read."""
    import tomlkit

    from tests.conftest import REPO_ROOT

    files = sorted((REPO_ROOT / "profiles").rglob("*.toml"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert tomlkit.dumps(tomlkit.parse(text)) == text, path


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z_-]{0,8}", fullmatch=True),
        st.one_of(st.integers(), st.booleans(), st.text(max_size=10), st.lists(st.integers(), max_size=3)),
        max_size=6,
    ),
    st.sampled_from(["# c\n", "", "\n\n"]),
)
def test_generated_layers_round_trip_byte_identical(serve: dict[str, object], prefix: str) -> None:
    import tomlkit

    text = prefix + tomlkit.dumps({"serve": serve}) + "  # trailing\n"
    assert tomlkit.dumps(tomlkit.parse(text)) == text
