"""`serve` keys and values against the flag catalogue: unknown, invalid and deprecated options, aliases."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from profilekit.report.formats import format_text
from profilekit.rules.options import option_findings
from profilekit.session import Session
from profilekit.vllm.catalogue import Flag, load_catalogue, parsed
from profilekit.vllm.constraints import config_problems
from profilekit.vllm.values import problem
from tests.conftest import MakeRepo, Run


def _check(root: Path, spec: str, version: str | None = None) -> str:
    session = Session.open(repo=root, vllm_version=version)
    stack = session.stack(spec)
    catalogue = session.catalogue
    assert catalogue is not None
    findings = sorted(option_findings(stack, catalogue), key=lambda f: f.sort_key())
    return format_text(findings)


def test_unknown_option_names_the_release_and_suggests_the_real_one(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "parser.toml": """
            [serve]
            model = "nvidia/NVIDIA-Nemotron-Nano-9B-v2"
            tool-call-parser-plugin = "nemotron_toolcall_parser_no_streaming.py"
            frobnicate = 3
            """
        }
    )
    assert _check(root, "parser") == (
        "profiles/parser.toml:3:1: error unknown-option serve.tool_call_parser_plugin: "
        "vLLM 0.33.0 has no option 'tool_call_parser_plugin'\n"
        "    in stack parser\n"
        "    fix: did you mean 'tool_parser_plugin'?\n"
        "profiles/parser.toml:4:1: error unknown-option serve.frobnicate: vLLM 0.33.0 has no option 'frobnicate'\n"
        "    in stack parser\n"
        "    fix: `profilekit flags frobnicate` searches the options of vLLM 0.33.0"
    )


def test_a_key_spelled_like_a_false_setting_option_is_not_read_as_its_opposite(make_repo: MakeRepo) -> None:
    root = make_repo({"a.toml": "[serve]\nmodel = 'm'\ndisable_prefix_caching = true\nno-trust-remote-code = true\n"})
    assert _check(root, "a") == (
        "profiles/a.toml:3:1: error unknown-option serve.disable_prefix_caching: "
        "vLLM 0.33.0 has no option 'disable_prefix_caching'\n"
        "    in stack a\n"
        "    fix: write enable_prefix_caching = false (--disable-prefix-caching sets enable_prefix_caching to false)\n"
        "profiles/a.toml:4:1: error unknown-option serve.no_trust_remote_code: "
        "vLLM 0.33.0 has no option 'no_trust_remote_code'\n"
        "    in stack a\n"
        "    fix: write trust_remote_code = false (--no-trust-remote-code sets trust_remote_code to false)"
    )


def test_a_top_level_problem_is_reported_once_however_many_roles_inherit_it(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "pd.toml": """
            [serve]
            model = "m"
            max_num_seq = 8

            [roles.prefill.serve]
            port = "8100"

            [roles.decode.serve]
            port = 8200

            [roles.decode]
            kind = "vllm"

            [roles.prefill]
            kind = "vllm"
            """
        }
    )
    assert _check(root, "pd") == (
        "profiles/pd.toml:3:1: error unknown-option serve.max_num_seq: vLLM 0.33.0 has no option 'max_num_seq'\n"
        "    in stack pd\n"
        "    fix: did you mean 'max_num_seqs'?\n"
        "profiles/pd.toml:6:1: error invalid-value roles.prefill.serve.port: expected an integer, got a string\n"
        "    in stack pd, role prefill\n"
        "    fix: write it without quotes: port = 8100"
    )


def test_each_layer_is_judged_where_it_is_written(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "base.toml": "[layer]\nabstract = true\n[serve]\nmax_num_seqs = 'many'\n",
            "child.toml": "[layer]\nextends = ['base']\n[serve]\nmodel = 'm'\nmax_num_seqs = 64\n",
        }
    )
    # the effective value is fine, but base.toml is wrong wherever it is used
    assert _check(root, "child") == (
        "profiles/base.toml:4:1: error invalid-value serve.max_num_seqs: expected an integer, got a string\n"
        "    in stack child\n"
        "    fix: write max_num_seqs = 1"
    )


def test_aliases_and_option_strings_are_one_option_named_by_its_dest(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"a.toml": "[serve]\nmodel = 'm'\ntp = 2\ngpu-memory-utilization = 0.8\nO = 3\n"})
    result = run("--repo", root, "show", "a", "--format", "json")
    assert result.code == 0, result
    serve = json.loads(result.out)["roles"]["serve"]["serve"]
    assert serve == {"model": "m", "tensor_parallel_size": 2, "gpu_memory_utilization": 0.8, "O": 3}
    result = run("--repo", root, "explain", "a", "serve.tp")
    assert result.out == (
        "[serve] serve.tensor_parallel_size = 2\n    set at profiles/a.toml:3:1  (serve.tp, layer a)\n"
    ), result


def test_the_model_option_is_not_an_alias_of_anything_else(make_repo: MakeRepo) -> None:
    root = make_repo({"a.toml": "[serve]\nmodel = 'm'\ndevice-memory-utilization = 0.5\n"})
    session = Session.open(repo=root, vllm_version=None)
    assert session.stack("a").roles["serve"].serve == {"model": "m", "gpu_memory_utilization": 0.5}


def test_one_layer_naming_an_option_twice_is_an_error_whatever_the_spellings(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo(
        {
            "a.toml": "[serve]\nmodel = 'm'\ntensor_parallel_size = 2\ntp = 4\n\n[roles.x.serve]\nsc = {}\nspeculative-config = {}\n\n[roles.x]\nkind = \"vllm\"\n"
        }
    )
    result = run("--repo", root, "show", "a")
    assert result.code == 1
    assert result.err == (
        "profiles/a.toml:4:1: error duplicate-option serve.tensor_parallel_size: "
        "the option is written twice, as 'tensor_parallel_size' and 'tp'\n"
        "    profiles/a.toml:3:1: serve.tensor_parallel_size (layer a)\n"
        "    fix: keep one spelling of 'tensor_parallel_size' in this layer\n"
        "profiles/a.toml:8:1: error duplicate-option roles.x.serve.speculative_config: "
        "the option is written twice, as 'sc' and 'speculative-config'\n"
        "    profiles/a.toml:7:1: roles.x.serve.sc (layer a)\n"
        "    fix: keep one spelling of 'speculative_config' in this layer\n"
        "2 errors, 0 warnings\n"
    )


def test_unset_takes_any_spelling_of_an_option(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "base.toml": "[layer]\nabstract = true\n[serve]\nmodel = 'm'\ntensor_parallel_size = 2\n",
            "one.toml": "[layer]\nextends = ['base']\nunset = ['serve.tp']\n",
        }
    )
    session = Session.open(repo=root, vllm_version=None)
    assert session.stack("one").roles["serve"].serve == {"model": "m"}


def test_deprecated_options_warn_with_vllms_reason(make_repo: MakeRepo) -> None:
    root = make_repo({"a.toml": "[serve]\nmodel = 'm'\nmamba_cache_mode = 'align'\nlog-config-file = 'x.json'\n"})
    assert _check(root, "a") == (
        "profiles/a.toml:3:1: warning deprecated-option serve.mamba_cache_mode: vLLM 0.33.0 deprecates option "
        "'mamba_cache_mode': --mamba-cache-mode is deprecated and will be removed in v0.33.0. It has no effect: "
        "Mamba prefix caching follows --enable-prefix-caching.\n"
        "    in stack a\n"
        "    fix: remove mamba_cache_mode from this layer\n"
        "profiles/a.toml:4:1: warning deprecated-option serve.log_config_file: vLLM 0.33.0 deprecates option "
        "'log_config_file': --log-config-file is deprecated and will be removed in v0.33.0. "
        "Use --logging-config.pylogging_config_file instead.\n"
        "    in stack a\n"
        "    fix: remove log_config_file from this layer; use --logging-config.pylogging_config_file instead"
    )


def test_values_are_typed_by_the_catalogue(make_repo: MakeRepo) -> None:
    root = make_repo(
        {
            "a.toml": """
            [serve]
            model = "m"
            enforce_eager = "yes"
            gpu_memory_utilization = 1
            served_model_name = "nemotron"
            cudagraph_capture_sizes = [1, "2"]
            mamba_ssm_cache_dtype = "float33"
            mamba_backend = "tritn"
            kv_transfer_config = '{"kv_connector":"NixlConnector"}'
            host = ""
            max_num_batched_tokens = "1.5K"
            api_key = []
            trust_remote_code = "true"
            seed = 2025-01-01
            """
        }
    )
    assert _check(root, "a") == (
        "profiles/a.toml:3:1: error invalid-value serve.enforce_eager: expected a boolean, got a string\n"
        "    in stack a\n"
        "    fix: write enforce_eager = true or enforce_eager = false\n"
        "profiles/a.toml:6:31: error invalid-value serve.cudagraph_capture_sizes[1]: expected an integer, got a string\n"
        "    in stack a\n"
        "    fix: write it without quotes: cudagraph_capture_sizes = 2\n"
        "profiles/a.toml:7:1: error invalid-value serve.mamba_ssm_cache_dtype: vLLM 0.33.0 refuses 'float33' for "
        "mamba_ssm_cache_dtype: \"argument --mamba-ssm-cache-dtype: invalid choice: 'float33' (choose from 'auto', "
        "'bfloat16', 'float16', 'float32')\"\n"
        "    in stack a\n"
        "    fix: did you mean 'float32'?\n"
        "profiles/a.toml:8:1: error invalid-value serve.mamba_backend: 'tritn' is not among the values vLLM 0.33.0 "
        "accepts for mamba_backend: triton, flashinfer, cpu (any case)\n"
        "    in stack a\n"
        "    fix: did you mean 'triton'?\n"
        "profiles/a.toml:9:1: error invalid-value serve.kv_transfer_config: expected a table, got a string\n"
        "    in stack a\n"
        "    fix: write [serve.kv_transfer_config] with one key per line\n"
        "profiles/a.toml:10:1: warning value-reads-as-none serve.host: vLLM reads '' as no value (None) for this option, "
        "not as a string\n"
        "    in stack a\n"
        "    fix: remove host (or unset it) for vLLM's default\n"
        "profiles/a.toml:11:1: error invalid-value serve.max_num_batched_tokens: '1.5K' is not a number vLLM "
        "reads: write digits, optionally with one suffix k/m/g/t (x1000) or K/M/G/T (x1024, whole numbers only)\n"
        "    in stack a\n"
        '    fix: write e.g. max_num_batched_tokens = "8k" or max_num_batched_tokens = 8192\n'
        "profiles/a.toml:12:1: error invalid-value serve.api_key: expected at least one value\n"
        "    in stack a\n"
        "    fix: remove api_key (or unset it) for vLLM's default\n"
        "profiles/a.toml:13:1: error invalid-value serve.trust_remote_code: expected a boolean, got a string\n"
        "    in stack a\n"
        "    fix: write it without quotes: trust_remote_code = true\n"
        "profiles/a.toml:14:1: error invalid-value serve.seed: a date or time cannot be passed to vLLM: "
        "a TOML date or time has no meaning for vLLM\n"
        "    in stack a\n"
        "    fix: write seed = 0"
    )


@pytest.mark.parametrize(
    ("dest", "value", "expected"),
    [
        ("mamba_backend", "FlashInfer", "FlashInfer"),
        ("attention_backend", "auto", "auto"),
        ("attention_backend", "flash_attn", "flash_attn"),
        ("optimization_level", "3", "3"),
        ("max_model_len", "auto", -1),
        ("max_model_len", "128k", 128000),
        ("max_model_len", "1K", 1024),
        ("max_num_batched_tokens", 8192, 8192),
        ("gpu_memory_utilization", 1, 1.0),
        ("moe_backend", "Flashinfer-Cutlass", "flashinfer_cutlass"),
        ("reasoning_parser", "None", ""),
        ("device_ids", "2, 3,GPU-x", [2, 3, "GPU-x"]),
        ("device_ids", [2, 3], [2, 3]),
        ("hf_overrides", {"a": {"b": 1}}, {"a": {"b": 1}}),
        ("hf_overrides", "some-string", "some-string"),
        ("hf_token", True, True),
        ("middleware", ["a.b", "-c"], ["a.b", "-c"]),
        ("served_model_name", ["-only"], ["-only"]),
        # as a person writes them: one string for a list option is a list of one; the digits of an
        # option vLLM reads from a string of digits as a TOML integer
        ("served_model_name", "qwen", ["qwen"]),
        ("middleware", "a.b", ["a.b"]),
        ("optimization_level", 3, "3"),
        ("optimization_level", "3", "3"),
        ("numa_bind_nodes", [0, -1], [0, -1]),
        # a json.loads option whose default is a list takes a TOML array, rendered as one JSON word
        ("allowed_origins", ["https://a.example", "*"], ["https://a.example", "*"]),
    ],
)
def test_valid_values_and_what_vllm_makes_of_them(dest: str, value: object, expected: object) -> None:
    catalogue = load_catalogue("0.33.0")
    assert catalogue is not None
    flag = catalogue.flag(dest)
    assert flag is not None
    assert problem(flag, value, "0.33.0") is None
    assert parsed(flag, value) == expected


@pytest.mark.parametrize(
    ("dest", "value", "message"),
    [
        (
            "optimization_level",
            "O3",
            "'O3' is not among the values vLLM 0.33.0 accepts for optimization_level: 0, 1, 2, 3; vLLM says "
            '"Input should be 0, 1, 2 or 3"',
        ),
        ("optimization_level", 3.0, "expected a string, got a float"),
        ("mamba_backend", 1, "expected a string, got an integer"),
        ("served_model_name", 5, "expected a string, got an integer"),
        ("hf_overrides", '{"a": 1}', "a string that looks like a JSON object is read by vLLM as JSON"),
        ("hf_token", False, "expected true or a string, got a boolean"),
        (
            "served_model_name",
            ["a", "-b"],
            "'-b' starts with '-': in a list of values vLLM's parser reads it as an option",
        ),
        ("served_model_name", ["a", "None"], "vLLM reads 'None' as no value (None) for this option, not as a string"),
        ("model", "-m", "'-m' starts with '-': vLLM cannot read it as the model"),
        ("allowed_origins", {"a": 1}, "expected an array (vLLM reads this option as a JSON list), got a table"),
        ("speculative_config", {"x": float("inf")}, "a table cannot be passed to vLLM: JSON has no infinity"),
        (
            "moe_backend",
            "warp",
            "vLLM 0.33.0 refuses 'warp' for moe_backend: \"argument --moe-backend: invalid choice: 'warp' (choose "
            "from 'aiter', 'aiter_mega_moe', 'aiter_triton_mxfp4_bf16', 'aiter_triton_mxfp4_mxfp4', 'auto', 'b12x', "
            "'batched_triton', 'cutlass', 'deep_gemm', 'deep_gemm_mega_moe', 'emulation', 'flashinfer_b12x', "
            "'flashinfer_cutedsl', 'flashinfer_cutlass', 'flashinfer_moe_ep_cutedsl', 'flashinfer_moe_ep_mega_deep_gemm', "
            "'flashinfer_trtllm', 'flydsl', 'hpc', 'humming', 'marlin', 'rdna3', 'triton', 'triton_unfused')\"",
        ),
    ],
)
def test_invalid_values(dest: str, value: object, message: str) -> None:
    catalogue = load_catalogue("0.33.0")
    assert catalogue is not None
    flag = catalogue.flag(dest)
    assert flag is not None
    found = problem(flag, value, "0.33.0")
    assert found is not None
    assert found.message == message


def test_the_targeted_release_selects_the_catalogue(make_repo: MakeRepo) -> None:
    root = make_repo({"a.toml": "[serve]\nmodel = 'm'\nmax_num_queued_tokens = '64k'\n"})
    assert _check(root, "a") == ""
    assert _check(root, "a", "0.27.0") == (
        "profiles/a.toml:3:1: error unknown-option serve.max_num_queued_tokens: "
        "vLLM 0.27.0 has no option 'max_num_queued_tokens'\n"
        "    in stack a\n"
        "    fix: did you mean 'max_num_scheduled_tokens'?"
    )


def test_check_reports_option_findings_and_render_refuses(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"bad.toml": "[serve]\nmodel = 'm'\ntool-call-parser-plugin = 'x.py'\n"})
    expected = (
        "profiles/bad.toml:3:1: error unknown-option serve.tool_call_parser_plugin: "
        "vLLM 0.33.0 has no option 'tool_call_parser_plugin'\n"
        "    in stack bad\n"
        "    fix: did you mean 'tool_parser_plugin'?\n"
        "1 error, 0 warnings\n"
    )
    result = run("--repo", root, "check", "bad")
    assert (result.code, result.out) == (1, expected), result
    result = run("--repo", root, "render", "bad", "--print")
    assert (result.code, result.out, result.err) == (1, expected, "nothing rendered: bad has errors\n"), result
    # show does not run the rules (DESIGN section 8)
    assert run("--repo", root, "show", "bad").code == 0


def test_values_as_a_person_writes_them_check_and_render(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"a.toml": '[serve]\nmodel = "m"\noptimization_level = 3\nserved_model_name = "qwen"\n'})
    assert _check(root, "a") == ""
    result = run("--repo", root, "render", "a", "--print", "--target", "script")
    assert result.code == 0, result
    assert 'exec vllm serve m \\\n  --optimization-level 3 \\\n  --served-model-name qwen "$@"\n' in result.out


def test_a_layer_table_of_the_wrong_type_says_an_array(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({"a.toml": '[layer]\nprovides = "@x"\n[serve]\nmodel = "m"\n'})
    result = run("--repo", root, "check", "a")
    assert result.code == 1
    assert result.out == (
        "profiles/a.toml:2:1: error invalid-layer layer.provides: expected an array, got a string\n1 error, 0 warnings\n"
    )


# boundary values of every type a person might write, for every option (the corpus of the fix test)
_CORPUS_VALUES: list[object] = [
    0, -1, 1, 3, 7, 10**12, 1.5, -1.25, True, False, "", "None", "3", "1.5", "bogus", "qwen", "-x", "8k", "auto",
    '{"a":1}', [], ["x"], [1], ["-x", "y"], {}, {"a": 1},
]  # fmt: skip
_SUGGESTION = re.compile(r"([a-z_0-9]+) = (.+)$")


def _suggested_values(fix: str, dest: str) -> list[object]:
    """The values a fix line offers: `write x = V` (or several), `write one of: A, B`, `(vLLM's default: V)`."""
    found: list[object] = []
    for part in re.split(r" or (?=[a-z_0-9]+ = )", fix):
        match = _SUGGESTION.search(part)
        if match is not None and match.group(1) == dest:
            found.append(tomllib.loads(f"v = {match.group(2)}")["v"])
    default = re.search(r"vLLM's default: (.+?)\)", fix)
    if default is not None:
        found.append(json.loads(default.group(1)))
    listed = re.match(r"write one of: (.+?)(?: \(|$)", fix)
    if listed is not None:
        found += [json.loads(item) for item in listed.group(1).split(", ")]
    return found


def _refusal(flag: Flag, value: object, version: str) -> str | None:
    """What argparse or the config class says against `value`, as the invalid-value rule would."""
    found = problem(flag, value, version)
    if found is not None:
        return None if found.warning else found.message
    later = config_problems(flag, value, version, serve={flag.dest: value})
    return later[0].message if later else None


@pytest.mark.parametrize("version", ["0.27.0", "0.33.0"])
def test_a_fix_line_never_suggests_a_value_that_fails_again(version: str) -> None:
    catalogue = load_catalogue(version)
    assert catalogue is not None
    applied = 0
    failing: list[str] = []
    for flag in catalogue.flags.values():
        for value in _CORPUS_VALUES:
            found = problem(flag, value, version)
            fixes = [found.fix] if found is not None and not found.warning else []
            if found is None:
                fixes = [p.fix for p in config_problems(flag, value, version, serve={flag.dest: value})]
            for fix in fixes:
                for suggested in _suggested_values(fix, flag.dest):
                    applied += 1
                    again = _refusal(flag, suggested, version)
                    if again is not None:
                        failing.append(f"{flag.dest} = {value!r}: {fix} -> {again}")
    assert failing == []
    assert applied > 5000  # the corpus reaches the fixes of every kind of option
