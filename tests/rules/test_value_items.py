"""Items of list options and keys of JSON options that vLLM refuses, in the release's own words (rules/options.py).

`--collect-detailed-traces` changed in 0.31.0: before, argparse listed the pairs 'model,worker' ... and the string
'None' among its choices (so the pairs pass argparse and ObservabilityConfig's Literal refuses them, and None
fails argparse); from 0.31.0 it lists 'all', 'model', 'worker' and None (so the pairs fail argparse and None
fails the Literal).
"""

from __future__ import annotations

import pytest

from profilekit.rules import vllm_verdict
from profilekit.session import Session
from tests.conftest import MakeRepo
from tests.rules.conftest import Check, messages
from tests.rules.crossfield import files
from tests.rules.layers import RELEASES, at_least

ENDPOINT = {"otlp_traces_endpoint": "http://collector:4317"}
LITERAL = "Input should be 'model', 'worker' or 'all'"
CHOICES_OLD = (
    "'all', 'model', 'worker', 'None', 'model,worker', 'model,all', 'worker,model', 'worker,all', 'all,model', "
    "'all,worker'"
)
CHOICES_NEW = "'all', 'model', 'worker', None"


def _invalid(check: Check, version: str, traces: list[str]) -> list[str]:
    return messages(check(files(collect_detailed_traces=traces, **ENDPOINT), version=version, rule="invalid-value"))


@pytest.mark.parametrize("version", RELEASES)
def test_a_pair_of_trace_modules_in_one_item(check: Check, version: str) -> None:
    found = _invalid(check, version, ["all", "model,worker"])
    if at_least(version, "0.31.0"):
        assert found == [
            f"serve.collect_detailed_traces[1]: vLLM {version} refuses 'model,worker' for collect_detailed_traces: "
            f"\"argument --collect-detailed-traces: invalid choice: 'model,worker' (choose from {CHOICES_NEW})\""
        ]
    else:
        assert found == [
            f'serve.collect_detailed_traces[1]: vLLM {version} refuses "model,worker": "1 validation error for '
            f'ObservabilityConfig / collect_detailed_traces.1 / {LITERAL}"'
        ]
    assert _invalid(check, version, ["model", "worker"]) == []


@pytest.mark.parametrize("version", ["0.27.0", "0.30.0"])
def test_every_refused_item_counts_in_pydantic_s_error(check: Check, version: str) -> None:
    assert _invalid(check, version, ["all,worker", "model,all"]) == [
        f'serve.collect_detailed_traces[0]: vLLM {version} refuses "all,worker": "2 validation errors for '
        f'ObservabilityConfig / collect_detailed_traces.0 / {LITERAL}"',
        f'serve.collect_detailed_traces[1]: vLLM {version} refuses "model,all": "2 validation errors for '
        f'ObservabilityConfig / collect_detailed_traces.1 / {LITERAL}"',
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_a_none_item(check: Check, version: str) -> None:
    found = _invalid(check, version, ["None", "all"])
    if at_least(version, "0.31.0"):
        assert found == [
            f'serve.collect_detailed_traces[0]: vLLM {version} refuses "None": "1 validation error for '
            f'ObservabilityConfig / collect_detailed_traces.0 / {LITERAL}"'
        ]
    else:
        assert found == [
            "serve.collect_detailed_traces[0]: vLLM reads 'None' as no value (None) for this option, not as a string, "
            'and None is not among its choices: "argument --collect-detailed-traces: invalid choice: None (choose '
            f'from {CHOICES_OLD})"'
        ]


@pytest.mark.parametrize("version", RELEASES)
def test_an_unknown_module(check: Check, version: str) -> None:
    choices = CHOICES_NEW if at_least(version, "0.31.0") else CHOICES_OLD
    assert _invalid(check, version, ["worker", "bogus"]) == [
        f"serve.collect_detailed_traces[1]: vLLM {version} refuses 'bogus' for collect_detailed_traces: "
        f"\"argument --collect-detailed-traces: invalid choice: 'bogus' (choose from {choices})\""
    ]


def _verdict(make_repo: MakeRepo, version: str, first: str = "", **serve: object) -> tuple[str | None, str | None]:
    """vLLM's first failure as profilekit predicts it; `first`: a TOML line written before the other options."""
    layers = files(**serve)
    layers["s.toml"] = layers["s.toml"].replace("\n[serve]\n", f"\n[serve]\n{first}\n" if first else "\n[serve]\n")
    root = make_repo(layers, config=f'[vllm]\nversion = "{version}"\n')
    session = Session.open(repo=root, vllm_version=None)
    found = vllm_verdict(session.stack("s"), "serve", version=version, catalogue=session.catalogue, root=root)
    return found.rule, found.message


@pytest.mark.parametrize("version", ["0.30.0", "0.33.0"])
def test_an_item_vllm_refuses_is_vllm_s_first_failure(make_repo: MakeRepo, version: str) -> None:
    """argparse refuses the item before validate_parsed_serve_args sees --enable-log-outputs."""
    rule, message = _verdict(make_repo, version, enable_log_outputs=True, collect_detailed_traces=["bogus"])
    assert rule == "invalid-value"
    assert message is not None and message.startswith("serve.collect_detailed_traces[0]: ")
    rule, _ = _verdict(make_repo, version, enable_log_outputs=True, collect_detailed_traces=["all"], **ENDPOINT)
    assert rule == "log-outputs-requests"


UNKNOWN_KEY = {"structured_outputs_config": {"disable_ny_whitespace": True}}
UNKNOWN_FIRST = "structured_outputs_config = { disable_ny_whitespace = true }"  # inline: ahead in the argv


@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
def test_an_item_fails_at_its_option_s_place_in_the_argv(make_repo: MakeRepo, version: str) -> None:
    """argparse converts the options in argv order: a refused item of an earlier array option comes before an
    unknown key of a later JSON option, and after it when the array comes later (seed 11: 0.29.0)."""
    choices = CHOICES_NEW if at_least(version, "0.31.0") else CHOICES_OLD
    item = (
        f"serve.collect_detailed_traces[1]: vLLM {version} refuses 'bogus' for collect_detailed_traces: "
        f"\"argument --collect-detailed-traces: invalid choice: 'bogus' (choose from {choices})\""
    )
    unknown = (
        f"serve.structured_outputs_config.disable_ny_whitespace: vLLM {version}'s StructuredOutputsConfig has no key "
        "'disable_ny_whitespace' (nor has any release 0.27.0-0.33.0); vLLM says \"1 validation error for "
        'StructuredOutputsConfig / disable_ny_whitespace / Unexpected keyword argument"'
    )
    traces = {"collect_detailed_traces": ["model", "bogus"]}
    assert _verdict(make_repo, version, **traces, **UNKNOWN_KEY) == ("invalid-value", item)
    assert _verdict(make_repo, version, UNKNOWN_FIRST, **traces) == ("unknown-option", unknown)


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_a_validator_of_a_json_option_fails_at_its_place_in_the_argv(make_repo: MakeRepo, version: str) -> None:
    """The profiler and Engram validators run as argparse converts their table (seed 11: 0.32.0, 0.33.0)."""
    profiler = {"profiler_config": {"proton_output_format": "hatchet", "proton_hook": "triton"}}
    refused = (
        f'profiler_config with no profiler; vLLM {version} refuses to start: "1 validation error for ProfilerConfig / '
        "proton_hook, proton_output_format only applicable when profiler is set to 'proton'\""
    )
    assert _verdict(make_repo, version, **profiler, **UNKNOWN_KEY) == ("profiler-config", refused)
    assert _verdict(make_repo, version, UNKNOWN_FIRST, **profiler)[0] == "unknown-option"
    engram = {"engram_config": {"use_thp": True, "dp_shared_memory": True}}
    refused = (
        f'engram_config with use_thp = true, dp_shared_memory = true; vLLM {version} refuses to start: "1 validation '
        'error for EngramConfig / use_thp requires cpu_offload=True and dp_shared_memory=False"'
    )
    # before the model check of VllmConfig.__post_init__ (engram-model: Llama has no Engram embeddings)
    assert _verdict(make_repo, version, **engram, **UNKNOWN_KEY) == ("engram-config", refused)
    assert _verdict(make_repo, version, UNKNOWN_FIRST, **engram)[0] == "unknown-option"


def test_prefix_cache_retention_interval_reaches_cache_config_in_0_29(check: Check) -> None:
    """0.29.0 passes it to CacheConfig as `0 if unset else self.prefix_cache_retention_interval`."""
    for version in ("0.29.0", "0.33.0"):
        found = check(files(prefix_cache_retention_interval=-1), version=version, rule="invalid-value")
        assert messages(found) == [
            f'serve.prefix_cache_retention_interval: vLLM {version} refuses -1: "1 validation error for CacheConfig / '
            'prefix_cache_retention_interval / Input should be greater than or equal to 0"'
        ]
        assert check(files(prefix_cache_retention_interval=0), version=version, rule="invalid-value") == []


@pytest.mark.parametrize("version", ["0.30.0", "0.33.0"])
def test_an_empty_backend_table_per_quantization(check: Check, version: str) -> None:
    found = check(files(kernel_config={"linear_backend_per_quant": {}}), version=version, rule="invalid-value")
    assert messages(found) == [
        f'serve.kernel_config.linear_backend_per_quant: vLLM {version} refuses it: "1 validation error for '
        'KernelConfig / linear_backend_per_quant / Dictionary should have at least 1 item after validation, not 0"'
    ]
    fine = files(kernel_config={"linear_backend_per_quant": {"nvfp4_w4a16": "marlin"}})
    assert check(fine, version=version, rule="invalid-value") == []


@pytest.mark.parametrize("version", RELEASES)
def test_an_unknown_attention_backend_in_attention_config(check: Check, version: str) -> None:
    found = check(files(attention_config={"backend": "bogus"}), version=version, rule="invalid-value")
    assert len(found) == 1
    assert found[0].message.startswith(
        f'serve.attention_config.backend: vLLM {version} refuses it: "1 validation error for AttentionConfig / '
        "backend / Value error, Unknown attention backend: 'BOGUS'. Valid options are: FLASH_ATTN, "
    )
    for fine in ("auto", "AUTO", "flash_attn", "TRITON_ATTN"):
        assert check(files(attention_config={"backend": fine}), version=version, rule="invalid-value") == []
