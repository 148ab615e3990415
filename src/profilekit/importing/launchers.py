"""The commands teams put in front of `vllm serve`, and the ones beside it that change nothing vLLM sees.

A launcher runs the command that follows its own options: `srun -p gpu --gres=gpu:8 vllm serve ...`,
`nsys profile -t cuda,nvtx -o out vllm serve ...`, `numactl --cpunodebind=0 ...`, `taskset -c 0-15 ...`,
`timeout 3600 ...`, `stdbuf -oL ...`, `nohup ...`, `uv run ...`, `ray job submit --address X -- ...`,
`conda run -n env ...`, `apptainer exec IMAGE ...`. Their options take values in ways no table holds for every
release of every tool, so the launch is found where the vLLM launch starts after them (`vllm serve`, `python -m
vllm.entrypoints.openai.api_server`, `docker|podman run`, or a `bash -c` string that holds one); the launcher's
words are kept as a comment of the layer and a note, never read as vLLM options.

`env [-i] [-u NAME] [NAME=VALUE]... COMMAND` gives the launch its env entries (`-u` and `-i` are noted); a
`bash -c STRING` (`sh`, `-lc`, `-ec`, ...) is a script of its own, read as bash reads it.
"""

from __future__ import annotations

import os
import re

from profilekit.records import record

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_PYTHON = re.compile(r"^python(3(\.\d+)?)?$")
API_SERVER = "vllm.entrypoints.openai.api_server"
LAUNCHERS = frozenset(
    {
        "srun", "mpirun", "mpiexec", "nsys", "ncu", "numactl", "taskset", "timeout", "stdbuf", "nohup", "nice",
        "ionice", "chrt", "setsid", "time", "uv", "uvx", "ray", "conda", "mamba", "micromamba", "pixi", "poetry",
        "pipenv", "apptainer", "singularity", "exec", "sudo", "unbuffer", "xargs", "flock", "prlimit", "env",
    }
)  # fmt: skip
# commands that change neither vLLM's argv nor its environment: a script's chatter around the launch
BYSTANDERS = frozenset(
    {
        "echo", "printf", "sleep", "mkdir", "cd", "pushd", "popd", "pip", "pip3", "nvidia-smi", "rocm-smi",
        "hostname", "date", "ls", "rm", "touch", "wait", "ulimit", "true", ":", "trap", "pwd", "whoami", "df",
        "free", "nproc", "lscpu", "huggingface-cli", "hf", "chmod", "chown", "cp", "mv", "ln", "cat", "tail",
        "head", "ps", "kill", "pkill", "module", "ml",
    }
)  # fmt: skip
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
# reserved words that open a compound command's body: the command after them is an ordinary one
BODY_KEYWORDS = frozenset({"then", "do", "else", "{", "!"})
# the heads of compound commands and the tests they run (`if pgrep ...`, `until curl ...`, `[ -f x ]`, `fi`):
# around a launch, a script's control flow, never part of it
CONDITIONS = frozenset(
    {
        "if", "elif", "fi", "while", "until", "done", "for", "case", "esac", "}", "[", "[[", "test", "curl", "wget",
        "pgrep", "exit", "return", "break", "continue",
    }
)  # fmt: skip
# commands that choose the Python environment (and with it which vllm runs), not what vLLM is given
# (`conda run -n ENV vllm serve ...` is a launcher: only `conda activate` and `deactivate` choose)
ACTIVATORS = frozenset({"module", "ml", "spack", "pyenv", "activate"})
CONDA = frozenset({"conda", "mamba", "micromamba"})
# bash's builtins that change the shell running the launch (its variables, what it reads): a command that is none
# of them runs as a process of its own, which cannot change the launch's argv or env
ENV_BUILTINS = frozenset(
    {"source", ".", "eval", "declare", "typeset", "readonly", "local", "read", "alias", "shopt", "let", "mapfile"}
)
# the launching machine's own variables: a layer does not carry them
MACHINE_VARIABLES = frozenset({"PATH", "HOME", "USER", "SHELL", "MANPATH", "TERM"})
CONTAINERS = frozenset({"docker", "podman"})
# srun's options that profilekit.toml's [render.slurm] holds, by their long names
_SRUN_SETTINGS = {"-p": "partition", "--partition": "partition", "-t": "time", "--time": "time"}
_SRUN_SETTINGS |= {"-A": "account", "--account": "account"}


def program(word: str) -> str:
    return os.path.basename(word)


def is_vllm_serve(words: list[str], at: int) -> bool:
    return at + 1 < len(words) and program(words[at]) == "vllm" and words[at + 1] == "serve"


def is_api_server(words: list[str], at: int) -> bool:
    return bool(_PYTHON.match(program(words[at]))) and words[at + 1 : at + 3] == ["-m", API_SERVER]


def shell_string(words: list[str], at: int) -> int | None:
    """The index of the script of `bash -c SCRIPT` (`-lc`, `-ec`, `-l -c`, ...) starting at `at`, or None."""
    if program(words[at]) not in SHELLS:
        return None
    for index in range(at + 1, len(words)):
        word = words[index]
        if not word.startswith("-") or word.startswith("--"):
            return None
        if "c" in word[1:]:
            return index + 1 if index + 1 < len(words) else None
    return None


def starts_launch(words: list[str], at: int) -> bool:
    """Whether a vLLM launch (or a container or shell that holds one) starts at `at`."""
    if is_vllm_serve(words, at) or is_api_server(words, at):
        return True
    if program(words[at]) in CONTAINERS and words[at + 1 : at + 2] == ["run"]:
        return True
    script = shell_string(words, at)
    return script is not None and ("vllm" in words[script] or API_SERVER in words[script])


def launch_after(words: list[str], at: int) -> int | None:
    """Where the launch behind the launcher at `at` starts, or None (not a launcher, or nothing it runs)."""
    if program(words[at]) not in LAUNCHERS:
        return None
    for index in range(at + 1, len(words)):
        if starts_launch(words, index):
            return index
    return None


@record(slots=True)
class EnvCommand:
    """What `env [OPTIONS] [NAME=VALUE]...` in front of a launch does: its entries, and notes on its options."""

    next: int  # where the command env runs starts
    entries: dict[str, str]
    notes: list[str]


def env_command(words: list[str], at: int) -> EnvCommand:
    """`env` at `at`: `-u NAME`/`--unset=NAME` and `-i` are noted (the rendered script starts from the environment
    it runs in), `NAME=VALUE` entries taken; `next` is the command env runs."""
    index = at + 1
    entries: dict[str, str] = {}
    notes: list[str] = []
    while index < len(words):
        word = words[index]
        if word in ("-u", "--unset") and index + 1 < len(words):
            notes.append(f"`env -u {words[index + 1]}` removes it from the launching environment; not imported")
            index += 2
        elif word.startswith(("--unset=", "-u")) and word not in ("-u", "--unset"):
            name = word.split("=", 1)[1] if word.startswith("--") else word[2:]
            notes.append(f"`env -u {name}` removes it from the launching environment; not imported")
            index += 1
        elif word in ("-i", "-", "--ignore-environment"):
            notes.append("`env -i` starts the launch with an empty environment; not imported")
            index += 1
        elif (match := _ASSIGNMENT.match(word)) is not None:
            entries[match.group(1)] = match.group(2)
            index += 1
        else:
            break
    return EnvCommand(index, entries, notes)


def env_before(words: list[str], start: int, launch: int) -> dict[str, str]:
    """The `env NAME=VALUE...` entries right in front of the launch at `launch` (behind a launcher at `start`)."""
    for index in range(start, launch):
        if program(words[index]) == "env":
            found = env_command(words, index)
            if found.next == launch:
                return found.entries
    return {}


def srun_settings(words: list[str]) -> list[str]:
    """`[render.slurm]` settings that a `srun` launcher's options name (partition, time, account)."""
    settings: list[str] = []
    for index, word in enumerate(words):
        name, eq, glued = word.partition("=")
        if name in _SRUN_SETTINGS:
            value = glued if eq else (words[index + 1] if index + 1 < len(words) else "")
            if value:
                settings.append(f'{_SRUN_SETTINGS[name]} = "{value}"')
    return settings
