"""The compilation config: mode and cudagraph_mode names, CompilationConfig.__post_init__, compile range endpoints.

The generated constraints of `mode` and `cudagraph_mode` (rules/options.py, catalogues/vllm-X.values.json: the
before validators read by tools/oracle/constraints.py), rules/compilation.py, and the order in which vLLM reports
them; whole messages, per release where the check differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from profilekit.rules import vllm_verdict
from profilekit.session import Session
from tests.conftest import MakeRepo
from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files, refuses
from tests.rules.layers import RELEASES

MODES = "NONE, STOCK_TORCH_COMPILE, DYNAMO_TRACE_ONCE, VLLM_COMPILE"
SYNTAX = "must be 'all', 'none', '+op' or '-op' (where 'op' is the registered op name)"


def _verdict(make_repo: MakeRepo, version: str, arch: str = "LlamaForCausalLM", **serve: Any) -> str | None:
    root: Path = make_repo(files(arch, **serve), config=f'[vllm]\nversion = "{version}"\n')
    session = Session.open(repo=root, vllm_version=None)
    verdict = vllm_verdict(session.stack("s"), "serve", version=version, catalogue=session.catalogue, root=root)
    return None if verdict.accepted else verdict.rule


def _compilation(**table: Any) -> dict[str, str]:
    return files(compilation_config=table)


# ---- mode and cudagraph_mode: names, in any case, or the enum's numbers ---------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_an_unknown_compilation_mode_is_refused_with_vllms_message(check: Check, version: str) -> None:
    found = check(_compilation(mode="bogus"), version=version)
    assert messages(found) == [
        f'serve.compilation_config.mode: vLLM {version} refuses it: "1 validation error for CompilationConfig / mode / '
        f'Value error, Invalid compilation mode: bogus. Valid modes are: {MODES}"'
    ]
    assert found[0].rule == "invalid-value"
    assert found[0].fix == (
        'write one of: "NONE", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE" (any case), '
        "or its number (0, 1, 2, 3)"
    )
    for fine in ("vllm_compile", "None", 3, 0, True):
        assert check(_compilation(mode=fine), version=version) == []


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_a_mode_number_outside_the_enum_and_a_digit_string_are_refused(check: Check, version: str) -> None:
    assert messages(check(_compilation(mode=4), version=version)) == [
        f'serve.compilation_config.mode: vLLM {version} refuses it: "1 validation error for CompilationConfig / mode / '
        'Input should be 0, 1, 2 or 3"'
    ]
    assert messages(check(_compilation(mode="3"), version=version)) == [
        f'serve.compilation_config.mode: vLLM {version} refuses it: "1 validation error for CompilationConfig / mode / '
        f'Value error, Invalid compilation mode: 3. Valid modes are: {MODES}"'
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_an_unknown_cudagraph_mode_stops_vllm_with_a_bare_key_error(check: Check, version: str) -> None:
    found = check(_compilation(cudagraph_mode="bogus"), version=version)
    assert messages(found) == [
        f"serve.compilation_config.cudagraph_mode: vLLM {version} stops on it with a bare KeyError: 'BOGUS' "
        "(CompilationConfig.cudagraph_mode has no such member)"
    ]
    assert found[0].rule == "invalid-value"
    assert found[0].fix == (
        'write one of: "NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE" (any case), '
        "or its number (0, 1, 2)"
    )
    for fine in ("full_and_piecewise", "Full_Decode_Only", 2, False):
        assert check(_compilation(cudagraph_mode=fine), version=version) == []


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_the_key_error_comes_before_the_other_errors_of_the_table(make_repo: MakeRepo, version: str) -> None:
    """pydantic collects the table's errors; the KeyError escapes at once, before any of them is reported."""
    table = {"mode": "bogus", "cudagraph_mode": "bogus", "use_inductor": True}
    assert _verdict(make_repo, version, compilation_config=table) == "invalid-value"
    # an earlier option's error still comes first: argparse reads the words in order
    earlier = {"kv_transfer_config": {"kv_pot": 1}, "compilation_config": table}
    assert _verdict(make_repo, version, **earlier) == "unknown-option"
    # an unknown key reported together with a mode error: both are in vLLM's message, the unknown key's rule names it
    assert _verdict(make_repo, version, compilation_config={"mode": "bogus", "use_inductor": True}) == "unknown-option"


@pytest.mark.parametrize("version", ["0.27.0", "0.29.0", "0.33.0"])
def test_a_compilation_config_error_comes_before_the_config_objects(make_repo: MakeRepo, version: str) -> None:
    """The broad corpus's wrong-rule cases: argparse reads --compilation-config before any config object is built."""
    assert _verdict(make_repo, version, max_num_seqs=-1, compilation_config={"mode": "bogus"}) == "invalid-value"
    assert (
        _verdict(
            make_repo,
            version,
            data_parallel_multi_port_external_lb=True,
            compilation_config={"mode": "bogus"},
        )
        == "invalid-value"
    )


# ---- CompilationConfig.__post_init__ ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_a_custom_op_needs_a_sign_or_a_base_mode(check: Check, version: str) -> None:
    found = check(_compilation(custom_ops=["bogus"]), version=version)
    assert messages(found) == [
        refuses(
            version,
            'compilation_config.custom_ops = ["bogus"]',
            f"1 validation error for CompilationConfig / Value error, Invalid syntax 'bogus' for custom op, {SYNTAX}",
        )
    ]
    assert found[0].rule == "compilation-config"
    assert check(_compilation(custom_ops=["none", "+rms_norm", "-silu_and_mul"]), version=version) == []


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_custom_ops_take_one_base_mode_and_no_op_both_ways(check: Check, version: str) -> None:
    assert messages(check(_compilation(custom_ops=["all", "none"]), version=version)) == [
        refuses(
            version,
            'compilation_config.custom_ops = ["all", "none"]',
            "1 validation error for CompilationConfig / Value error, custom_ops can contain only one base mode: "
            "'all' or 'none'",
        )
    ]
    both = '["+rms_norm", "-rms_norm"]'
    assert messages(check(_compilation(custom_ops=["+rms_norm", "-rms_norm"]), version=version)) == [
        refuses(
            version,
            f"compilation_config.custom_ops = {both}",
            "1 validation error for CompilationConfig / Value error, custom_ops cannot both enable and disable the "
            "same operation(s): rms_norm. Remove either the '+' or '-' directive",
        )
    ]
    # on a CUDA host the QK-norm + RoPE fusion adds +rotary_embedding itself (the CPU oracle switches it off)
    fused = _compilation(custom_ops=["-rotary_embedding"], pass_config={"enable_qk_norm_rope_fusion": True})
    assert [f.rule for f in check(fused, version=version)] == ["compilation-config"]
    assert check(_compilation(custom_ops=["-rotary_embedding"]), version=version) == []


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_vllm_compile_takes_the_inductor_or_eager_backend(check: Check, version: str) -> None:
    assert messages(check(_compilation(mode="VLLM_COMPILE", backend="bogus"), version=version)) == [
        refuses(
            version,
            'compilation_config.backend = "bogus"',
            "1 validation error for CompilationConfig / Value error, Invalid backend for piecewise compilation: bogus",
        )
    ]
    # the mode is still unset when the table names no mode: the check does not run
    assert check(_compilation(backend="bogus"), version=version) == []
    assert check(_compilation(mode=3, backend="eager"), version=version) == []


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_encoder_cuda_graph_sizes_and_budgets(check: Check, version: str) -> None:
    items = _compilation(cudagraph_mm_encoder=True, encoder_cudagraph_max_vision_items_per_batch=-1)
    assert messages(check(items, version=version)) == [
        refuses(
            version,
            "compilation_config.encoder_cudagraph_max_vision_items_per_batch = -1",
            "1 validation error for CompilationConfig / Value error, encoder_cudagraph_max_vision_items_per_batch "
            "must be non-negative (0 = auto-infer)",
        )
    ]
    frames = _compilation(cudagraph_mm_encoder=True, encoder_cudagraph_max_frames_per_batch=-1)
    assert messages(check(frames, version=version)) == [
        refuses(
            version,
            "compilation_config.encoder_cudagraph_max_frames_per_batch = -1",
            "1 validation error for CompilationConfig / Value error, encoder_cudagraph_max_frames_per_batch must be "
            "non-negative (None = auto-infer)",
        )
    ]
    assert check(_compilation(encoder_cudagraph_max_frames_per_batch=-1), version=version) == []
    assert messages(check(_compilation(encoder_cudagraph_token_budgets=[0, 5]), version=version)) == [
        refuses(
            version,
            "compilation_config.encoder_cudagraph_token_budgets = [0, 5]",
            "1 validation error for CompilationConfig / Value error, All encoder_cudagraph_token_budgets must be "
            "positive, got [0, 5]",
        )
    ]
    assert check(_compilation(encoder_cudagraph_token_budgets=[256, 512]), version=version) == []


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_decoder_replay_capture_sizes_are_positive(check: Check, version: str) -> None:
    """0.32.0 added decoder_replay_cudagraph_capture_sizes (an unknown key before)."""
    assert messages(check(_compilation(decoder_replay_cudagraph_capture_sizes=[0]), version=version)) == [
        refuses(
            version,
            "compilation_config.decoder_replay_cudagraph_capture_sizes = [0]",
            "1 validation error for CompilationConfig / Value error, All decoder_replay_cudagraph_capture_sizes must "
            "be positive",
        )
    ]
    assert check(_compilation(decoder_replay_cudagraph_capture_sizes=[4, 8]), version=version) == []


def test_decoder_replay_capture_sizes_are_unknown_before_0_32(check: Check) -> None:
    found = check(_compilation(decoder_replay_cudagraph_capture_sizes=[0]), version="0.31.0")
    assert [f.rule for f in found] == ["unknown-option"]


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_an_inductor_pass_needs_its_module(check: Check, version: str) -> None:
    assert messages(check(_compilation(inductor_passes={"fuse": "bogus"}), version=version)) == [
        refuses(
            version,
            'compilation_config.inductor_passes = {"fuse": "bogus"}',
            "1 validation error for CompilationConfig / Value error, Empty module name",
        )
    ]
    # a qualified name is imported: what is installed decides, profilekit says nothing
    assert check(_compilation(inductor_passes={"fuse": "mypackage.passes.fuse"}), version=version) == []


def test_post_init_checks_wait_for_valid_fields(check: Check) -> None:
    """vLLM runs __post_init__ only once the table's keys and fields are valid."""
    found = check(_compilation(mode="bogus", custom_ops=["bogus"]), version="0.33.0")
    assert [f.rule for f in found] == ["invalid-value"]


# ---- VllmConfig._set_compile_ranges ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", RELEASES)
def test_a_compile_range_endpoint_must_be_positive(check: Check, version: str) -> None:
    found = check(_compilation(compile_ranges_endpoints=[8, -1, 0]), version=version)
    assert messages(found) == [
        refuses(
            version,
            "compilation_config.compile_ranges_endpoints holds -1",
            "1 validation error for VllmConfig / Assertion failed, Invalid compile range endpoint: -1",
        )
    ]
    assert found[0].rule == "compile-range-endpoint"
    assert check(_compilation(compile_ranges_endpoints=[1, 8]), version=version) == []


@pytest.mark.parametrize("version", ["0.27.1", "0.33.0"])
def test_a_compile_range_endpoint_fails_late_in_vllms_start_up(make_repo: MakeRepo, version: str) -> None:
    """Whatever the other options: _set_compile_ranges runs after the config objects and the runner checks."""
    table = {"compile_ranges_endpoints": [0]}
    assert _verdict(make_repo, version, compilation_config=table) == "compile-range-endpoint"
    assert _verdict(make_repo, version, enforce_eager=True, compilation_config=table) == "compile-range-endpoint"
    assert _verdict(make_repo, version, max_num_seqs=0, compilation_config=table) == "invalid-value"
    bad_role = {"kv_connector": "NixlConnector"}
    assert _verdict(make_repo, version, kv_transfer_config=bad_role, compilation_config=table) == "kv-role-missing"


# ---- KVTransferConfig: an unknown key before __post_init__ ------------------------------------------------------


@pytest.mark.parametrize("version", ["0.27.1", "0.33.0"])
def test_an_unknown_kv_transfer_key_comes_before_the_missing_role(make_repo: MakeRepo, version: str) -> None:
    table = {"kv_connector": "bogus", "kv_pot": 1}
    assert _verdict(make_repo, version, "KimiLinearForCausalLM", kv_transfer_config=table) == "unknown-option"
    assert (
        _verdict(make_repo, version, "KimiLinearForCausalLM", kv_transfer_config={"kv_connector": "bogus"})
        == "kv-role-missing"
    )
