"""`profilekit flags`: offline search of the targeted release's flag catalogue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT, MakeRepo, Run


def test_substring_search_prints_options_type_values_default_and_help(run: Run, tmp_path: Path) -> None:
    result = run("--vllm-version", "0.33.0", "flags", "mamba_backend", cwd=tmp_path)
    assert result.code == 0, result
    assert result.out == (
        "--mamba-backend  (serve.mamba_backend)\n"
        '    type: string    values: triton, flashinfer, cpu (any case; checked after parsing)    default: "triton"\n'
        "    Mamba SSU backend to use.\n"
    )


def test_deprecations_choices_and_aliases_are_shown(run: Run, tmp_path: Path) -> None:
    result = run("--vllm-version", "0.33.0", "flags", "mamba-cache-mode", cwd=tmp_path)
    assert result.out == (
        "--mamba-cache-mode  (serve.mamba_cache_mode; deprecated)\n"
        "    type: string    choices: align, none\n"
        "    --mamba-cache-mode is deprecated and will be removed in v0.33.0. It has no effect: Mamba prefix "
        "caching follows --enable-prefix-caching.\n"
    )
    result = run("--vllm-version", "0.33.0", "flags", "--", "-tp", cwd=tmp_path)
    assert result.out.splitlines()[:2] == [
        "--tensor-parallel-size, -tp  (serve.tensor_parallel_size)",
        "    type: integer    default: 1",
    ]


def test_glob_matches_names_only_and_json_output(run: Run, tmp_path: Path) -> None:
    result = run("--vllm-version", "0.33.0", "flags", "*replayssm*", "--format", "json", cwd=tmp_path)
    assert result.code == 0, result
    data = json.loads(result.out)
    assert data["vllm_version"] == "0.33.0"
    assert [f["dest"] for f in data["flags"]] == ["replayssm_buffer_len", "use_replayssm"]
    flag = data["flags"][1]
    assert flag == {
        "dest": "use_replayssm",
        "option_strings": ["--use-replayssm", "--no-use-replayssm"],
        "accepted_option_strings": ["--no-use-replayssm", "--use-replayssm"],
        "type": "bool",
        "toml_type": "boolean",
        "nargs": 0,
        "choices": None,
        "values_after_parse": None,
        "default": False,
        "deprecated": False,
        "help": flag["help"],
    }


def test_the_repositorys_release_is_searched(make_repo: MakeRepo, run: Run) -> None:
    root = make_repo({}, config='[vllm]\nversion = "0.27.0"\n')
    result = run("flags", "max-num-queued-tokens", cwd=root)
    assert result.code == 1
    assert result.out == ""
    assert (
        result.err
        == "no option of vLLM 0.27.0 matches 'max-num-queued-tokens'; did you mean 'max_num_scheduled_tokens'?\n"
    )
    result = run("--vllm-version", "0.33.0", "flags", "max-num-queued-tokens", cwd=root)
    assert result.code == 0
    assert result.out.startswith("--max-num-queued-tokens  (serve.max_num_queued_tokens)\n")


def test_unsupported_release_and_broken_config_are_usage_errors(make_repo: MakeRepo, run: Run) -> None:
    result = run("--vllm-version", "0.26.0", "flags", "x")
    assert result.code == 2
    assert result.err == (
        "profilekit: error: unsupported vLLM version '0.26.0' (from --vllm-version)\n"
        "  hint: supported releases: 0.27.0, 0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0, 0.32.0, 0.33.0\n"
    )
    root = make_repo({}, config="[vllm\n")
    result = run("flags", "x", cwd=root)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: cannot read profilekit.toml: Expected ']' at the end of a table declaration "
        "(at line 1, column 6)\n"
        "  hint: fix it, or pass --vllm-version X.Y.Z\n"
    )


def test_the_search_loads_no_layer_models_templates_or_rules(tmp_path: Path) -> None:
    # (typer itself imports pydantic to run any command; profilekit's own models stay unloaded)
    code = (
        "import sys\n"
        "from profilekit.cli import main\n"
        "rc = main(['--vllm-version', '0.33.0', 'flags', 'kv'])\n"
        "names = ('profilekit.load.models', 'profilekit.compose', 'profilekit.rules', 'jinja2', 'tomlkit')\n"
        "heavy = sorted(m for m in names if m in sys.modules)\n"
        "print('HEAVY', heavy, rc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, check=False
    )
    assert done.stdout.splitlines()[-1] == "HEAVY [] 0", done.stderr


def test_the_whole_help_text_is_shown(run: Run, tmp_path: Path) -> None:
    result = run("--vllm-version", "0.33.0", "flags", "gpu-memory-utilization", cwd=tmp_path)
    assert result.code == 0, result
    assert result.out.splitlines()[:10] == [
        "--gpu-memory-utilization, --device-memory-utilization  (serve.gpu_memory_utilization)",
        "    type: number    default: 0.92",
        "    The fraction of GPU memory to be used for the model executor, which can",
        "    range from 0 to 1. For example, a value of 0.5 would imply 50% GPU memory",
        "    utilization. If unspecified, will use the default value of 0.92. This is a",
        "    per-instance limit, and only applies to the current vLLM instance. It does",
        "    not matter if you have another vLLM instance running on the same GPU. For",
        "    example, if you have two vLLM instances running on the same GPU, you can",
        "    set the GPU memory utilization to 0.5 for each instance. On non-GPU",
        "    installs, this value controls the corresponding device memory utilization.",
    ]
    assert result.out.splitlines()[10] == "--kv-cache-memory-bytes  (serve.kv_cache_memory_bytes)"


def test_a_search_for_the_short_form_o_finds_optimization_level_first(run: Run, tmp_path: Path) -> None:
    for pattern in ("-O", "-O3"):
        result = run("--vllm-version", "0.33.0", "flags", pattern, cwd=tmp_path)
        assert result.code == 0, result
        assert result.out.splitlines()[:6] == [
            "--optimization-level, -O<value>  (serve.optimization_level)",
            "    type: string    values: 0, 1, 2, 3    default: 2",
            "    The optimization level. These levels trade startup time cost for",
            "    performance, with -O0 having the best startup time and -O3 having the best",
            "    performance. -O2 is used by default. See OptimizationLevel for full",
            "    description.",
        ]
