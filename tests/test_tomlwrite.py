"""tomlwrite.dumps writes what tomlkit.dumps writes (show's output did not change), in linear time."""

from __future__ import annotations

import time
from typing import Any

import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from profilekit.tomlio.write import dumps

KEYS = st.sampled_from(["a", "b", "model", "x-y", "1", "two words", "dot.ted", 'q"uote', "é"])
SCALARS = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.one_of(st.integers(), st.text(max_size=4)), max_size=3),
)


def tables(depth: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    if depth == 0:
        return st.dictionaries(KEYS, SCALARS, max_size=3)
    inner = tables(depth - 1)
    return st.dictionaries(KEYS, st.one_of(SCALARS, inner, st.lists(inner, min_size=1, max_size=2)), max_size=4)


@settings(max_examples=400, deadline=None)
@given(tables())
def test_dumps_writes_what_tomlkit_writes(data: dict[str, Any]) -> None:
    assert dumps(data) == tomlkit.dumps(data)


def test_show_layout_of_a_stack() -> None:
    data = {
        "stack": "a+b",
        "layers": ["a", "b"],
        "roles": {
            "serve": {"serve": {"model": "m", "kv_transfer_config": {"kv_connector": "N"}}, "env": {}},
            "proxy": {"command": ["r", "--port", "1"], "env": {"S": {"secret": True}}},
        },
    }
    assert dumps(data) == (
        'stack = "a+b"\nlayers = ["a", "b"]\n\n[roles.serve.serve]\nmodel = "m"\n\n'
        '[roles.serve.serve.kv_transfer_config]\nkv_connector = "N"\n\n[roles.serve.env]\n\n'
        '[roles.proxy]\ncommand = ["r", "--port", "1"]\n\n[roles.proxy.env.S]\nsecret = true\n'
    )
    assert dumps({"stacks": [data, data]}) == tomlkit.dumps({"stacks": [data, data]})


def test_a_table_of_110000_keys_is_written_in_linear_time() -> None:
    data = {"roles": {"serve": {"env": {f"VARIABLE_{i}": f"value {i}" for i in range(110_000)}}}}
    started = time.monotonic()
    text = dumps(data)
    assert time.monotonic() - started < 5  # tomlkit.dumps takes minutes
    assert text.count("\n") == 110_001  # the header and one line per key
