"""`profilekit import`: an existing `vllm serve` launch (a command line or a bash script) as a layer file.

The launch is read the way bash and then vLLM would read it (`shellwords`, `vllm/cmdline.py`), so the
layer renders back to a command line that vLLM parses to the same values (the oracle suite checks
this). What only a shell could evaluate, what vLLM would refuse, and what a layer cannot hold are
refused with the reason; nothing is written then.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomlkit

from profilekit.compose.references import escape
from profilekit.errors import UsageError
from profilekit.importing.launchers import (
    ACTIVATORS,
    API_SERVER,
    BODY_KEYWORDS,
    BYSTANDERS,
    CONDA,
    CONDITIONS,
    CONTAINERS,
    ENV_BUILTINS,
    MACHINE_VARIABLES,
    env_before,
    env_command,
    is_api_server,
    is_vllm_serve,
    launch_after,
    program,
    shell_string,
    srun_settings,
    starts_launch,
)
from profilekit.importing.manifests import ManifestError, form_of, read_compose, read_k8s, read_systemd
from profilekit.importing.roles import ImportedRole, role_name, roles_layer_text, toml_item, toml_table
from profilekit.importing.shellwords import Command, Problem, ShellError, split_commands
from profilekit.quoting import comment_text, env_file_value
from profilekit.records import record
from profilekit.redact import is_secret as literal_secret
from profilekit.redact import is_secret_entry, leaf_name
from profilekit.vllm.cmdline import CommandLineError, option_problems, read_serve_args
from profilekit.vllm.config_yaml import YamlError, config_args, read_yaml

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Catalogue

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_LAYER_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$")
_LINE = re.compile(r"^line (\d+): ")
# `docker run` options that take a value as the next word (docker run --help)
_DOCKER_VALUE_OPTIONS = {
    "-e", "--env", "--env-file", "-v", "--volume", "-p", "--publish", "--name", "--gpus", "--runtime", "--ipc",
    "--shm-size", "--network", "--net", "--entrypoint", "-w", "--workdir", "--mount", "--device", "-u", "--user",
    "--restart", "--cpus", "-m", "--memory", "--ulimit", "-l", "--label", "-h", "--hostname", "--platform", "--pull",
    "--cap-add", "--cap-drop", "--security-opt", "--add-host", "--log-driver", "--log-opt", "--cpuset-cpus",
    "--memory-swap", "--pid", "--uts", "--userns", "--group-add", "--tmpfs", "--volumes-from", "--dns",
}  # fmt: skip


@record(slots=True)
class Imported:
    """A layer made from a launch: where it goes, its TOML text, and notes for the user."""

    name: str
    path: Path
    text: str
    serve: dict[str, Any]
    env: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    own_hosts: bool = False  # from containers (k8s, compose): each role has a host of its own


@record(slots=True)
class _Launch:
    command: Command
    env: dict[str, str]
    args: list[str]
    arg_lines: list[int]
    launchers: list[str] = field(default_factory=list)  # the words in front of the launch: a comment of the layer


@record(slots=True)
class _Problems:
    """Everything that stops an import, each at its own line, reported together."""

    items: list[tuple[str, str]] = field(default_factory=list)  # (message, hint)

    def add(self, message: str, hint: str = "") -> None:
        self.items.append((message, hint))

    def add_shell(self, command: Command, ignored: set[int] | None = None) -> None:
        """The command's shell problems, but for words the launch does not use (`ignored`)."""
        for problem in command.problems:
            if problem.word is None or problem.word not in (ignored or set()):
                self.add(problem.message)

    def raise_if_any(self, source: str) -> None:
        if len(self.items) == 1:
            raise _refuse(source, *self.items[0])
        if self.items:
            ordered = sorted(self.items, key=lambda item: _line_number(item[0]))
            lines = [message + (f" ({hint})" if hint else "") for message, hint in ordered]
            raise UsageError(f"cannot import {source}: {len(lines)} problems\n" + "\n".join(f"  {m}" for m in lines))


def _line_number(message: str) -> int:
    match = _LINE.match(message)
    return int(match.group(1)) if match else 0


def stripped_env(name: str, value: str) -> bool:
    """Env entries kept out of layer files: redact.py's one definition of a secret (the `literal-secret` rule's
    and the redaction's), by name whatever the value, or by the value's shape."""
    return is_secret_entry(name, value)


def _refuse(where: str, message: str, hint: str = "") -> UsageError:
    return UsageError(f"cannot import {where}: {message}", hint=hint)


def _credential(serve: dict[str, Any]) -> str | None:
    """The dotted key of the first secret-looking value, at any depth (e.g. `kv_connector_extra_config.auth_token`)."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((key,), value) for key, value in serve.items()]
    while stack:
        path, value = stack.pop(0)
        if isinstance(value, dict):
            stack += [((*path, key), inner) for key, inner in value.items()]
        elif isinstance(value, list):
            stack += [((*path, index), inner) for index, inner in enumerate(value)]
        elif isinstance(value, str) and literal_secret(leaf_name(path), value):
            return ".".join(str(part) for part in path)
    return None


def _where(command: Command, script: Path | None) -> str:
    return f"line {command.line}: " if script is not None else ""


def _at(command: Command, index: int, script: Path | None) -> str:
    return f"line {command.line_of(index)}: " if script is not None else ""


def _export(cmd: Command, where: str, state: _State, launch: _Launch | None, problems: _Problems) -> None:
    """`export A=x B ...`: entries for the launch (the machine's PATH and those after the launch are notes, and what
    a shell would make of their values does not matter)."""
    ignored: set[int] = set()
    for index, word in enumerate(cmd.words[1:], start=1):
        match = _ASSIGNMENT.match(word)
        if word.startswith("-"):
            problems.add(f"{where}`export {word}` cannot be represented")
        elif match and (launch is not None or match.group(1) in MACHINE_VARIABLES):
            ignored.add(index)
            why = "comes after the launch" if launch is not None else "is the launching machine's"
            state.notes.append(f"{where}export {match.group(1)} {why}; not imported")
        elif match:
            state.exported[match.group(1)] = match.group(2)
        elif word in state.shell_vars:
            _line, value, held = state.shell_vars.pop(word)
            state.exported[word] = value
            problems.items += [(message, "") for message in held]
        else:
            state.notes.append(f"{where}export {word} passes on the launching environment's value; not imported")
    problems.add_shell(cmd, ignored)


@record(slots=True)
class _State:
    notes: list[str]
    exported: dict[str, str] = field(default_factory=dict)
    # assigned, not (yet) exported: the line, the value, and the shell problems of the value (they matter once it is)
    shell_vars: dict[str, tuple[int, str, list[str]]] = field(default_factory=dict)


_NOT_A_LAUNCH = (
    "profilekit import reads `export` and assignment lines and one launch: `vllm serve ...`, "
    "`python -m vllm.entrypoints.openai.api_server ...` or `docker run ... vllm/vllm-openai ...`, also behind a "
    "launcher (`srun`, `nsys profile`, `numactl`, `env`, `uv run`, `bash -c`, ...)"
)


@record(slots=True)
class _Found:
    """A launch in one command: the words vLLM reads (after `vllm serve`), the line of each, the env its launchers
    give, and the launchers' own words (kept as a comment of the layer)."""

    args: list[str]
    lines: list[int]
    env: dict[str, str] = field(default_factory=dict)
    launchers: list[str] = field(default_factory=list)


@record(slots=True)
class _Reader:
    """What reading one script needs at every step: where it comes from, and where notes and problems go."""

    script: Path | None
    source: str
    notes: list[str]
    problems: _Problems
    known: dict[str, str] = field(default_factory=dict)  # the environment a `sh -c` string sees (a container's)


def _find_launch(
    commands: list[Command],
    script: Path | None,
    notes: list[str],
    source: str,
    problems: _Problems,
    *,
    known: dict[str, str] | None = None,
) -> _Launch:
    """The launch command of a script; what stops the import goes to `problems`, raised by the caller. `known`: the
    environment a `sh -c` string in it sees (a container's env)."""
    reader = _Reader(script, source, notes, problems, dict(known or {}))
    state = _State(notes)
    launch: _Launch | None = None
    for cmd in commands:
        notes += cmd.notes
        for var in cmd.expanded:  # the script used it itself: not a variable the launch misses
            state.shell_vars.pop(var, None)
        found = _one_command(cmd, reader, state, launch)
        if found is None:
            continue
        if launch is not None:
            raise _refuse(
                source,
                f"it holds more than one vllm serve launch (lines {launch.command.line} and {cmd.line})",
                "import one launch per layer: copy each into its own script, or pass it after --",
            )
        launch = _Launch(cmd, {**state.exported, **found.env}, found.args, found.lines, found.launchers)
    if launch is None:
        problems.raise_if_any(source)
        raise _refuse(source, "no `vllm serve` command found")
    for var, (line, _value, _held) in state.shell_vars.items():
        notes.append(f"line {line}: {var} is a shell variable the launch does not see (not exported); not imported")
    return launch


def _one_command(cmd: Command, reader: _Reader, state: _State, launch: _Launch | None) -> _Found | None:
    """One command of the script: the launch (returned), or what it does to the launch's environment."""
    problems = reader.problems
    where = _where(cmd, reader.script)
    words = _after_keywords(cmd)
    if not words or words[0] == "set":
        return None  # shell options (set -euo pipefail) change nothing vLLM sees
    if words[0] == "export":
        _export(cmd, where, state, launch, problems)
        return None
    if words[0] == "unset":
        for name in words[1:]:
            state.exported.pop(name, None)
            state.shell_vars.pop(name, None)
            reader.notes.append(f"{where}`unset {name}` removes it from the launching environment; not imported")
        return None
    at, assignments, ignored = _assignments(words)
    if at == len(words):  # assignments only: the script's own variables
        held = [p.message for p in cmd.problems]
        for var, value in assignments.items():
            state.shell_vars[var] = (cmd.line, value, held)
        return None
    aside = _aside(words, at, launch)
    if aside is not None:
        reader.notes.append(f"{where}`{_shown(cmd)}` {aside}; not imported")
        return None
    found = _launch_words(cmd, at, reader, ignored)
    if found is None and reader.script is not None and program(words[at]) not in ENV_BUILTINS:
        # in a script, a command that launches nothing runs as a process of its own: it cannot change the launch
        what = "runs before the launch as a process of its own, which changes neither its argv nor its env"
        reader.notes.append(f"{where}`{_shown(cmd)}` {what}; not imported")
        return None
    if found is None:
        problems.add_shell(cmd)
        problems.add(f"{where}`{_shown(cmd)}` is not a vllm serve launch", _NOT_A_LAUNCH)
        return None
    problems.add_shell(cmd, ignored)
    found.env = {**assignments, **found.env}
    return found


def _after_keywords(cmd: Command) -> list[str]:
    """The command's words without the reserved words that open a compound command's body (`then`, `do`, `else`,
    `{`, `!`): `if ...; then vllm serve ...` runs `vllm serve ...`."""
    words = cmd.words
    at = 0
    while at < len(words) and words[at] in BODY_KEYWORDS:
        at += 1
    if at:  # the words' positions shift: the command keeps its own (its problems name them)
        cmd.words, cmd.word_lines = words[at:], cmd.word_lines[at:]
        cmd.problems = [p if p.word is None else replace(p, word=p.word - at) for p in cmd.problems]
    return cmd.words


def _aside(words: list[str], at: int, launch: _Launch | None) -> str | None:
    """Why a command that is not the launch is no part of it, or None: it may be (or be a problem)."""
    name = program(words[at])
    chooses = name in CONDA and words[at + 1 : at + 2] in (["activate"], ["deactivate"])
    if name in ACTIVATORS or chooses or words[at : at + 2] == ["source", "activate"]:
        return "sets up the Python environment the launch runs in, which the rendered script does not choose"
    if name == "eval" and any("shell.bash hook" in word or "conda" in word for word in words[at + 1 :]):
        return "sets up conda's shell functions, which the rendered script does not need"
    if name in ("source", ".") and len(words) > at + 1 and words[at + 1].endswith("/activate"):
        return "activates a Python virtual environment, which the rendered script does not choose"
    if name in BYSTANDERS or name in CONDITIONS:
        return f"runs {'after' if launch is not None else 'beside'} the launch and changes neither its argv nor its env"
    if launch is not None and not starts_launch(words, at):
        return "runs after the launch and changes neither its argv nor its env"
    return None


def _shown(cmd: Command) -> str:
    return cmd.text if len(cmd.text) <= 60 else cmd.text[:57] + "..."


def _assignments(words: list[str]) -> tuple[int, dict[str, str], set[int]]:
    """`NAME=VALUE` words in front of a command: where the command starts, the entries, and the words whose
    shell problems do not matter (a secret's value is never written)."""
    at = 0
    assignments: dict[str, str] = {}
    ignored: set[int] = set()
    while at < len(words) and _ASSIGNMENT.match(words[at]):
        name, value = words[at].split("=", 1)
        assignments[name] = value
        if stripped_env(name, value):
            ignored.add(at)
        at += 1
    return at, assignments, ignored


def _launch_words(cmd: Command, at: int, reader: _Reader, ignored: set[int]) -> _Found | None:
    """The launch that starts at `at` in a command (behind launchers, in a container, in a `bash -c`), or None."""
    words = cmd.words
    if words[at] == "exec" and at + 1 < len(words):  # the shell replaces itself with the launch: nothing to note
        return _launch_words(cmd, at + 1, reader, ignored)
    if is_vllm_serve(words, at) or is_api_server(words, at):
        ignored.add(at)  # the program's own path (`$VENV/bin/python`) does not reach vLLM
    if is_vllm_serve(words, at):
        return _Found(words[at + 2 :], [cmd.line_of(i) for i in range(at + 2, len(words))])
    if is_api_server(words, at):
        reader.notes.append(
            f"{_at(cmd, at, reader.script)}`{program(words[at])} -m {API_SERVER}` takes the options of `vllm serve`; "
            "imported as `vllm serve`"
        )
        return _Found(words[at + 3 :], [cmd.line_of(i) for i in range(at + 3, len(words))])
    if program(words[at]) in CONTAINERS and words[at + 1 : at + 2] == ["run"]:
        return _container_run(cmd, at, reader, ignored)
    if program(words[at]) == "env":
        return _behind_env(cmd, at, reader, ignored)
    script = shell_string(words, at)
    if script is not None:
        return _shell_c(cmd, at, script, reader, ignored)
    start = launch_after(words, at)
    if start is None:
        return None
    found = _launch_words(cmd, start, reader, ignored)
    if found is None:
        return None
    ignored.update(range(at, start))  # the launcher's words are not imported: what a shell makes of them neither
    launcher = " ".join(words[at:start])
    found.launchers.insert(0, launcher)
    found.env = {**env_before(words, at, start), **found.env}
    note = (
        f"{_at(cmd, at, reader.script)}`{launcher}` in front of the launch is the launcher's, not vLLM's; not imported"
    )
    if program(words[at]) == "srun" and (settings := srun_settings(words[at:start])):
        note += f" (profilekit.toml's [render.slurm] holds {', '.join(settings)}; the GPUs come from the role)"
    reader.notes.append(note)
    return found


def _behind_env(cmd: Command, at: int, reader: _Reader, ignored: set[int]) -> _Found | None:
    """`env [-u NAME] [NAME=VALUE]... LAUNCH`: the entries join the launch's env; `-u` and `-i` are noted."""
    found_env = env_command(cmd.words, at)
    reader.notes += [_at(cmd, at, reader.script) + note for note in found_env.notes]
    if found_env.next >= len(cmd.words):
        return None
    found = _launch_words(cmd, found_env.next, reader, ignored)
    if found is not None:
        found.env = {**found_env.entries, **found.env}
    return found


def _shell_c(cmd: Command, at: int, script: int, reader: _Reader, ignored: set[int]) -> _Found | None:
    """`bash -c SCRIPT`: SCRIPT read as the script it is (its own exports and lines), its lines those of the word."""
    text = cmd.words[script]
    if "vllm" not in text and API_SERVER not in text:
        return None
    ignored.update(range(at, len(cmd.words)))  # the inner script's problems are its own commands'
    line = cmd.line_of(script)
    try:
        inner = split_commands(text, reader.known)
    except ShellError as exc:
        reader.problems.add(_LINE.sub(f"line {line}: ", str(exc), count=1))
        return None
    for command in inner:
        command.line = line
        command.word_lines = [line] * len(command.words)
        command.problems = [
            replace(p, message=_LINE.sub(f"line {line}: ", p.message, count=1)) for p in command.problems
        ]
        command.notes = [_LINE.sub(f"line {line}: ", note, count=1) for note in command.notes]
    extra = len(cmd.words) - script - 1
    if extra:
        reader.notes.append(f"line {line}: the {extra} word(s) after the `-c` script set its $0, $1...; not imported")
    nested = _Problems()
    launch = _find_launch(inner, reader.script, reader.notes, reader.source, nested, known=reader.known)
    reader.problems.items += nested.items
    shell = " ".join(cmd.words[at:script])
    return _Found(launch.args, launch.arg_lines, launch.env, [shell, *launch.launchers])


def _container_run(cmd: Command, at: int, reader: _Reader, ignored: set[int]) -> _Found | None:
    """`docker|podman run [OPTIONS] IMAGE [ARGS]`: the image's arguments are vLLM's (or those of `--entrypoint`,
    which then runs them); `-e` gives env; the rest is the container's."""
    words = cmd.words
    env: dict[str, str] = {}
    others: list[str] = []
    entrypoint: str | None = None
    index = at + 2
    script = reader.script
    while index < len(words) and words[index].startswith("-"):
        word = words[index]
        name, _eq, glued_text = word.partition("=") if word.startswith("--") else (word, "", "")
        glued = glued_text if _eq else None
        takes_value = name in _DOCKER_VALUE_OPTIONS and glued is None
        value = words[index + 1] if takes_value and index + 1 < len(words) else glued
        indices = {index, index + 1} if takes_value else {index}
        where = _at(cmd, index, script)
        ignored.update(indices)
        if name in ("-e", "--env") and value is not None:
            _container_env(value, where, env, reader.notes)
        elif name == "--gpus":
            reader.notes.append(
                f"{where}--gpus {value} gives the container its GPUs; not imported (a layer chooses GPUs with "
                "CUDA_VISIBLE_DEVICES in [env])"
            )
        elif name == "--entrypoint":
            entrypoint = value
        else:
            others.append(f"{name} {value}" if takes_value else word)
        index += 2 if takes_value else 1
    if others:
        reader.notes.append(
            f"{_where(cmd, script)}{program(words[at])} options {', '.join(others)} are the container's, not vLLM's; "
            "not imported"
        )
    if index >= len(words):
        reader.problems.add(f"{_at(cmd, index - 1, script)}{program(words[at])} run names no image")
        return _Found([], [])
    found = _image_args(cmd, index, entrypoint, reader, ignored)
    if found is not None:
        found.env = {**env, **found.env}
    return found


def _container_env(value: str, where: str, env: dict[str, str], notes: list[str]) -> None:
    var, has_value, text = value.partition("=")
    if stripped_env(var, text):
        env[var] = ""  # the value is never written (a secret)
    elif not has_value:
        notes.append(f"{where}-e {var} passes on the launching environment's value; not imported")
    else:
        env[var] = text


def _image_args(cmd: Command, index: int, entrypoint: str | None, reader: _Reader, ignored: set[int]) -> _Found | None:
    """The launch in what the image runs: its arguments as `vllm serve`'s (vLLM's image), or `--entrypoint`'s."""
    words, script = cmd.words, reader.script
    image = words[index]
    where = _at(cmd, index, script)
    if entrypoint is not None:
        inner = Command(
            cmd.line, [entrypoint, *words[index + 1 :]], cmd.text, [cmd.line_of(index), *cmd.word_lines[index + 1 :]]
        )
        found = _launch_words(inner, 0, reader, set())
        ignored.update(range(index, len(words)))
        if found is None:
            reader.problems.add(
                f"{where}--entrypoint {entrypoint} of {image} runs `{' '.join(inner.words)[:60]}`, which is not a "
                "vllm serve launch"
            )
            return _Found([], [])
        reader.notes.append(f"{where}{image} with --entrypoint {entrypoint}: the launch it runs is imported")
        return found
    if "vllm" not in image.rsplit("/", 1)[-1].split(":", 1)[0] and "vllm" not in image.split("/", 1)[0]:
        reader.problems.add(
            f"{where}{image} is not a vLLM image (vllm/vllm-openai): what it runs is unknown",
            "import the vllm serve command the image runs",
        )
    reader.notes.append(f"{where}the arguments after the image {image} are read as `vllm serve` options")
    first = index + 1
    if words[first : first + 2] == ["vllm", "serve"]:
        first += 2
    return _Found(words[first:], [cmd.line_of(i) for i in range(first, len(words))])


def _config_reader(base: Path, notes: list[str]) -> Any:
    def read(file: str) -> list[str]:
        extension = file.rsplit(".", maxsplit=1)[-1]
        if extension not in ("yaml", "yml"):
            raise CommandLineError(f"--config {file}: vLLM reads only .yaml or .yml config files")
        path = Path(file) if os.path.isabs(file) else base / file
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise CommandLineError(f"--config {file}: cannot read {path}: {reason}") from None
        try:
            mapping = read_yaml(text)
        except YamlError as exc:
            raise CommandLineError(f"--config {file}: {exc}") from None
        return config_args(mapping, notes)

    return read


def default_name(model: str | None) -> str | None:
    """A layer name from the model: `Qwen/Qwen3-0.6B` -> `qwen3-0.6b`."""
    if not model:
        return None
    last = model.rstrip("/").rsplit("/", 1)[-1].lower()
    name = re.sub(r"[^a-z0-9_.-]+", "-", last).strip("-.")
    return name if name and _LAYER_NAME.match(name) else None


@record(slots=True)
class _Input:
    """One process to import: its commands (a script's, a command line's, a manifest's container), and where from."""

    name: str  # its role's name, when several are imported together
    commands: list[Command]
    script: Path | None  # the file its lines are numbered in (None: a command line)
    source: str  # how messages name where it comes from
    base: Path  # the folder a `--config FILE` is read from
    env: dict[str, Any] = field(default_factory=dict)  # a manifest's env: text, or {"secret": True}
    container: bool = False  # a k8s container or compose service: a host (network) of its own


def import_launch(
    root: Path,
    words: list[str],
    *,
    name: str | None,
    catalogue: Catalogue,
    cwd: Path,
    roles: list[str] | None = None,
) -> Imported:
    """Read a launch (`vllm serve ...` words, a script, a manifest or unit, or several scripts, each a role; `roles`:
    `NAME=FILE` pairs) into a layer; raise UsageError to refuse."""
    if not words and not roles:
        raise UsageError(
            "nothing to import",
            hint="pass a launch after --, e.g. `profilekit import -- vllm serve MODEL ...`, or a script file",
        )
    notes: list[str] = []
    inputs = _inputs(words, roles or [], cwd, notes)
    several = len(inputs) > 1 or bool(roles)
    imported = [_read_role(item, catalogue, notes, command_allowed=several) for item in inputs]
    vllm = [role for role in imported if role.is_vllm]
    if not vllm:
        raise _refuse(inputs[0].source, "no `vllm serve` command found")
    layer_name = _layer_name(root, name or default_name(vllm[0].serve.get("model")))
    sources = ", ".join(
        dict.fromkeys(item.script.name if item.script else "a vllm serve command line" for item in inputs)
    )
    description = f"Imported from {sources}"
    if len(imported) == 1:
        role = imported[0]
        text = layer_text(
            role.serve, role.env, description=description, version=catalogue.version, launchers=role.launchers
        )
        return Imported(layer_name, Path("profiles") / f"{layer_name}.toml", text, role.serve, role.env, notes)
    text = roles_layer_text(imported, description=description, version=catalogue.version)
    own = all(item.container for item in inputs)
    return Imported(layer_name, Path("profiles") / f"{layer_name}.toml", text, vllm[0].serve, vllm[0].env, notes, own)


def _layer_name(root: Path, layer_name: str | None) -> str:
    if layer_name is None:
        raise UsageError(
            "cannot name the layer: the launch names no model to derive a name from", hint="pass --name NAME"
        )
    if not _LAYER_NAME.match(layer_name) or layer_name.endswith(".toml"):
        raise UsageError(
            f"{layer_name!r} is not a layer name",
            hint="use letters, digits, '_', '.', '-' and '/' for folders, e.g. --name site/qwen-pd (no .toml)",
        )
    path = Path("profiles") / f"{layer_name}.toml"
    if (root / path).exists():
        raise UsageError(
            f"{path.as_posix()} already exists; profilekit import never overwrites a layer",
            hint="choose another --name",
        )
    return layer_name


def _inputs(words: list[str], roles: list[str], cwd: Path, notes: list[str]) -> list[_Input]:
    """What to import: a command line, one file (a script, or a manifest or unit with a process each), or
    several files (`FILE...` or `--role NAME=FILE`), each a role."""
    named: list[tuple[str | None, str]] = []
    for pair in roles:
        given, eq, file = pair.partition("=")
        if not eq or not given or not file:
            raise UsageError(f"--role {pair}: write NAME=FILE", hint="e.g. --role prefill=start_prefill.sh")
        named.append((given, file))
    files = [word for word in words if _is_file(cwd / word)]
    if len(files) != len(words):  # words that are not all files: a command line
        if named:
            raise UsageError("--role imports files: pass a launch after -- alone, or every launch as a file")
        return [_Input("serve", [Command(0, list(words), " ".join(words))], None, "the command line", cwd)]
    if len(words) == 1 and not named:
        return _file_inputs(cwd / words[0], words[0], None, notes)
    named += [(None, word) for word in words]
    taken: set[str] = set()
    inputs: list[_Input] = []
    for chosen, file in named:
        path = cwd / file
        if not _is_file(path):
            raise UsageError(f"--role {chosen}={file}: no such file")
        for item in _file_inputs(path, file, chosen, notes):
            item.name = role_name(item.name, taken)
            inputs.append(item)
    return inputs


def _is_file(path: Path) -> bool:
    """Whether a word names a file (a word too long for a file name is none)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _file_inputs(path: Path, source: str, role: str | None, notes: list[str]) -> list[_Input]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {source}: {exc}") from None
    form = form_of(path, text)
    if form is None:
        try:
            commands = split_commands(text)
        except ShellError as exc:
            raise _refuse(source, str(exc)) from None
        notes += _sbatch_notes(text)
        return [_Input(role or _role_of(path), commands, path, source, path.parent)]
    try:
        processes = (
            read_k8s(text)
            if form == "k8s"
            else read_compose(text, path.parent)
            if form == "compose"
            else read_systemd(text, path.stem)
        )
    except ManifestError as exc:
        raise _refuse(source, str(exc)) from None
    inputs: list[_Input] = []
    for process in processes:
        notes += [f"{_line_of(process.line)}{note}" if not _LINE.match(note) else note for note in process.notes]
        if not process.words:
            continue
        lines = [process.line] * len(process.words)
        problems = [Problem(process.line, None, message) for message in process.problems]
        command = Command(process.line, process.words, " ".join(process.words), lines, problems)
        name = process.name if role is None or len(processes) > 1 else role
        inputs.append(_Input(name, [command], path, source, path.parent, process.env, form != "systemd"))
    if not inputs:
        what = {"k8s": "container", "compose": "service", "systemd": "ExecStart="}[form]
        raise _refuse(
            source,
            f"no {what} in it starts a process profilekit can read",
            "a container or service without a command runs its image's entrypoint, which profilekit knows only for "
            "vLLM's image (vllm/vllm-openai); write the command, or import the script the image runs",
        )
    return inputs


def _sbatch_notes(text: str) -> list[str]:
    """A batch script's `#SBATCH` lines: the settings profilekit.toml's [render.slurm] holds, and the rest (nodes,
    GPUs, tasks), which `render --target slurm` writes from the roles."""
    settings: list[str] = []
    others: list[str] = []
    for line in text.splitlines():
        if line.startswith("#SBATCH"):
            words = line.split()[1:]
            found = srun_settings(words)
            settings += found
            if not found and words:
                others.append(words[0])
    notes = [f"#SBATCH lines: profilekit.toml's [render.slurm] holds {', '.join(settings)}"] if settings else []
    if others:
        notes.append(
            f"#SBATCH {' '.join(others)}: the job's options, which `render --target slurm` writes from the roles and "
            "[render.slurm]; not imported"
        )
    return notes


def _line_of(line: int) -> str:
    return f"line {line}: " if line else ""


def _role_of(path: Path) -> str:
    """A script's role, from its name: `start_prefill.sh` is prefill, `run_d.sh` is d, `router.sh` is router."""
    stem = path.stem.lower()
    for known in ("prefill", "decode", "proxy", "router", "encode"):
        if known in stem:
            return known
    return re.sub(r"^(start|run|launch|serve)[_-]", "", stem) or stem


def _read_role(item: _Input, catalogue: Catalogue, notes: list[str], *, command_allowed: bool) -> ImportedRole:
    """One process as a role: a vLLM launch read as vLLM reads it, or (imported with others) a command role."""
    known = {name: value for name, value in item.env.items() if isinstance(value, str)}
    probe = _Reader(item.script, item.source, [], _Problems(), known)
    if command_allowed and not any(_launches(cmd, probe) for cmd in item.commands):
        return _command_role(item, notes)
    problems = _Problems()
    launch = _find_launch(item.commands, item.script, notes, item.source, problems, known=known)
    where = _where(launch.command, item.script)
    for index, error in option_problems(launch.args, catalogue):
        line = f"line {launch.arg_lines[index]}: " if item.script is not None else ""
        problems.add(line + error.message, error.hint)
    problems.raise_if_any(item.source)  # the script's and the options' problems together, in line order
    config_notes: list[str] = []
    try:
        parsed = read_serve_args(launch.args, catalogue, _config_reader(item.base, config_notes))
    except CommandLineError as exc:
        raise _refuse(item.source, where + exc.message, exc.hint) from None
    notes += [where + note for note in config_notes + parsed.notes]
    credential = _credential(parsed.serve)
    if credential is not None:
        raise _refuse(
            item.source,
            f"{where}serve.{credential} holds a credential, and profilekit keeps credentials out of layer files "
            "(the value is not shown here)",
            "remove it from the launch and give it to the process another way (an env variable it reads, or a "
            "file), then import again",
        )
    env = _env_of({**launch.env}, item, where, notes)
    return ImportedRole(item.name, parsed.serve, env, None, launch.launchers)


def _launches(cmd: Command, reader: _Reader) -> bool:
    words = _after_keywords(Command(cmd.line, list(cmd.words), cmd.text, list(cmd.word_lines)))
    at, _assigned, _ignored = _assignments(words)
    return at < len(words) and _launch_words(Command(cmd.line, words, cmd.text), at, reader, set()) is not None


def _env_of(found: dict[str, str], item: _Input, where: str, notes: list[str]) -> dict[str, Any]:
    """The role's env: the launch's entries (secrets by redact.py's definition), then the manifest's own."""
    env: dict[str, Any] = {}
    for var, value in found.items():
        if stripped_env(var, value):
            env[var] = {"secret": True}
            notes.append(
                f"{var} looks like a secret: written as {{ secret = true }}, its value is not written; "
                "set it in the environment that runs the launch script"
            )
        elif env_file_value(value) is None:
            raise _refuse(
                item.source,
                f"{where}the value of {var} cannot be written to an env file that bash and python-dotenv read alike",
            )
        else:
            env[var] = value
    for var, value in item.env.items():
        env[var] = {"secret": True} if isinstance(value, str) and stripped_env(var, value) else value
    return env


def _command_role(item: _Input, notes: list[str]) -> ImportedRole:
    """A process that is no vLLM launch, imported beside vLLM roles: a command role, with the script's exports as
    its env (the one command that is neither an export, an assignment nor a note is its command)."""
    exported: dict[str, str] = {}
    commands: list[Command] = []
    for cmd in item.commands:
        words = _after_keywords(cmd)
        if not words or words[0] in ("set", "unset"):
            continue
        if words[0] == "export":
            for word in words[1:]:
                match = _ASSIGNMENT.match(word)
                if match is not None and match.group(1) not in MACHINE_VARIABLES:
                    exported[match.group(1)] = match.group(2)
            continue
        at, _assigned, _ignored = _assignments(words)
        if at < len(words) and _aside(words, at, None) is None:
            commands.append(cmd)
    if len(commands) != 1:
        raise _refuse(item.source, "it holds no vllm serve launch and not one command to run beside the vLLM roles")
    problems = _Problems()
    problems.add_shell(commands[0])
    problems.raise_if_any(item.source)
    at, assigned, _ignored = _assignments(commands[0].words)
    notes.append(f"{item.source}: imported as role {item.name}, a command (it starts no vLLM server)")
    env = _env_of({**exported, **assigned}, item, "", notes)  # secrets by the one definition, as a vLLM role's
    return ImportedRole(item.name, {}, env, commands[0].words[at:])


def layer_text(
    serve: dict[str, Any], env: dict[str, Any], *, description: str, version: str, launchers: list[str] | None = None
) -> str:
    """The layer as a person would write it: [layer], [serve], a sub-table per JSON option, [env].

    A literal `${` in a value is written `$${`: unescaped, it would read as a reference (references.py). The
    launchers the launch ran behind (`srun -p gpu`, `numactl ...`) are kept as comments: no target writes them.
    """
    serve, env = escape(serve), escape(env)

    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Imported with `profilekit import` for vLLM {version}."))
    for launcher in launchers or []:
        doc.add(tomlkit.comment(f"It ran behind `{comment_text(launcher)}`, which a layer does not hold."))
    meta = tomlkit.table()
    meta["description"] = description
    doc["layer"] = meta
    if serve:
        table = tomlkit.table()
        for key, value in serve.items():
            if not (isinstance(value, dict) and value):
                table[key] = toml_item(value)
        for key, value in serve.items():
            if isinstance(value, dict) and value:
                table[key] = toml_table(value)
        doc["serve"] = table
    if env:
        env_table = tomlkit.table()
        for key, value in env.items():
            env_table[key] = toml_item(value)
        doc["env"] = env_table
    text = tomlkit.dumps(doc)
    back = tomllib.loads(text)
    if back.get("serve", {}) != serve or back.get("env", {}) != env:  # pragma: no cover - a profilekit bug
        raise RuntimeError("the imported layer does not read back as the values it was made from")
    return text


def write_layer(root: Path, imported: Imported) -> Path:
    """Create the layer file; never replace one (exclusive create)."""
    target = root / imported.path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "x", encoding="utf-8", newline="\n") as handle:
            handle.write(imported.text)
    except FileExistsError:
        raise UsageError(
            f"{imported.path.as_posix()} already exists; profilekit import never overwrites a layer",
            hint="choose another --name",
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot write {imported.path.as_posix()}: {exc.strerror or exc}") from None
    return target
