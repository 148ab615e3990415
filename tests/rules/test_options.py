"""Value constraints of vLLM's config classes: field bounds, JSON keys and values, registries (rules/options.py)."""

from __future__ import annotations

import pytest

from profilekit.rules import vllm_verdict
from profilekit.session import Session
from tests.conftest import MakeRepo
from tests.rules.conftest import Check, messages
from tests.rules.layers import NEMOTRON, RELEASES, layer


@pytest.mark.parametrize("version", RELEASES)
def test_the_issue_table_values_vllm_refuses_are_errors(check: Check, version: str) -> None:
    bad = layer(NEMOTRON, gpu_memory_utilization=90, max_num_seqs=-5, replayssm_buffer_len=0)
    found = check({"s.toml": bad}, version=version, rule="invalid-value")
    assert messages(found) == [
        f'serve.gpu_memory_utilization: vLLM {version} refuses 90: "1 validation error for CacheConfig / '
        'gpu_memory_utilization / Input should be less than or equal to 1"',
        f'serve.max_num_seqs: vLLM {version} refuses -5: "1 validation error for SchedulerConfig / max_num_seqs / '
        'Input should be greater than or equal to 1"',
        f'serve.replayssm_buffer_len: vLLM {version} refuses 0: "1 validation error for CacheConfig / '
        'replayssm_buffer_len / Input should be greater than 0"',
    ]
    assert [f.fix for f in found] == [
        "write a value > 0 and <= 1 (vLLM's default: 0.92)",
        "write a value >= 1",
        "write a value > 0 (vLLM's default: 16)",
    ]
    good = layer(NEMOTRON, gpu_memory_utilization=0.9, max_num_seqs=5, replayssm_buffer_len=1)
    assert check({"s.toml": good}, version=version, rule="invalid-value") == []


def test_a_bound_is_judged_on_the_value_vllm_sees_not_on_an_overridden_one(check: Check) -> None:
    files = {"a.toml": layer(NEMOTRON, max_num_seqs=-5), "b.toml": "[serve]\nmax_num_seqs = 8\n"}
    assert check(files, stack="a+b", rule="invalid-value") == []
    found = check(files, stack="a", rule="invalid-value")
    assert [(f.role, str(f.locations[0]), f.locations[0].key) for f in found] == [
        ("serve", "profiles/a.toml:6:1", "serve.max_num_seqs")
    ]


def test_a_config_object_built_only_with_another_option_checks_nothing_without_it(check: Check) -> None:
    assert check({"s.toml": layer(NEMOTRON, max_loras=0)}, rule="invalid-value") == []
    found = check({"s.toml": layer(NEMOTRON, max_loras=0, enable_lora=True)}, rule="invalid-value")
    assert messages(found) == [
        'serve.max_loras: vLLM 0.33.0 refuses 0: "1 validation error for LoRAConfig / max_loras / '
        'Input should be greater than or equal to 1"'
    ]


def test_a_key_an_older_release_had_names_the_release_that_dropped_it(check: Check) -> None:
    ktc = {"kv_connector": "NixlConnector", "kv_role": "kv_producer", "kv_rank": 0}
    found = check({"s.toml": layer(NEMOTRON, kv_transfer_config=ktc)}, rule="unknown-option")
    assert messages(found) == [
        "serve.kv_transfer_config.kv_rank: vLLM 0.33.0's KVTransferConfig has no key 'kv_rank' (removed in vLLM "
        '0.32.0; 0.31.0 has it); vLLM says "1 validation error for KVTransferConfig / kv_rank / Unexpected keyword '
        'argument"'
    ]
    assert found[0].fix == (
        "remove kv_rank; KVTransferConfig takes: enable_permute_local_kv, engine_id, kv_buffer_device, kv_connector, "
        "kv_connector_extra_config, kv_connector_module_path, kv_load_failure_policy, kv_port, kv_role"
    )
    assert check({"s.toml": layer(NEMOTRON, kv_transfer_config=ktc)}, version="0.31.0", rule="unknown-option") == []


def test_an_unknown_key_of_a_json_option_suggests_the_real_one(check: Check) -> None:
    found = check(
        {
            "s.toml": layer(
                NEMOTRON, compilation_config={"use_inductor": False, "pass_config": {"fuse_norm_qant": True}}
            )
        },
        rule="unknown-option",
    )
    assert messages(found) == [
        "serve.compilation_config.use_inductor: vLLM 0.33.0's CompilationConfig has no key 'use_inductor' (nor has "
        'any release 0.27.0-0.33.0); vLLM says "1 validation error for CompilationConfig / use_inductor / '
        'Unexpected keyword argument"',
        "serve.compilation_config.pass_config.fuse_norm_qant: vLLM 0.33.0's PassConfig has no key 'fuse_norm_qant' "
        '(nor has any release 0.27.0-0.33.0); vLLM says "1 validation error for CompilationConfig / '
        'pass_config.fuse_norm_qant / Unexpected keyword argument"',
    ]
    assert [f.fix for f in found] == ["did you mean 'use_inductor_graph_partition'?", "did you mean 'fuse_norm_quant'?"]
    ok = layer(NEMOTRON, compilation_config={"mode": 3, "pass_config": {"fuse_norm_quant": True}})
    assert check({"s.toml": ok}) == []


def test_values_inside_json_options_are_typed_and_bounded(check: Check) -> None:
    cc = {"decoder_replay_trim_threshold": -1, "custom_ops": "none", "mode": 7}
    found = check({"s.toml": layer(NEMOTRON, compilation_config=cc)}, rule="invalid-value")
    assert messages(found) == [
        'serve.compilation_config.decoder_replay_trim_threshold: vLLM 0.33.0 refuses it: "1 validation error for '
        'CompilationConfig / decoder_replay_trim_threshold / Input should be greater than or equal to 0"',
        'serve.compilation_config.custom_ops: vLLM 0.33.0 refuses it: "1 validation error for CompilationConfig / '
        'custom_ops / Input should be a valid array"',
        'serve.compilation_config.mode: vLLM 0.33.0 refuses it: "1 validation error for CompilationConfig / mode / '
        'Input should be 0, 1, 2 or 3"',
    ]
    spec = {"method": "ngram", "num_speculative_tokens": 0}
    found = check({"s.toml": layer(NEMOTRON, speculative_config=spec)}, rule="invalid-value")
    assert messages(found) == [
        'serve.speculative_config.num_speculative_tokens: vLLM 0.33.0 refuses it: "1 validation error for '
        'SpeculativeConfig / num_speculative_tokens / Input should be greater than 0"'
    ]


def test_free_strings_are_checked_against_the_release_registries(check: Check) -> None:
    found = check({"s.toml": layer(NEMOTRON, quantization="fp9", reasoning_parser="qwen4")}, rule="invalid-value")
    assert [m.split(" Must be one of")[0].split(" Available parsers")[0] for m in messages(found)] == [
        'serve.quantization: vLLM 0.33.0 refuses it: "Unknown quantization method: fp9.',
        "serve.reasoning_parser: vLLM 0.33.0 refuses it: \"Reasoning parser 'qwen4' not found.",
    ]
    assert [f.fix for f in found] == ["did you mean 'fp8'?", "did you mean 'qwen3'?"]
    ok = layer(NEMOTRON, quantization="fp8", reasoning_parser="qwen3")
    assert check({"s.toml": ok}, rule="invalid-value") == []
    plugin = layer(NEMOTRON, reasoning_parser="mine", reasoning_parser_plugin="my_parser.py")
    assert check({"s.toml": plugin}, rule="invalid-value") == []


@pytest.mark.parametrize(("version", "wording"), [("0.32.0", "choices"), ("0.33.0", "registry")])
def test_kv_cache_dtype_moved_from_argparse_choices_to_a_validator_in_0_33(
    check: Check, version: str, wording: str
) -> None:
    (found,) = check({"s.toml": layer(NEMOTRON, kv_cache_dtype="fp9")}, version=version, rule="invalid-value")
    if wording == "choices":
        assert found.message.startswith(
            "serve.kv_cache_dtype: vLLM 0.32.0 refuses 'fp9' for kv_cache_dtype: \"argument --kv-cache-dtype: invalid "
            "choice: 'fp9' (choose from 'auto', "
        )
    else:
        assert found.message.startswith(
            "serve.kv_cache_dtype: vLLM 0.33.0 refuses it: \"Invalid kv_cache_dtype: 'fp9'. Valid values are: "
            "['auto', 'float16', 'bfloat16', 'fp8',"
        )
    assert check({"s.toml": layer(NEMOTRON, kv_cache_dtype="fp8")}, version=version, rule="invalid-value") == []


def test_a_tool_parser_is_checked_only_with_auto_tool_choice(check: Check) -> None:
    assert check({"s.toml": layer(NEMOTRON, tool_call_parser="hermez")}, rule="invalid-value") == []
    (found,) = check(
        {"s.toml": layer(NEMOTRON, tool_call_parser="hermez", enable_auto_tool_choice=True)}, rule="invalid-value"
    )
    assert found.message.startswith('serve.tool_call_parser: vLLM 0.33.0 refuses it: "invalid tool call parser: hermez')
    assert found.fix == "did you mean 'hermes'?"


def _verdict(make_repo: MakeRepo, text: str) -> tuple[bool, str | None, str | None]:
    root = make_repo({"s.toml": text})
    session = Session.open(repo=root, vllm_version=None)
    verdict = vllm_verdict(session.stack("s"), "serve", version="0.33.0", catalogue=session.catalogue, root=root)
    return verdict.accepted, verdict.rule, verdict.message


def test_vllm_reports_first_the_config_object_it_builds_first(make_repo: MakeRepo) -> None:
    # CacheConfig is built before SchedulerConfig, so vLLM names gpu_memory_utilization, not max_num_seqs
    accepted, rule, message = _verdict(make_repo, layer(NEMOTRON, max_num_seqs=-5, gpu_memory_utilization=90))
    assert (accepted, rule) == (False, "invalid-value")
    assert message is not None and "gpu_memory_utilization" in message


def test_a_json_option_fails_in_argparse_before_any_config_object(make_repo: MakeRepo) -> None:
    text = layer(NEMOTRON, gpu_memory_utilization=90, compilation_config={"use_inductor": False})
    accepted, rule, message = _verdict(make_repo, text)
    assert (accepted, rule) == (False, "unknown-option")
    assert message is not None and "use_inductor" in message


def test_a_reasoning_parser_inside_reasoning_config_is_checked_unless_the_flag_replaces_it(check: Check) -> None:
    (found,) = check({"s.toml": layer(NEMOTRON, reasoning_config={"reasoning_parser": "qwen4"})}, rule="invalid-value")
    assert found.message.startswith(
        "serve.reasoning_config.reasoning_parser: vLLM 0.33.0 refuses it: \"Reasoning parser 'qwen4' not found."
    )
    replaced = layer(NEMOTRON, reasoning_parser="qwen3", reasoning_config={"reasoning_parser": "qwen4"})
    assert check({"s.toml": replaced}, rule="invalid-value") == []


def test_watermark_config_needs_its_key(check: Check) -> None:
    found = check({"s.toml": layer(NEMOTRON, watermark_config={"alpha": 2})}, rule="invalid-value")
    assert messages(found) == [
        'serve.watermark_config.alpha: vLLM 0.33.0 refuses it: "1 validation error for WatermarkConfig / alpha / '
        'Input should be less than or equal to 1"',
        'serve.watermark_config.key: vLLM 0.33.0 refuses it: "1 validation error for WatermarkConfig / key / '
        'Field required"',
    ]
    assert [f.fix for f in found] == ["write a value >= 0 and <= 1", "add key (a value >= 0)"]
    assert check({"s.toml": layer(NEMOTRON, watermark_config={"key": 7, "alpha": 0.5})}, rule="invalid-value") == []
