"""`profilekit set` / `unset`: one key changes, every other byte of the layer file stays as it was.

The commands run in-process against a copy of a real repository; the property at the end edits generated
documents (comments, dotted keys, inline tables, arrays of tables, literal strings, blank lines) and proves
that exactly the edited key's line changes and the document still means what it meant, but for that key.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profilekit.edit.keys import key_argument, parse_value, set_key, unset_key
from tests.conftest import REPO_ROOT, Run


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "profiles", root / "profiles")
    shutil.copy(REPO_ROOT / "profilekit.toml", root / "profilekit.toml")
    return root


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    a, b = before.splitlines(), after.splitlines()
    assert len(a) == len(b), f"lines added or removed:\n{after}"
    return [(x, y) for x, y in zip(a, b, strict=True) if x != y]


def test_set_changes_the_value_on_its_line_and_nothing_else(repo: Path, run: Run) -> None:
    path = repo / "profiles/base.toml"
    path.write_text(path.read_text().replace("port = 8000", "port = 8000   # the API port"), encoding="utf-8")
    before = path.read_text(encoding="utf-8")
    done = run("set", "base", "serve.port", "9000", cwd=repo)
    assert done.code == 0 and done.out == "profiles/base.toml: set serve.port\n", done
    assert changed_lines(before, path.read_text(encoding="utf-8")) == [
        ("port = 8000   # the API port", "port = 9000   # the API port")
    ]


def test_a_literal_string_stays_literal_and_a_float_is_a_float(repo: Path, run: Run) -> None:
    path = repo / "profiles/offload.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "\n[model]\nconfig = 'models/a'\n", encoding="utf-8")
    assert run("set", "offload", "model.config", "models/b", cwd=repo).code == 0
    assert path.read_text(encoding="utf-8").endswith("config = 'models/b'\n")
    assert run("set", "offload", "serve.kv_offloading_size", "32.5", cwd=repo).code == 0
    assert tomllib.loads(path.read_text(encoding="utf-8"))["serve"]["kv_offloading_size"] == 32.5


def test_a_key_of_a_missing_table_goes_into_a_new_table_at_the_end(repo: Path, run: Run) -> None:
    path = repo / "profiles/qwen-disaggregated.toml"
    before = path.read_text(encoding="utf-8")
    assert run("set", "qwen-disaggregated", "roles.prefill.serve.port", "8101", cwd=repo).code == 0
    after = path.read_text(encoding="utf-8")
    assert after == before + "\n[roles.prefill.serve]\nport = 8101\n"
    shown = run("show", "qwen-disaggregated", "--format", "json", cwd=repo)
    assert '"port": 8101' in shown.out


def test_an_edit_that_breaks_the_file_is_refused_and_nothing_is_written(repo: Path, run: Run) -> None:
    path = repo / "profiles/base.toml"
    before = path.read_bytes()
    typo = run("set", "base", "serve.max_num_seq", "64", cwd=repo)
    assert typo.code == 1 and "unknown-option" in typo.out and "did you mean 'max_num_seqs'" in typo.out
    assert "nothing written" in typo.err
    bad = run("set", "base", "serve.max_num_seqs", "many", cwd=repo)
    assert bad.code == 1 and "invalid-value" in bad.out and "profiles/base.toml:9:1" in bad.out
    assert path.read_bytes() == before


def test_check_refuses_an_edit_that_breaks_a_stack(repo: Path, run: Run) -> None:
    path = repo / "profiles/disaggregated.toml"
    before = path.read_bytes()
    args = ("set", "disaggregated", "roles.prefill.serve.port", "8200")
    refused = run(*args, "--check", "qwen-disaggregated", cwd=repo)
    assert refused.code == 1 and "host-port-shared" in refused.out and path.read_bytes() == before
    assert run(*args, cwd=repo).code == 0  # without --check the file alone is judged, and it is fine
    assert run("check", "qwen-disaggregated", cwd=repo).code == 1


def test_check_allows_an_edit_to_a_stack_that_was_already_broken_elsewhere(repo: Path, run: Run) -> None:
    """Errors a stack had before the edit do not count against it: one fix at a time is possible."""
    assert run("set", "disaggregated", "roles.decode.serve.port", "8100", cwd=repo).code == 0
    assert run("check", "qwen-disaggregated", cwd=repo).code == 1
    done = run("set", "base", "serve.max_num_seqs", "128", "--check", "qwen-disaggregated", cwd=repo)
    assert done.code == 0, done


def test_unset_removes_the_line_and_names_the_keys_when_there_is_none(repo: Path, run: Run) -> None:
    path = repo / "profiles/base.toml"
    before = path.read_text(encoding="utf-8")
    assert run("unset", "base", "env.VLLM_LOGGING_LEVEL", cwd=repo).code == 0
    assert path.read_text(encoding="utf-8") == before.replace('VLLM_LOGGING_LEVEL = "INFO"\n', "")
    missing = run("unset", "base", "serve.max_num_seq", cwd=repo)
    assert (
        missing.code == 2
        and "no serve.max_num_seq" in missing.err
        and "did you mean 'serve.max_num_seqs'" in missing.err
    )
    assert run("unset", "base", "serve.max_num_seqs.x", cwd=repo).code == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("set", "nosuch", "serve.port", "1"), "unknown layer 'nosuch'"),
        (("set", "base", "serve..port", "1"), "is not a TOML key"),
        (("set", "base", "serve", "1"), "is a table in this file"),
        (("set", "base", "serve.port.x", "1"), "is a value in this file"),
        (("set", "base+replayssm", "serve.port", "1"), "set and unset edit one"),
    ],
)
def test_usage_mistakes_say_what_to_do(repo: Path, run: Run, args: tuple[str, ...], message: str) -> None:
    before = (repo / "profiles/base.toml").read_bytes()
    done = run(*args, cwd=repo)
    assert done.code == 2 and message in done.err and "Traceback" not in done.err, done
    assert (repo / "profiles/base.toml").read_bytes() == before


def test_the_file_is_replaced_whole_through_a_symlink_keeping_its_mode(repo: Path, run: Run, tmp_path: Path) -> None:
    shared = tmp_path / "shared-site.toml"
    shutil.move(repo / "profiles/site/h100.toml", shared)
    shared.chmod(0o640)
    (repo / "profiles/site/h100.toml").symlink_to(shared)
    inode = shared.stat().st_ino
    assert run("set", "site/h100", "serve.tensor_parallel_size", "4", cwd=repo).code == 0
    assert (repo / "profiles/site/h100.toml").is_symlink()
    assert tomllib.loads(shared.read_text())["serve"]["tensor_parallel_size"] == 4
    assert shared.stat().st_ino != inode and shared.stat().st_mode & 0o777 == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_values_are_read_as_toml_and_a_bare_word_is_a_string() -> None:
    assert [parse_value(v) for v in ("64", "32.5", "true", "[1, 2]", "{ a = 1 }", '"x y"', "qwen", "a b")] == [
        64,
        32.5,
        True,
        [1, 2],
        {"a": 1},
        "x y",
        "qwen",
        "a b",
    ]
    assert key_argument('env."A.B"') == ("env", "A.B")


# ---- the property: generated documents, one key edited

NAMES = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "port", "x-y"])
SCALARS = st.one_of(
    st.integers(-1000, 1000),
    st.booleans(),
    st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters="\\\"'"), max_size=8),
)


def _scalar(value: Any, literal: bool) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    return f"'{value}'" if literal else f'"{value}"'


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list[tuple[str, ...]]]:
    """A TOML document of tables, dotted keys, inline tables, arrays of tables and comments, and its editable
    scalar keys (outside arrays of tables)."""
    lines: list[str] = ["# generated", ""]
    editable: list[tuple[str, ...]] = []
    used_top: set[str] = set()
    for key in draw(st.lists(NAMES, max_size=3, unique=True)):
        used_top.add(key)
        lines.append(f"{key} = {_scalar(draw(SCALARS), draw(st.booleans()))}" + draw(st.sampled_from(["", "  # c"])))
        editable.append((key,))
    dotted = draw(st.lists(NAMES.filter(lambda n: n not in used_top), max_size=2, unique=True))
    if dotted and "dot" not in used_top:
        for key in dotted:
            lines.append(f"dot.{key} = {_scalar(draw(SCALARS), draw(st.booleans()))}")
            editable.append(("dot", key))
    for t in draw(st.lists(st.sampled_from(["serve", "env", "model", "roles.a.serve"]), max_size=3, unique=True)):
        lines += ["", f"[{t}]", *draw(st.sampled_from([[], ["# about this table"]]))]
        for key in draw(st.lists(NAMES, min_size=1, max_size=4, unique=True)):
            if draw(st.booleans()) and key != "x-y":
                inner = draw(st.lists(NAMES, min_size=1, max_size=2, unique=True))
                body = ", ".join(f"{k} = {_scalar(draw(SCALARS), False)}" for k in inner)
                lines.append(f"{key} = {{ {body} }}")
                editable += [(*t.split("."), key, k) for k in inner]
            else:
                lines.append(f"{key} = {_scalar(draw(SCALARS), draw(st.booleans()))}")
                editable.append((*t.split("."), key))
            if draw(st.booleans()):
                lines.append("")
    if draw(st.booleans()):
        lines += ["", "[[servers]]", "name = 'a'", "", "[[servers]]", "name = 'b'  # second"]
    return "\n".join(lines) + "\n", editable


def _with(data: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(data)
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


@settings(max_examples=300, deadline=None)
@given(documents(), st.data())
def test_setting_one_key_changes_only_its_line(doc: tuple[str, list[tuple[str, ...]]], data: st.DataObject) -> None:
    text, editable = doc
    if not editable:
        return
    path = data.draw(st.sampled_from(editable))
    value = data.draw(st.integers(2000, 3000))
    edited = set_key(text, path, value)
    assert tomllib.loads(edited) == _with(tomllib.loads(text), path, value)
    changed = changed_lines(text, edited)
    assert len(changed) == 1 and str(value) in changed[0][1]
    old_line = changed[0][0]
    if "  # " in old_line and "{" not in old_line:
        assert changed[0][1].endswith(old_line[old_line.index("  #") :])  # its comment stays


@settings(max_examples=200, deadline=None)
@given(documents(), st.data())
def test_unsetting_one_key_removes_only_it(doc: tuple[str, list[tuple[str, ...]]], data: st.DataObject) -> None:
    text, editable = doc
    own_line = [p for p in editable if not (len(p) >= 2 and "{" in _line_of(text, p))]
    if not own_line:
        return
    path = data.draw(st.sampled_from(own_line))
    edited = unset_key(text, path)
    expected = tomllib.loads(text)
    node = expected
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    if path[0] == "dot" and not expected["dot"]:
        del expected["dot"]  # the table existed only through its dotted keys
    assert tomllib.loads(edited) == expected
    removed = [line for line in text.splitlines() if line not in edited.splitlines()]
    assert len(text.splitlines()) - len(edited.splitlines()) == 1 and len(removed) <= 1


def _line_of(text: str, path: tuple[str, ...]) -> str:
    for line in text.splitlines():
        if line.startswith((f"{path[-2]} = {{", f"{path[-1]} =")) and "{" in line and path[-1] in line:
            return line
    return ""


def test_no_edit_leaves_a_scratch_file_behind(repo: Path, run: Run) -> None:
    before = sorted(p.relative_to(repo) for p in repo.rglob("*"))
    run("set", "base", "serve.max_num_seqs", "many", cwd=repo)  # refused
    run("set", "base", "serve.max_num_seqs", "100", cwd=repo)  # written
    assert sorted(p.relative_to(repo) for p in repo.rglob("*")) == before
