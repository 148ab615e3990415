"""Declared constraints (DESIGN 5.5) against layer names and capabilities, derived or provided."""

from __future__ import annotations

from tests.rules.conftest import Check, messages
from tests.rules.layers import NEMOTRON, layer

V1 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
REPLAY = """
[layer]
abstract = true
provides = ["fast-decode"]
conflicts = ["@kv-connector"]
requires = ["@hybrid-model"]

[serve]
use_replayssm = true

[env]
VLLM_USE_V2_MODEL_RUNNER = "0"
"""


def test_group_conflict_names_both_layers(check: Check) -> None:
    a = '[layer]\ngroup = "kv-path"\n\n[serve]\nmodel = "Qwen/Qwen3-0.6B"\n'
    b = '[layer]\ngroup = "kv-path"\n'
    found = check({"a.toml": a, "b.toml": b}, stack="a+b")
    assert messages(found) == ["layers 'a' and 'b' are both in group 'kv-path'; a stack takes at most one"]
    assert [(loc.file, loc.line, loc.key) for loc in found[0].locations] == [
        ("profiles/b.toml", 2, "layer.group"),
        ("profiles/a.toml", 2, "layer.group"),
    ]
    c = '[layer]\ngroup = "site"\n'
    assert check({"a.toml": a, "c.toml": c}, stack="a+c") == []


def test_conflict_with_a_layer_name(check: Check) -> None:
    a = '[layer]\nconflicts = ["b"]\n\n[serve]\nmodel = "Qwen/Qwen3-0.6B"\n'
    found = check({"a.toml": a, "b.toml": "[env]\nX = '1'\n"}, stack="a+b")
    assert messages(found) == ["layer 'a' conflicts with layer 'b', which is in the stack"]
    assert [(loc.file, loc.line) for loc in found[0].locations] == [("profiles/a.toml", 2), ("profiles/b.toml", 1)]
    assert check({"a.toml": a, "c.toml": "[env]\nX = '1'\n"}, stack="a+c") == []


def test_conflict_with_a_derived_capability_names_where_it_comes_from(check: Check) -> None:
    offload = "[serve]\nkv_offloading_size = 16\n"
    found = check(
        {"m.toml": layer(NEMOTRON), "r.toml": REPLAY, "o.toml": offload}, stack="m+r+o", rule="declared-conflict"
    )
    assert messages(found) == ["layer 'r' conflicts with @kv-connector, which this stack has (role serve)"]
    assert [(loc.file, loc.key) for loc in found[0].locations] == [
        ("profiles/r.toml", "layer.conflicts[0]"),
        ("profiles/o.toml", "serve.kv_offloading_size"),
    ]
    assert found[0].notes == [
        "@kv-connector counts every active connector, including the one kv_offloading_size creates"
    ]
    assert check({"m.toml": layer(NEMOTRON), "r.toml": REPLAY}, stack="m+r") == []


def test_conflict_with_a_provided_capability(check: Check) -> None:
    slow = '[layer]\nconflicts = ["@fast-decode"]\n'
    found = check({"m.toml": layer(NEMOTRON), "r.toml": REPLAY, "s.toml": slow}, stack="m+r+s")
    assert messages(found) == ["layer 's' conflicts with @fast-decode, which this stack has"]
    assert found[0].locations[1].key == "layer.provides[0]"


def test_requires_a_capability(check: Check) -> None:
    found = check({"m.toml": layer("Qwen3ForCausalLM"), "r.toml": REPLAY}, stack="m+r", rule="missing-requirement")
    assert messages(found) == ["layer 'r' requires @hybrid-model, which no role of this stack has"]
    assert found[0].fix == "serve a hybrid (Mamba) model such as Nemotron-H (this stack serves Qwen3ForCausalLM)"
    provided = '[layer]\nrequires = ["@fast-decode"]\n'
    found = check({"m.toml": layer(NEMOTRON), "p.toml": provided}, stack="m+p")
    assert messages(found) == ["layer 'p' requires @fast-decode, which no layer of this stack provides"]
    assert check({"m.toml": layer(NEMOTRON), "r.toml": REPLAY, "p.toml": provided}, stack="m+r+p") == []


def test_requires_hybrid_model_of_an_unknown_architecture_is_a_warning(check: Check) -> None:
    unknown = '[serve]\nmodel = "acme/private-model"\n'
    found = check({"m.toml": unknown, "r.toml": REPLAY}, stack="m+r")
    assert [(f.rule, f.severity.value) for f in found] == [
        ("unknown-architecture", "warning"),
        ("missing-requirement", "warning"),
    ]
    assert found[1].message == (
        "layer 'r' requires @hybrid-model, and the model of role serve is unknown to profilekit, so it cannot tell"
    )


def test_requires_a_layer(check: Check) -> None:
    needs = '[layer]\nrequires = ["base"]\n\n[serve]\nmodel = "Qwen/Qwen3-0.6B"\n'
    found = check({"n.toml": needs, "base.toml": "[env]\nX = '1'\n"}, stack="n")
    assert messages(found) == ["layer 'n' requires layer 'base', which is not in the stack"]
    assert found[0].fix == "add 'base' to the stack (e.g. n+base), or extend it"
    assert check({"n.toml": needs, "base.toml": "[env]\nX = '1'\n"}, stack="n+base") == []


def test_every_derived_capability(check: Check) -> None:
    """Each derived capability can be required, and is present exactly when the configuration gives it."""
    cases = {
        "kv-connector": {"kv_transfer_config": {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"}},
        "kv-offload": {"kv_offloading_size": 4},
        "replayssm": {"use_replayssm": True, "env": V1},
        "speculative-decoding": {"speculative_config": {"method": "ngram", "num_speculative_tokens": 2}},
        "prefix-caching": {},  # on by default from 0.28.0
        "pd-disaggregation": {"kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}},
    }
    for cap, serve in cases.items():
        needs = f'[layer]\nrequires = ["@{cap}"]\n'
        with_it = check({"m.toml": layer(NEMOTRON, **serve), "n.toml": needs}, stack="m+n", rule="missing-requirement")
        assert with_it == [], cap
        without = check(
            {"m.toml": layer(NEMOTRON, enable_prefix_caching=False), "n.toml": needs},
            stack="m+n",
            rule="missing-requirement",
        )
        assert messages(without) == [f"layer 'n' requires @{cap}, which no role of this stack has"], cap
