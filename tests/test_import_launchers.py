"""`import` of launches behind launchers, in `bash -c` strings and containers, with `unset`, `;`/`&&`, `$'...'` and a
trailing backslash (issue 29): bash is the reference.

Each script runs under real bash with a stub `vllm` that records its argv and env; the launchers run for real where
the machine has them (`timeout`, `stdbuf`, `nohup`, `env`, `taskset`) and otherwise as stubs that run the command
behind their options, as they do (`srun`, `nsys`, `uv`, `ray`, `numactl`, `docker`). What `import` wrote must be
what the stub received: the options as profilekit reads vLLM's words (vllm/cmdline.py), and the env entries.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from profilekit.vllm.catalogue import load_catalogue
from profilekit.vllm.cmdline import read_serve_args
from tests.conftest import MakeRepo, Run

MODEL = "Qwen/Qwen3-0.6B"
CASES = {
    "srun": f"srun -p gpu --gres=gpu:8 -N 1 --job-name=serve vllm serve {MODEL} --max-num-seqs 32\n",
    "nsys": f"nsys profile -t cuda,nvtx -o /tmp/prof --force-overwrite true vllm serve {MODEL} --enforce-eager\n",
    "uv-run": f"uv run --with vllm vllm serve {MODEL} --port 8100\n",
    "ray-job": f"ray job submit --address http://127.0.0.1:8265 -- vllm serve {MODEL} --tensor-parallel-size 2\n",
    "numactl": f"numactl --cpunodebind=0 --membind=0 vllm serve {MODEL} --max-model-len 4096\n",
    "taskset": f"taskset -c 0-1 vllm serve {MODEL} --seed 7\n",
    "timeout": f"timeout -s INT 3600 vllm serve {MODEL} --max-num-seqs 8\n",
    "stdbuf": f"stdbuf -oL -eL vllm serve {MODEL} --port 8300\n",
    "nohup": f"nohup vllm serve {MODEL} --port 8001 > serve.log 2>&1 &\nwait\n",
    "env-u": f"env -u ftp_proxy VLLM_LOGGING_LEVEL=DEBUG vllm serve {MODEL}\n",
    "unset": f"unset ftp_proxy http_proxy\nexport VLLM_LOGGING_LEVEL=DEBUG\nvllm serve {MODEL}\n",
    "trailing-backslash": f"vllm serve {MODEL} \\\n  --max-num-seqs 32 \\",
    "bash-c": f"bash -ec 'export VLLM_LOGGING_LEVEL=DEBUG; vllm serve {MODEL} --port \"8100\"'\n",
    "ansi-c": f"vllm serve {MODEL} --served-model-name $'qwen\\x2dsmall' --chat-template $'{{{{ x }}}}\\n\\tend'\n",
    "docker-entrypoint": (
        f"docker run --gpus all --entrypoint=/bin/bash vllm/vllm-openai:v0.33.0 -c 'vllm serve {MODEL} --port 8200'\n"
    ),
    "sequence": f"cd /tmp && echo starting; vllm serve {MODEL} --max-model-len 4096\n",
}
# (a login shell, `bash -lc`, would read /etc/profile and its PATH, not the stubs': the cases use -c and -ec)
# what the stand-ins do: run the command behind the launcher's options (from `vllm serve`, as the real ones do for
# these launches); `docker run [--gpus X] --entrypoint=E IMAGE ARGS...` runs `E ARGS...`
LAUNCHER_STUB = f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
start = next(i for i in range(len(args)) if args[i : i + 2] == ["vllm", "serve"])
os.execvp("vllm", args[start:])
"""
DOCKER_STUB = f"""#!{sys.executable}
import os, sys
args = sys.argv[2:]
entry = None
while args[0].startswith("-"):
    word = args.pop(0)
    if word.startswith("--entrypoint="):
        entry = word.split("=", 1)[1]
    elif word in ("--gpus", "--entrypoint"):
        value = args.pop(0)
        entry = value if word == "--entrypoint" else entry
args.pop(0)  # the image
os.execvp(entry or "vllm", [entry or "vllm", *([] if entry else ["serve"]), *args])
"""
VLLM_STUB = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["STUB_RECORD"], "w") as f:
    json.dump({{"argv": sys.argv[1:], "env": dict(os.environ)}}, f)
"""


def _stub(folder: Path, name: str, text: str) -> None:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def stubs(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    _stub(folder, "vllm", VLLM_STUB)
    _stub(folder, "docker", DOCKER_STUB)
    for name in ("srun", "nsys", "uv", "ray", "numactl", "timeout", "stdbuf", "nohup", "taskset"):
        if shutil.which(name) is None or name in ("srun", "nsys", "uv", "ray", "numactl"):
            _stub(folder, name, LAUNCHER_STUB)
    return folder


def _bash(script: Path, stubs: Path, record: Path) -> dict[str, object]:
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "STUB_RECORD": str(record), "ftp_proxy": "x"}
    done = subprocess.run(
        ["bash", str(script)], env=env, cwd=script.parent, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(record.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("case", sorted(CASES))
def test_import_reads_the_launch_bash_runs(
    make_repo: MakeRepo, run: Run, tmp_path: Path, stubs: Path, case: str
) -> None:
    script = tmp_path / "launch.sh"
    script.write_text(CASES[case], encoding="utf-8")
    ran = _bash(script, stubs, tmp_path / "record.json")
    argv = ran["argv"]
    assert isinstance(argv, list) and argv[0] == "serve"
    repo = make_repo({})
    result = run("--repo", repo, "import", "--name", "imported", str(script), cwd=tmp_path)
    assert result.code == 0, result
    layer = tomllib.loads((repo / "profiles" / "imported.toml").read_text(encoding="utf-8"))
    catalogue = load_catalogue("0.33.0")
    expected = read_serve_args(argv[1:], catalogue, lambda _file: []).serve
    assert layer["serve"] == expected
    env = ran["env"]
    assert isinstance(env, dict)
    for name, value in layer.get("env", {}).items():
        assert env.get(name) == value, name  # every entry imported is what the launch was given
    if "VLLM_LOGGING_LEVEL=DEBUG" in CASES[case]:
        assert layer["env"]["VLLM_LOGGING_LEVEL"] == env["VLLM_LOGGING_LEVEL"] == "DEBUG"


def test_the_launcher_is_kept_as_a_comment_and_srun_names_its_settings(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    script = tmp_path / "launch.sh"
    script.write_text(CASES["srun"], encoding="utf-8")
    repo = make_repo({})
    result = run("--repo", repo, "import", "--name", "imported", str(script), cwd=tmp_path)
    assert result.code == 0, result
    text = (repo / "profiles" / "imported.toml").read_text(encoding="utf-8")
    assert "# It ran behind `srun -p gpu --gres=gpu:8 -N 1 --job-name=serve`, which a layer does not hold." in text
    assert result.err.startswith(
        "note: line 1: `srun -p gpu --gres=gpu:8 -N 1 --job-name=serve` in front of the launch is the launcher's, "
        "not vLLM's; not imported (profilekit.toml's [render.slurm] holds partition = \"gpu\"; the GPUs come from "
        "the role)\n"
    )


def test_unset_and_bystanders_are_notes_not_refusals(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    script = tmp_path / "launch.sh"
    script.write_text(CASES["unset"] + "echo done\n", encoding="utf-8")
    repo = make_repo({})
    result = run("--repo", repo, "import", "--name", "imported", str(script), cwd=tmp_path)
    assert result.code == 0, result
    assert "note: line 1: `unset ftp_proxy` removes it from the launching environment; not imported\n" in result.err
    assert "note: line 4: `echo done` runs after the launch and changes neither its argv nor its env" in result.err


def test_a_launcher_with_no_launch_behind_it_is_still_refused(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    repo = make_repo({})
    result = run("--repo", repo, "import", "--", "srun", "-p", "gpu", "python", "train.py")
    assert result.code == 2
    assert "`srun -p gpu python train.py` is not a vllm serve launch" in result.err
    assert list((repo / "profiles").iterdir()) == []


def test_a_login_shell_string_is_read_as_its_script(make_repo: MakeRepo, run: Run) -> None:
    repo = make_repo({})
    words = ["docker", "run", "--entrypoint", "bash", "vllm/vllm-openai:v0.33.0", "-lc", f"vllm serve {MODEL} --seed 3"]
    result = run("--repo", repo, "import", "--name", "imported", "--", *words)
    assert result.code == 0, result
    layer = tomllib.loads((repo / "profiles" / "imported.toml").read_text(encoding="utf-8"))
    assert layer["serve"] == {"model": MODEL, "seed": 3}


ANSI_C = [r"a\tb", r"x\x41y\x4", r"\101\60\7", r"\u00e9\U0001F600", r"\'\"\\\?", r"\cA\c?", r"\e[1m\E", r"\q\z", "a\nb"]


@pytest.mark.parametrize("body", ANSI_C)
def test_ansi_c_quoting_decodes_as_bash_decodes_it(body: str) -> None:
    from profilekit.importing.shellwords import ansi_c_decode

    done = subprocess.run(
        ["bash", "-c", f"printf %s $'{body}'"], capture_output=True, check=True, env={"LC_ALL": "C.UTF-8"}
    )
    assert ansi_c_decode(body) == done.stdout.decode("utf-8", errors="surrogateescape")


REFUSED_BY_VLLM = {
    "gpu-memory": (["--gpu-memory-utilization", "1.5"], "error invalid-value serve.gpu_memory_utilization"),
    "compilation-level": (["--compilation-config", '{"level": 3}'], "error unknown-option serve.compilation_config"),
    "replayssm-offload-qwen": (["--use-replayssm", "--kv-offloading-size", "16"], "error replayssm-architecture"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_BY_VLLM))
def test_a_launch_vllm_would_refuse_is_written_and_said_to_be_refused(make_repo: MakeRepo, run: Run, case: str) -> None:
    options, finding = REFUSED_BY_VLLM[case]
    repo = make_repo({})
    result = run("--repo", repo, "import", "--name", "launch", "--", "vllm", "serve", MODEL, *options)
    assert result.code == 1, result
    assert result.out == "profiles/launch.toml\n"  # it is what runs today: written
    assert finding in result.err
    assert result.err.endswith(
        "the imported launch would not start on vLLM 0.33.0: 1 error above; the layer is written as it runs today: "
        "fix it with `profilekit check launch`\n"
    )


SCRIPT_AROUND = f"""#!/bin/bash
#SBATCH --gres=gpu:1
SCRIPT_DIR="$(cd -- "$(dirname -- "${{BASH_SOURCE[0]}}")" &> /dev/null && pwd)"
PID_FILE=$SCRIPT_DIR/vllm.pid
export PATH=$HOME/.local/bin:$PATH
eval "$(conda shell.bash hook)"
conda activate serve
source .venv/bin/activate
module load cuda/12.4
if pgrep -f vllm; then echo running; exit 0; fi
export VLLM_LOGGING_LEVEL=INFO
vllm serve {MODEL} --max-num-seqs 16 &
echo $! > "$PID_FILE"
until curl -s localhost:8000/health; do sleep 5; done
wait || echo failed
"""


def test_a_scripts_set_up_and_control_flow_around_the_launch_are_notes(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    script = tmp_path / "job.sh"
    script.write_text(SCRIPT_AROUND, encoding="utf-8")
    repo = make_repo({})
    result = run("--repo", repo, "import", "--name", "imported", str(script), cwd=tmp_path)
    assert result.code == 0, result
    layer = tomllib.loads((repo / "profiles" / "imported.toml").read_text(encoding="utf-8"))
    assert layer["serve"] == {"model": MODEL, "max_num_seqs": 16}
    assert layer["env"] == {"VLLM_LOGGING_LEVEL": "INFO"}  # not PATH: the machine's
    for note in (
        "note: line 5: export PATH is the launching machine's; not imported",
        'note: line 6: `eval "$(conda shell.bash hook)"` sets up conda\'s shell functions',
        "note: line 7: `conda activate serve` sets up the Python environment the launch runs in",
        "note: line 8: `source .venv/bin/activate` activates a Python virtual environment",
        "note: line 10: `if pgrep -f vllm` runs beside the launch",
        "note: line 14: `until curl -s localhost:8000/health` runs after the launch",
    ):
        assert note in result.err, note


def test_a_script_variable_with_a_run_time_value_is_a_problem_only_when_the_launch_gets_it(
    make_repo: MakeRepo, run: Run, tmp_path: Path
) -> None:
    script = tmp_path / "job.sh"
    script.write_text(f"HOST=$(hostname -i)\nexport HOST\nvllm serve {MODEL}\n", encoding="utf-8")
    repo = make_repo({})
    result = run("--repo", repo, "import", "--name", "imported", str(script), cwd=tmp_path)
    assert result.code == 2
    assert "line 1: $(hostname -i): shell expansions cannot be represented; write the value" in result.err
    script.write_text(f"HOST=$(hostname -i)\necho $HOST\nvllm serve {MODEL}\n", encoding="utf-8")
    assert run("--repo", repo, "import", "--name", "imported", str(script), cwd=tmp_path).code == 0


def test_a_batch_scripts_directives_and_argument_defaults(make_repo: MakeRepo, run: Run, tmp_path: Path) -> None:
    script = tmp_path / "job.sbatch"
    script.write_text(
        "#!/bin/bash\n#SBATCH --partition=gpu\n#SBATCH -t 02:00:00\n#SBATCH --gres=gpu:1\n"
        f'MODEL=${{1:-"{MODEL}"}}\nPORT=${{2:-8000}}\nvllm serve "$MODEL" --port $PORT\n',
        encoding="utf-8",
    )
    repo = make_repo({})
    result = run("--repo", repo, "import", "--name", "imported", str(script), cwd=tmp_path)
    assert result.code == 0, result
    layer = tomllib.loads((repo / "profiles" / "imported.toml").read_text(encoding="utf-8"))
    assert layer["serve"] == {"model": MODEL, "port": 8000}  # as bash runs it without arguments
    assert "the script is run without argument 1; took the default 'Qwen/Qwen3-0.6B'" in result.err
    assert (
        'note: #SBATCH lines: profilekit.toml\'s [render.slurm] holds partition = "gpu", time = "02:00:00"'
        in result.err
    )
    ran = _bash(script, _stubs_for(tmp_path), tmp_path / "record.json")
    assert ran["argv"] == ["serve", MODEL, "--port", "8000"]


def _stubs_for(tmp_path: Path) -> Path:
    folder = tmp_path / "stub-bin"
    folder.mkdir()
    _stub(folder, "vllm", VLLM_STUB)
    return folder
