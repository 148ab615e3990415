"""`profilekit import` of launches as people write them: docker run, python -m, shell variables, redirections."""

from __future__ import annotations

from pathlib import Path

import pytest

from profilekit.importing.shellwords import split_commands
from tests.conftest import MakeRepo, Run

DOCKER = Path(__file__).parent / "data" / "docker"


@pytest.fixture
def repo(make_repo: MakeRepo) -> Path:
    return make_repo({})


def _layer(root: Path, name: str) -> str:
    return (root / "profiles" / f"{name}.toml").read_text(encoding="utf-8")


def test_docker_run_of_the_vllm_image_takes_the_arguments_after_the_image(repo: Path, run: Run) -> None:
    result = run("--repo", repo, "import", "d1b.sh", cwd=DOCKER)
    assert result.code == 0, result
    assert result.out == "profiles/qwen3-0.6b.toml\n"
    assert result.err == (
        "note: line 2: --gpus all gives the container its GPUs; not imported (a layer chooses GPUs with "
        "CUDA_VISIBLE_DEVICES in [env])\n"
        "note: line 2: docker options --runtime nvidia, -v ~/.cache/huggingface:/root/.cache/huggingface, "
        "-p 8000:8000, --ipc=host are the container's, not vLLM's; not imported\n"
        "note: line 7: the arguments after the image vllm/vllm-openai:latest are read as `vllm serve` options\n"
        "note: HF_TOKEN looks like a secret: written as { secret = true }, its value is not written; set it in the "
        "environment that runs the launch script\n"
    )
    assert _layer(repo, "qwen3-0.6b").split("[serve]\n", 1)[1] == (
        'model = "Qwen/Qwen3-0.6B"\n\n[env]\nHF_TOKEN = {secret = true}\n'
    )


def test_docker_run_env_options_and_images_that_are_not_vllm(repo: Path, run: Run, tmp_path: Path) -> None:
    words = ["docker", "run", "--rm", "-e", "VLLM_LOGGING_LEVEL=DEBUG", "--env=HF_HOME=/data", "-e", "TZ"]
    result = run("--repo", repo, "import", "--", *words, "vllm/vllm-openai:v0.33.0", "Qwen/Qwen3-0.6B", cwd=tmp_path)
    assert result.code == 0, result
    assert result.err == (
        "note: -e TZ passes on the launching environment's value; not imported\n"
        "note: docker options --rm are the container's, not vLLM's; not imported\n"
        "note: the arguments after the image vllm/vllm-openai:v0.33.0 are read as `vllm serve` options\n"
    )
    assert _layer(repo, "qwen3-0.6b").split("[env]\n", 1)[1] == ('VLLM_LOGGING_LEVEL = "DEBUG"\nHF_HOME = "/data"\n')
    result = run("--repo", repo, "import", "--", "docker", "run", "--entrypoint", "bash", "my/server", "x")
    assert result.code == 2
    assert result.err == (
        "profilekit: error: cannot import the command line: --entrypoint bash of my/server runs `bash x`, which is "
        "not a vllm serve launch\n"
    )
    script = "pip install -q lmcache && vllm serve Qwen/Qwen3-0.6B --port 8100"
    words = ["docker", "run", "--entrypoint", "bash", "vllm/vllm-openai:v0.33.0", "-c", script]
    result = run("--repo", repo, "import", "--name", "entry", "--", *words)
    assert result.code == 0, result
    assert "port = 8100" in _layer(repo, "entry")
    assert "# It ran behind `bash -c`, which a layer does not hold." in _layer(repo, "entry")


SCRIPT = """\
#!/usr/bin/env bash
set -euo pipefail
MODEL=Qwen/Qwen3-0.6B
export VLLM_LOGGING_LEVEL=${LOG_LEVEL:-INFO}
CUDA_VISIBLE_DEVICES=0 python3 -m vllm.entrypoints.openai.api_server \\
  --model "$MODEL" \\
  --port ${PORT:-8100} \\
  --served-model-name "${MODEL}" \\
  --max-num-seqs 64 2>&1 | tee -a serve.log &
"""


def test_a_script_with_variables_defaults_redirections_and_python_m(repo: Path, run: Run, tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT, encoding="utf-8")
    result = run("--repo", repo, "import", "run.sh", cwd=tmp_path)
    assert result.code == 0, result
    assert result.err == (
        "note: line 4: ${LOG_LEVEL:-INFO}: the script does not set LOG_LEVEL; took the default 'INFO'\n"
        "note: line 7: ${PORT:-8100}: the script does not set PORT; took the default '8100'\n"
        "note: line 9: `2>&1` is ignored: it changes neither vLLM's argv nor its environment\n"
        "note: line 9: `| tee -a serve.log` is ignored: it changes neither vLLM's argv nor its environment\n"
        "note: line 9: `&` (run in the background) is ignored: it changes neither vLLM's argv nor its environment\n"
        "note: line 5: `python3 -m vllm.entrypoints.openai.api_server` takes the options of `vllm serve`; "
        "imported as `vllm serve`\n"
    )
    assert _layer(repo, "qwen3-0.6b").split("[serve]\n", 1)[1] == (
        'model = "Qwen/Qwen3-0.6B"\n'
        "port = 8100\n"
        'served_model_name = ["Qwen/Qwen3-0.6B"]\n'
        "max_num_seqs = 64\n"
        "\n"
        "[env]\n"
        'VLLM_LOGGING_LEVEL = "INFO"\n'
        'CUDA_VISIBLE_DEVICES = "0"\n'
    )


def test_every_unknown_option_is_reported_at_its_own_line(repo: Path, run: Run, tmp_path: Path) -> None:
    (tmp_path / "bad.sh").write_text(
        "vllm serve Qwen/Qwen3-0.6B \\\n"
        "  --max-num-seqz 64 \\\n"
        "  --port 8000 \\\n"
        "  --enable-prefix-caching-x \\\n"
        "  --tool-call-parser-plugin x.py \\\n"
        "  --gpu-memory-utilization 0.9 > serve.log\n",
        encoding="utf-8",
    )
    result = run("--repo", repo, "import", "bad.sh", cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: cannot import bad.sh: 3 problems\n"
        "  line 2: --max-num-seqz: vLLM 0.33.0 has no option '--max-num-seqz' (did you mean --max-num-seqs?)\n"
        "  line 4: --enable-prefix-caching-x: vLLM 0.33.0 has no option '--enable-prefix-caching-x' (did you mean "
        "--enable-prefix-caching?)\n"
        "  line 5: --tool-call-parser-plugin: vLLM 0.33.0 has no option '--tool-call-parser-plugin' (did you mean "
        "--tool-parser-plugin?)\n"
    )
    assert list((repo / "profiles").iterdir()) == []


def test_every_shell_problem_is_reported_at_its_own_line(repo: Path, run: Run, tmp_path: Path) -> None:
    (tmp_path / "s.sh").write_text(
        "export A=$(hostname)\nvllm serve $MODEL \\\n  --download-dir ~/models \\\n  --port 8000 && echo ok\n",
        encoding="utf-8",
    )
    result = run("--repo", repo, "import", "s.sh", cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: cannot import s.sh: 3 problems\n"
        "  line 1: $(hostname): shell expansions cannot be represented; write the value\n"
        "  line 2: $MODEL: the script does not set MODEL, so its value is only known when the script runs; "
        "write the value\n"
        "  line 3: ~: bash expands ~ to the home folder of whoever runs the script; write the path\n"
    )


def test_variables_expand_as_bash_expands_them() -> None:
    commands = split_commands('ARGS="--port 8000"\nM=a\nvllm serve "$M b" $ARGS "${ARGS}" ${X:-d e} ${M:+x}\n')
    assert commands[-1].words[:6] == ["vllm", "serve", "a b", "--port", "8000", "--port 8000"]
    assert commands[-1].words[6:8] == ["d", "e"]
    assert [p.message for p in commands[-1].problems] == [
        "line 3: ${M:+x}: shell expansions cannot be represented; write the value"
    ]


def test_unknown_options_on_a_command_line_are_all_named(repo: Path, run: Run, tmp_path: Path) -> None:
    words = ["vllm", "serve", "m", "-O", "3", "--foo", "1", "--kv-transfer-config.kv_role", "x", "--bar=2"]
    result = run("--repo", repo, "import", "--", *words, cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: cannot import the command line: 2 problems\n"
        "  --foo: vLLM 0.33.0 has no option '--foo' (`profilekit flags foo` searches the options of vLLM 0.33.0)\n"
        "  --bar: vLLM 0.33.0 has no option '--bar' (`profilekit flags bar` searches the options of vLLM 0.33.0)\n"
    )


def test_shell_problems_and_unknown_options_come_together_in_line_order(repo: Path, run: Run, tmp_path: Path) -> None:
    (tmp_path / "s.sh").write_text(
        "vllm serve Qwen/Qwen3-0.6B \\\n  --max-num-seqz 64 \\\n  --port $PORT\n", encoding="utf-8"
    )
    result = run("--repo", repo, "import", "s.sh", cwd=tmp_path)
    assert result.code == 2
    assert result.err == (
        "profilekit: error: cannot import s.sh: 2 problems\n"
        "  line 2: --max-num-seqz: vLLM 0.33.0 has no option '--max-num-seqz' (did you mean --max-num-seqs?)\n"
        "  line 3: $PORT: the script does not set PORT, so its value is only known when the script runs; write the "
        "value\n"
    )
