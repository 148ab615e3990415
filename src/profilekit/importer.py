"""`profilekit import`: an existing `vllm serve` launch (a command line or a bash script) as a layer file.

The launch is read the way bash and then vLLM would read it (`shellwords`, `vllm/cmdline.py`), so the
layer renders back to a command line that vLLM parses to the same values (the oracle suite checks
this). What only a shell could evaluate, what vLLM would refuse, and what a layer cannot hold are
refused with the reason; nothing is written then.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profilekit.errors import UsageError
from profilekit.shellwords import Command, ShellError, split_commands
from profilekit.vllm.cmdline import CommandLineError, read_serve_args
from profilekit.vllm.config_yaml import YamlError, config_args, read_yaml

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Catalogue

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_LAYER_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$")
_SECRET_NAME = re.compile(r"(^HF_TOKEN$|_TOKEN$|_KEY$|SECRET|PASSWORD)", re.IGNORECASE)


@dataclass(slots=True)
class Imported:
    """A layer made from a launch: where it goes, its TOML text, and notes for the user."""

    name: str
    path: Path
    text: str
    serve: dict[str, Any]
    env: dict[str, Any]
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Launch:
    command: Command
    env: dict[str, str]
    args: list[str]


def is_secret(name: str, value: str) -> bool:
    """Env entries kept out of layer files: token/key/secret names, and Hugging Face tokens by value."""
    return bool(_SECRET_NAME.search(name)) or value.startswith("hf_")


def _refuse(where: str, message: str, hint: str = "") -> UsageError:
    return UsageError(f"cannot import {where}: {message}", hint=hint)


def _where(command: Command, script: Path | None) -> str:
    return f"line {command.line}: " if script is not None else ""


def _find_launch(commands: list[Command], script: Path | None, notes: list[str], source: str) -> _Launch:
    exported: dict[str, str] = {}
    shell_vars: dict[str, tuple[int, str]] = {}
    launch: _Launch | None = None
    for cmd in commands:
        words = list(cmd.words)
        where = _where(cmd, script)
        if words[0] == "set":
            continue  # shell options (set -euo pipefail) change nothing vLLM sees
        if words[0] == "export":
            for word in words[1:]:
                match = _ASSIGNMENT.match(word)
                if word.startswith("-"):
                    raise _refuse(source, f"{where}`export {word}` cannot be represented")
                if match:
                    if launch is None:
                        exported[match.group(1)] = match.group(2)
                    else:
                        notes.append(f"{where}export {match.group(1)} comes after the launch and is not imported")
                elif word in shell_vars:
                    exported[word] = shell_vars.pop(word)[1]
                else:
                    notes.append(f"{where}export {word} passes on the launching environment's value; not imported")
            continue
        assignments: dict[str, str] = {}
        while words and _ASSIGNMENT.match(words[0]):
            match = _ASSIGNMENT.match(words.pop(0))
            assert match is not None
            assignments[match.group(1)] = match.group(2)
        if not words:
            for var, value in assignments.items():
                shell_vars[var] = (cmd.line, value)
            continue
        if words[0] == "exec":
            words.pop(0)
        if words and words[0] == "env":
            words.pop(0)
            while words and _ASSIGNMENT.match(words[0]):
                match = _ASSIGNMENT.match(words.pop(0))
                assert match is not None
                assignments[match.group(1)] = match.group(2)
            if words and words[0].startswith("-"):
                raise _refuse(source, f"{where}`env {words[0]}` cannot be represented")
        if len(words) >= 2 and os.path.basename(words[0]) == "vllm" and words[1] == "serve":
            if launch is not None:
                raise _refuse(
                    source,
                    f"it holds more than one vllm serve launch (lines {launch.command.line} and {cmd.line})",
                    "import one launch per layer: copy each into its own script, or pass it after --",
                )
            launch = _Launch(cmd, {**exported, **assignments}, words[2:])
            continue
        shown = cmd.text if len(cmd.text) <= 60 else cmd.text[:57] + "..."
        raise _refuse(
            source,
            f"{where}`{shown}` is not a vllm serve launch",
            "profilekit import reads `export` and assignment lines and one `vllm serve` command",
        )
    if launch is None:
        raise _refuse(source, "no `vllm serve` command found")
    for var, (line, _value) in shell_vars.items():
        notes.append(f"line {line}: {var} is a shell variable the launch does not see (not exported); not imported")
    return launch


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


def import_launch(root: Path, words: list[str], *, name: str | None, catalogue: Catalogue, cwd: Path) -> Imported:
    """Read a launch (`vllm serve ...` words, or one script file) into a layer; raise UsageError to refuse."""
    if not words:
        raise UsageError(
            "nothing to import",
            hint="pass a launch after --, e.g. `profilekit import -- vllm serve MODEL ...`, or a script file",
        )
    notes: list[str] = []
    script: Path | None = None
    if len(words) == 1 and (cwd / words[0]).is_file():
        script = cwd / words[0]
        source = words[0]
        try:
            text = script.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {words[0]}: {exc}") from None
        try:
            commands = split_commands(text)
        except ShellError as exc:
            raise _refuse(source, str(exc)) from None
    else:
        source = "the command line"
        commands = [Command(0, list(words), " ".join(words))]
    launch = _find_launch(commands, script, notes, source)
    base = script.parent if script is not None else cwd
    where = _where(launch.command, script)
    config_notes: list[str] = []
    try:
        parsed = read_serve_args(launch.args, catalogue, _config_reader(base, config_notes))
    except CommandLineError as exc:
        raise _refuse(source, where + exc.message, exc.hint) from None
    notes += [where + note for note in config_notes + parsed.notes]

    env: dict[str, Any] = {}
    from profilekit.quoting import env_file_value

    for var, value in launch.env.items():
        if is_secret(var, value):
            env[var] = {"secret": True}
            notes.append(
                f"{var} looks like a secret: written as {{ secret = true }}, its value is not written; "
                "set it in the environment that runs the launch script"
            )
        elif env_file_value(value) is None:
            raise _refuse(
                source,
                f"{where}the value of {var} cannot be written to an env file that bash and python-dotenv read alike",
            )
        else:
            env[var] = value

    layer_name = name or default_name(parsed.serve.get("model"))
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
    description = f"Imported from {script.name if script is not None else 'a vllm serve command line'}"
    text = layer_text(parsed.serve, env, description=description, version=catalogue.version)
    return Imported(layer_name, path, text, parsed.serve, env, notes)


def layer_text(serve: dict[str, Any], env: dict[str, Any], *, description: str, version: str) -> str:
    """The layer as a person would write it: [layer], [serve], a sub-table per JSON option, [env].

    A literal `${` in a value is written `$${`: unescaped, it would read as a reference (references.py).
    """
    import tomllib

    import tomlkit

    from profilekit.references import escape

    serve, env = escape(serve), escape(env)

    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Imported with `profilekit import` for vLLM {version}."))
    meta = tomlkit.table()
    meta["description"] = description
    doc["layer"] = meta
    if serve:
        table = tomlkit.table()
        for key, value in serve.items():
            if not (isinstance(value, dict) and value):
                table[key] = _item(value)
        for key, value in serve.items():
            if isinstance(value, dict) and value:
                table[key] = _table(value)
        doc["serve"] = table
    if env:
        env_table = tomlkit.table()
        for key, value in env.items():
            env_table[key] = _item(value)
        doc["env"] = env_table
    text = tomlkit.dumps(doc)
    back = tomllib.loads(text)
    if back.get("serve", {}) != serve or back.get("env", {}) != env:  # pragma: no cover - a profilekit bug
        raise RuntimeError("the imported layer does not read back as the values it was made from")
    return text


def _item(value: Any) -> Any:
    import tomlkit

    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        for key, inner in value.items():
            inline[key] = _item(inner)
        return inline
    if isinstance(value, list):
        array = tomlkit.array()
        for inner in value:
            array.append(_item(inner))
        if len(array.as_string()) > 80:
            array.multiline(True)
        return array
    return value


def _table(value: dict[str, Any]) -> Any:
    import tomlkit

    table = tomlkit.table()
    for key, inner in value.items():
        if not (isinstance(inner, dict) and inner):
            table[key] = _item(inner)
    for key, inner in value.items():
        if isinstance(inner, dict) and inner:
            table[key] = _table(inner)
    return table


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
