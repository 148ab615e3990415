"""The key locator: hostile TOML shapes, and a property over generated documents."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profilekit.tomlio.positions import Pos, format_key, locate_keys, parse_key

PROFILES = Path(__file__).resolve().parents[1] / "profiles"

HOSTILE = '''\
# a comment with key = "value" and [table] inside
title = "x" # trailing comment with = and ]

[serve]
"quoted.key" = 1
'single-quoted' = 2
dash-key = 3
a.b . c = 4   # dotted, with spaces around a dot
multi = """
not = a key
[not.a.table]
"""
lit = \'\'\'
x = ]}
\'\'\'
inline = { x = 1, y = { z = "}" }, arr = [1, 2] }
spread = [
  "a", # comment inside an array, with ] and }
  { k1 = "v" },
]
date = 1979-05-27 07:32:00Z
after = true

[[servers]]
name = "alpha"

[[servers]]
name = "beta"
[servers.extra]
port = 1

[roles.prefill.serve]
port = 8100

[serve.kv_transfer_config]
kv_role = "kv_both"
'''

EXPECTED = {
    ("title",): Pos(2, 1),
    ("serve",): Pos(4, 1),
    ("serve", "quoted.key"): Pos(5, 1),
    ("serve", "single-quoted"): Pos(6, 1),
    ("serve", "dash-key"): Pos(7, 1),
    ("serve", "a"): Pos(8, 1),
    ("serve", "a", "b", "c"): Pos(8, 1),
    ("serve", "multi"): Pos(9, 1),
    ("serve", "lit"): Pos(13, 1),
    ("serve", "inline"): Pos(16, 1),
    ("serve", "inline", "x"): Pos(16, 12),
    ("serve", "inline", "y", "z"): Pos(16, 25),
    ("serve", "inline", "arr", 1): Pos(16, 46),
    ("serve", "spread", 0): Pos(18, 3),
    ("serve", "spread", 1, "k1"): Pos(19, 5),
    ("serve", "date"): Pos(21, 1),
    ("serve", "after"): Pos(22, 1),
    ("servers", 0, "name"): Pos(25, 1),
    ("servers", 1): Pos(27, 1),
    ("servers", 1, "name"): Pos(28, 1),
    ("servers", 1, "extra", "port"): Pos(30, 1),
    ("roles", "prefill", "serve", "port"): Pos(33, 1),
    ("serve", "kv_transfer_config"): Pos(35, 1),
    ("serve", "kv_transfer_config", "kv_role"): Pos(36, 1),
}


def test_hostile_shapes_are_located() -> None:
    tomllib.loads(HOSTILE)  # the fixture is valid TOML
    found = locate_keys(HOSTILE)
    for path, pos in EXPECTED.items():
        assert found.get(path) == pos, path
    # nothing inside strings or comments is taken for a key
    assert ("not",) not in found
    assert ("serve", "not") not in found
    assert ("x",) not in found


def _leaf_paths(node: object, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(node, dict):
        out: list[tuple[str | int, ...]] = []
        for k, v in node.items():
            out += [(*prefix, k), *_leaf_paths(v, (*prefix, k))]
        return out
    if isinstance(node, list):
        out = []
        for i, v in enumerate(node):
            out += [(*prefix, i), *_leaf_paths(v, (*prefix, i))]
        return out
    return []


# ---- property: generated documents, positions known while writing --------------------------------

bare = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True)
weird = st.text(alphabet=st.sampled_from(list("ab.= #[]{}\"'\\é")), min_size=1, max_size=6)
keys = st.one_of(bare, weird)
scalars = st.one_of(
    st.integers(-5, 10**6),
    st.booleans(),
    st.text(alphabet=st.sampled_from(list("ab =#[]{},\"'\\\n\té$`;")), max_size=12),
)


def _key_text(key: str) -> str:
    if key and all(c.isalnum() or c in "_-" for c in key) and key.isascii():
        return key
    return json.dumps(key, ensure_ascii=False)


def _value_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and "\n" in value and '"""' not in value and not value.endswith('"'):
        return '"""' + value.replace("\\", "\\\\") + '"""'
    return json.dumps(value, ensure_ascii=False)


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.expected: dict[tuple[str | int, ...], Pos] = {}

    def line(self, text: str) -> int:
        self.lines.extend(text.split("\n"))
        return len(self.lines) - text.count("\n")


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, dict[tuple[str | int, ...], Pos]]:
    w = _Writer()
    tables = draw(
        st.lists(
            st.tuples(keys, st.dictionaries(keys, scalars, min_size=1, max_size=4)),
            min_size=1,
            max_size=4,
            unique_by=lambda t: t[0],
        )
    )
    for name, body in tables:
        if draw(st.booleans()):
            w.line("# comment = [x]")
        header_line = w.line(f"[{_key_text(name)}]")
        w.expected[(name,)] = Pos(header_line, 1)
        style = draw(st.sampled_from(["lines", "inline", "dotted", "arrays"]))
        if style == "lines":
            for key, value in body.items():
                lineno = w.line(f"{_key_text(key)} = {_value_text(value)}  # note")
                w.expected[(name, key)] = Pos(lineno, 1)
        elif style == "inline":
            text = "inner = { "
            cols: dict[str, int] = {}
            parts = []
            for key, value in body.items():
                cols[key] = len(text) + len(", ".join(parts)) + (2 if parts else 0) + 1
                parts.append(f"{_key_text(key)} = {_value_text(value)}")
            text += ", ".join(parts) + " }"
            lineno = w.line(text)
            w.expected[(name, "inner")] = Pos(lineno, 1)
            for key, col in cols.items():
                # a multi-line string in an earlier element moves later keys down: check only simple rows
                if "\n" not in text:
                    w.expected[(name, "inner", key)] = Pos(lineno, col)
        elif style == "arrays":
            for key, value in body.items():
                lineno = w.line(f"{_key_text(key)} = [{_value_text(value)}, {_value_text(value)}]")
                w.expected[(name, key)] = Pos(lineno, 1)
        else:
            for key, value in body.items():
                lineno = w.line(f"grp . {_key_text(key)} = {_value_text(value)}")
                w.expected[(name, "grp", key)] = Pos(lineno, 1)
    return "\n".join(w.lines) + "\n", w.expected


@settings(max_examples=300, deadline=None)
@given(documents())
def test_generated_documents_locate_every_key(doc: tuple[str, dict[tuple[str | int, ...], Pos]]) -> None:
    text, expected = doc
    data = tomllib.loads(text)
    found = locate_keys(text)
    for path in _leaf_paths(data):
        assert path in found, (path, text)
    for path, pos in expected.items():
        assert found[path] == pos, (path, text)
    assert found == locate_keys(text, fast=False), text  # the whole-line fast path changes no position


def test_fast_path_agrees_with_the_general_scanner_on_every_shipped_layer() -> None:
    """The example profiles and the hostile fixture: same map with and without the whole-line fast path."""
    texts = [
        HOSTILE,
        HOSTILE.replace("\n", "\r\n"),
        *(path.read_text(encoding="utf-8") for path in sorted(PROFILES.rglob("*.toml"))),
    ]
    assert len(texts) > 10
    for text in texts:
        assert locate_keys(text) == locate_keys(text, fast=False)


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("serve.max_num_seqs", ("serve", "max_num_seqs")),
        (
            'serve.kv_transfer_config.kv_connector_extra_config."lmcache.mp.port"',
            ("serve", "kv_transfer_config", "kv_connector_extra_config", "lmcache.mp.port"),
        ),
        ("roles . prefill", ("roles", "prefill")),
    ],
)
def test_parse_and_format_key_round_trip(text: str, parts: tuple[str, ...]) -> None:
    assert parse_key(text) == parts
    assert parse_key(format_key(parts)) == parts


@pytest.mark.parametrize("bad", ["", "serve.", "a b", 'serve."open'])
def test_parse_key_rejects_malformed_keys(bad: str) -> None:
    with pytest.raises(ValueError, match="key"):
        parse_key(bad)


def test_inline_tables_spread_over_lines_are_located() -> None:
    """TOML 1.1 lets an inline table span lines; tomllib (TOML 1.0) refuses it, the locator copes."""
    text = (
        "[serve]\n"
        "kv_transfer_config = {\n"
        '  kv_connector = "NixlConnector",  # comment inside\n'
        '  kv_connector_extra_config = { backends = ["UCX",\n'
        '                                            "LIBFABRIC"] },\n'
        "}\n"
        "port = 8100\n"
    )
    found = locate_keys(text)
    assert found[("serve", "kv_transfer_config")] == Pos(2, 1)
    assert found[("serve", "kv_transfer_config", "kv_connector")] == Pos(3, 3)
    assert found[("serve", "kv_transfer_config", "kv_connector_extra_config", "backends", 1)] == Pos(5, 45)
    assert found[("serve", "port")] == Pos(7, 1)
