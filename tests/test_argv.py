"""Rendering `serve` tables as the argv vLLM's parser reads back (DESIGN section 7); the oracle suite proves it."""

from __future__ import annotations

from typing import Any

import pytest

from profilekit.vllm.argv import render_argv
from profilekit.vllm.catalogue import Catalogue, load_catalogue


def _catalogue(version: str = "0.33.0") -> Catalogue:
    catalogue = load_catalogue(version)
    assert catalogue is not None
    return catalogue


@pytest.mark.parametrize(
    ("serve", "argv"),
    [
        # the model is the positional, first
        ({"port": 8000, "model": "org/m"}, ["org/m", "--port", "8000"]),
        # true: the option that sets the dest to true; false: the visible one that sets it to false
        ({"enable_prefix_caching": True}, ["--enable-prefix-caching"]),
        ({"enable_prefix_caching": False}, ["--disable-prefix-caching"]),
        ({"disable_cascade_attn": False}, ["--enable-cascade-attn"]),
        ({"trust_remote_code": False}, ["--no-trust-remote-code"]),
        ({"enable_expert_parallel": False}, ["--disable-expert-parallel"]),
        # a store-true flag has no false form: false means leaving it out
        ({"headless": True}, ["--headless"]),
        ({"headless": False}, []),
        # valued options: two words, or one glued with '=' when the value starts with '-'
        ({"seed": -1}, ["--seed=-1"]),
        ({"gpu_memory_utilization": 0.9}, ["--gpu-memory-utilization", "0.9"]),
        ({"host": "-weird"}, ["--host=-weird"]),
        ({"tensor_parallel_size": 2}, ["--tensor-parallel-size", "2"]),
        # JSON-valued options: one compact JSON word
        (
            {"kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_both"}},
            ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'],
        ),
        (
            {"speculative_config": {"method": "ngram", "max": 1e-05}},
            ["--speculative-config", '{"method":"ngram","max":1e-05}'],
        ),
        ({"hf_overrides": {"ü": "ß"}}, ["--hf-overrides", '{"ü":"ß"}']),
        # nargs: the values after one flag
        ({"served_model_name": ["a", "b"]}, ["--served-model-name", "a", "b"]),
        # a glued `--opt=v` takes exactly one value, so only a lone value can start with '-'
        ({"served_model_name": ["-a"]}, ["--served-model-name=-a"]),
        ({"numa_bind_nodes": [-1, 2]}, ["--numa-bind-nodes", "-1", "2"]),
        ({"cudagraph_capture_sizes": [1, 2, 4]}, ["--cudagraph-capture-sizes", "1", "2", "4"]),
        # append: the flag repeated per value
        ({"middleware": ["a.B", "-c"]}, ["--middleware", "a.B", "--middleware=-c"]),
        # human-readable numbers stay as written; vLLM expands them
        ({"max_model_len": "128k"}, ["--max-model-len", "128k"]),
        # a bool | str option: true is the bare flag
        ({"hf_token": True}, ["--hf-token"]),
        ({"device_ids": [2, 3]}, ["--device-ids", "2,3"]),
    ],
)
def test_render_follows_vllms_parser(serve: dict[str, Any], argv: list[str]) -> None:
    assert render_argv(serve, _catalogue()) == argv


def test_release_0_27_has_only_no_forms_for_false() -> None:
    catalogue = _catalogue("0.27.0")
    assert render_argv({"enable_prefix_caching": False, "use_replayssm": True}, catalogue) == [
        "--no-enable-prefix-caching",
        "--use-replayssm",
    ]


def test_without_a_catalogue_keys_render_generically() -> None:
    assert render_argv({"model": "m", "x_y": True, "z": False, "n": [1, "-2"], "o": ["-3"], "v": "-1"}) == [
        "m",
        "--x-y",
        "--no-z",
        "--n",
        "1",
        "-2",
        "--o=-3",
        "--v=-1",
    ]
