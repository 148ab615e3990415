"""Shell completion through click's environment protocol, run as a shell runs it: the `profilekit` command with
`_PROFILEKIT_COMPLETE` and the words in `COMP_WORDS`/`COMP_CWORD`, and a real bash sourcing the script."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, MakeRepo

BIN = Path(sys.executable).parent


def _env(cache: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", "/"),
        "PROFILEKIT_CACHE_DIR": str(cache),
        **extra,
    }


def profilekit(tmp_path: Path, *, cwd: Path = REPO_ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    """The `profilekit` command as a shell starts it for a completion: no arguments, the request in `env`."""
    return run_in([str(BIN / "profilekit")], tmp_path, cwd=cwd, **env)


def run_in(argv: list[str], tmp_path: Path, *, cwd: Path = REPO_ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False, cwd=cwd, env=_env(tmp_path, **env))


def complete(
    words: str, cword: int | str, *, shell: str = "bash", cwd: Path = REPO_ROOT, cache: Path
) -> subprocess.CompletedProcess[str]:
    return profilekit(cache, cwd=cwd, _PROFILEKIT_COMPLETE=f"{shell}_complete", COMP_WORDS=words, COMP_CWORD=str(cword))


def candidates(words: str, cword: int, *, cwd: Path = REPO_ROOT, cache: Path) -> list[str]:
    proc = complete(words, cword, cwd=cwd, cache=cache)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout.splitlines()


@pytest.mark.parametrize(
    ("words", "cword", "expected"),
    [
        ("profilekit check nemo", 2, ["plain,nemotron-replayssm"]),
        ("profilekit d", 1, ["plain,diff", "plain,doctor"]),
        ("profilekit check --f", 2, ["plain,--format"]),
        ("profilekit check base+rep", 2, ["plain,base+replayssm"]),
        (
            "profilekit render nemotron-replayssm+site/",
            2,
            ["plain,nemotron-replayssm+site/gb200", "plain,nemotron-replayssm+site/h100"],
        ),
        ("profilekit check nemotron-replayssm+nemo", 2, []),  # a layer already in the stack is not offered again
        ("profilekit set site/h", 2, ["plain,site/h100"]),
        ("profilekit set --check nemo", 3, ["plain,nemotron-replayssm"]),
        ("profilekit explain qwen-disaggregated serve.max_n", 3, ["plain,serve.max_num_seqs"]),
        ("profilekit explain qwen-disaggregated roles.prefill.serve.p", 3, ["plain,roles.prefill.serve.port"]),
        ("profilekit explain qwen-disaggregated env.VLLM_N", 3, ["plain,env.VLLM_NIXL_SIDE_CHANNEL_PORT"]),
        # the keys the layer writes first, then the release's options
        (
            "profilekit set base serve.max_num_s",
            3,
            ["plain,serve.max_num_seqs", "plain,serve.max_num_scheduled_tokens"],
        ),
        (
            "profilekit unset disaggregated roles.prefill.e",
            3,
            [
                "plain,roles.prefill.env",
                "plain,roles.prefill.env.CUDA_VISIBLE_DEVICES",
                "plain,roles.prefill.env.VLLM_NIXL_SIDE_CHANNEL_PORT",
            ],
        ),
        ("profilekit doctor qwen-o", 2, ["plain,qwen-offload"]),
        ("profilekit explain qwen-disaggregated --role p", 4, ["plain,prefill", "plain,proxy"]),
        ("profilekit explain qwen-disaggregated serve.port --role d", 5, ["plain,decode"]),
        ("profilekit show qwen-disaggregated qwen-offload --role s", 5, ["plain,serve"]),  # the roles of both
        ("profilekit render nope --role p", 4, []),
    ],
)
def test_bash_protocol(words: str, cword: int, expected: list[str], tmp_path: Path) -> None:
    assert candidates(words, cword, cache=tmp_path) == expected


def test_zsh_and_fish_protocols(tmp_path: Path) -> None:
    zsh = complete("profilekit check nemo", 2, shell="zsh", cache=tmp_path)
    assert (zsh.returncode, zsh.stdout, zsh.stderr) == (0, "plain\nnemotron-replayssm\n_\n", "")
    # zsh shows a command's help beside it
    assert complete("profilekit do", 1, shell="zsh", cache=tmp_path).stdout == (
        "plain\ndoctor\nAudit this machine: the installed vLLM,...\n"
    )
    # fish passes the whole line and the token being completed
    fish = complete("profilekit check nemo", "nemo", shell="fish", cache=tmp_path)
    assert (fish.returncode, fish.stdout, fish.stderr) == (0, "plain,nemotron-replayssm\n", "")


def test_repo_option_anywhere_before_the_word(tmp_path: Path) -> None:
    assert candidates(f"profilekit --repo {REPO_ROOT} check qwen-d", 4, cwd=tmp_path, cache=tmp_path) == [
        "plain,qwen-disaggregated"
    ]


def test_no_repository_or_a_broken_layer_offers_nothing_quietly(make_repo: MakeRepo, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert candidates("profilekit check x", 2, cwd=outside, cache=tmp_path) == []
    root = make_repo({"broken.toml": "[serve\nport = 1\n", "ok.toml": "[serve]\nport = 1\n"})
    assert candidates("profilekit explain broken serve.", 3, cwd=root, cache=tmp_path) == []
    assert candidates("profilekit unset broken s", 3, cwd=root, cache=tmp_path) == []
    assert candidates("profilekit unset ok s", 3, cwd=root, cache=tmp_path) == ["plain,serve", "plain,serve.port"]


def test_completion_is_never_answered_from_the_cache(make_repo: MakeRepo, tmp_path: Path) -> None:
    root = make_repo({"alpha.toml": "[serve]\nmodel = 'm'\n"})
    assert candidates("profilekit check al", 2, cwd=root, cache=tmp_path) == ["plain,alpha"]
    (root / "profiles" / "alpine.toml").write_text("[serve]\nmodel = 'm'\n", encoding="utf-8")
    assert candidates("profilekit check al", 2, cwd=root, cache=tmp_path) == ["plain,alpha", "plain,alpine"]


def test_completion_runs_no_rule_engine(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from profilekit.cli import main\n"
        "code = main()\n"
        "sys.stderr.write(f'{code} ' + ' '.join(m for m in ('profilekit.rules', 'jinja2') if m in sys.modules))\n"
    )
    proc = run_in(
        [sys.executable, "-c", probe],
        tmp_path,
        _PROFILEKIT_COMPLETE="bash_complete",
        COMP_WORDS="profilekit explain qwen-disaggregated serve.max_n",
        COMP_CWORD="3",
    )
    assert (proc.stdout, proc.stderr) == ("plain,serve.max_num_seqs\n", "0 ")


def test_unknown_instruction_is_a_usage_error(tmp_path: Path) -> None:
    proc = profilekit(tmp_path, _PROFILEKIT_COMPLETE="tcsh_source")
    assert proc.returncode == 2
    assert proc.stderr == (
        "profilekit: error: unknown completion instruction _PROFILEKIT_COMPLETE='tcsh_source'\n"
        "  hint: use bash_source, zsh_source or fish_source (see README, Shell completion)\n"
    )


def _source(shell: str, tmp_path: Path) -> str:
    proc = profilekit(tmp_path, _PROFILEKIT_COMPLETE=f"{shell}_source")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_bash_sources_the_script_and_completes_through_it(tmp_path: Path) -> None:
    script = tmp_path / "profilekit.bash"
    script.write_text(_source("bash", tmp_path), encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False).returncode == 0
    session = (
        f". {script}\n"
        "complete -p profilekit\n"
        "COMP_WORDS=(profilekit check base+rep); COMP_CWORD=2\n"
        "_profilekit_completion profilekit\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    proc = run_in(["bash", "--norc", "-c", session], tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == "complete -o nosort -F _profilekit_completion profilekit\nbase+replayssm\n"


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_parse(shell: str, tmp_path: Path) -> None:
    text = _source(shell, tmp_path)
    assert "_PROFILEKIT_COMPLETE=" + shell + "_complete" in text
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here")
    script = tmp_path / f"profilekit.{shell}"
    script.write_text(text, encoding="utf-8")
    check = [shell, "-n", str(script)] if shell == "zsh" else [shell, "--no-execute", str(script)]
    assert subprocess.run(check, capture_output=True, text=True, check=False).returncode == 0


def test_fish_completes_through_the_sourced_script(tmp_path: Path) -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed here")
    script = tmp_path / "profilekit.fish"
    script.write_text(_source("fish", tmp_path), encoding="utf-8")
    session = f'source {script}; complete -C "profilekit check nemo"; complete -C "profilekit explain qwen-offload serve.max_n"'
    proc = run_in(
        ["fish", "--no-config", "-c", session], tmp_path, XDG_CONFIG_HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path)
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == "nemotron-replayssm\nserve.max_num_seqs\n"
