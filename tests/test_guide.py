"""docs/GUIDE.md is a real session: every command it shows prints, run in order in a fresh folder, what it shows."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from profilekit.cli import main

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "GUIDE.md"
FILE_MARKER = re.compile(r"# file: (\S+)\n")


@dataclass(frozen=True)
class Command:
    """`$ LINE` in a ```console block, and the lines the guide shows under it."""

    line: str
    shown: str


@dataclass(frozen=True)
class WrittenFile:
    """A fenced block whose first line is `# file: PATH`: the reader writes it there, marker line included."""

    path: str
    text: str


Step = Command | WrittenFile


def guide_steps(text: str) -> list[Step]:
    """The commands and the files of a guide, in the order a reader meets them."""
    steps: list[Step] = []
    for token in MarkdownIt().parse(text):
        if token.type != "fence":
            continue
        if token.info == "console":
            steps.extend(_commands(token.content))
        elif match := FILE_MARKER.match(token.content):
            steps.append(WrittenFile(match.group(1), token.content))
    return steps


def _commands(block: str) -> list[Command]:
    commands: list[Command] = []
    line: str | None = None
    shown: list[str] = []
    for row in block.splitlines(keepends=True):
        if row.startswith("$ "):
            if line is not None:
                commands.append(Command(line, "".join(shown)))
            line, shown = row[2:].rstrip("\n"), []
        elif line is None:
            raise AssertionError(f"a console block must start with a `$ ` command, not {row!r}")
        else:
            shown.append(row)
    if line is not None:
        commands.append(Command(line, "".join(shown)))
    return commands


class Walk:
    """Runs a guide's steps the way its reader would: one shell, in one folder that `cd` moves."""

    def __init__(self, start: Path) -> None:
        self.start = start
        self.cwd = start
        self.status = 0

    def write(self, step: WrittenFile) -> None:
        path = self.cwd / step.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(step.text, encoding="utf-8")

    def run(self, line: str) -> str:
        """What the terminal shows for `line` (stdout and stderr in the order they were written)."""
        words = shlex.split(line)
        if words == ["echo", "$?"]:
            return f"{self.status}\n"
        if words[0] == "cd" and len(words) == 2:
            self.cwd = (self.cwd / words[1]).resolve()
            self.status = 0
            return ""
        if words[0] == "cat" and len(words) == 2:
            self.status = 0
            return (self.cwd / words[1]).read_text(encoding="utf-8")
        if words[0] != "profilekit":
            raise AssertionError(f"the guide's walk cannot run {line!r}: only profilekit, cd, cat and `echo $?`")
        terminal = io.StringIO()
        previous = Path.cwd()
        os.chdir(self.cwd)
        try:
            with contextlib.redirect_stdout(terminal), contextlib.redirect_stderr(terminal):
                self.status = main(words[1:])
        finally:
            os.chdir(previous)
        return terminal.getvalue().replace(f"{self.start}{os.sep}", "")


def walk_guide(text: str, start: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(what the guide shows, what the commands print): pairs of command line and output, in order."""
    walk = Walk(start)
    shown: list[tuple[str, str]] = []
    printed: list[tuple[str, str]] = []
    for step in guide_steps(text):
        if isinstance(step, WrittenFile):
            walk.write(step)
            continue
        shown.append((step.line, step.shown))
        printed.append((step.line, walk.run(step.line)))
    return shown, printed


def test_every_command_of_the_guide_prints_what_the_guide_shows(tmp_path: Path) -> None:
    shown, printed = walk_guide(GUIDE.read_text(encoding="utf-8"), tmp_path)
    assert shown[0][0].startswith("profilekit init")
    assert printed == shown


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    tokens = MarkdownIt().parse(path.read_text(encoding="utf-8"))
    return {_slug(tokens[i + 1].content) for i, token in enumerate(tokens) if token.type == "heading_open"}


def test_every_anchor_the_guide_links_to_is_a_heading() -> None:
    links = re.findall(r"\]\(([^)#]*)#([^)]+)\)", GUIDE.read_text(encoding="utf-8"))
    missing = [
        f"{page}#{anchor}" for page, anchor in links if anchor not in _anchors(GUIDE.parent / page if page else GUIDE)
    ]
    assert len(links) > 15
    assert missing == []
    assert _slug("5. A stack vLLM would refuse: ReplaySSM beside a KV connector") == (
        "5-a-stack-vllm-would-refuse-replayssm-beside-a-kv-connector"
    )


def test_the_walk_covers_what_a_new_user_needs() -> None:
    lines = [step.line for step in guide_steps(GUIDE.read_text(encoding="utf-8")) if isinstance(step, Command)]
    commands = {shlex.split(line)[1] for line in lines if line.startswith("profilekit ")}
    assert {
        "init",
        "lint",
        "list",
        "show",
        "explain",
        "check",
        "render",
        "set",
        "unset",
        "import",
        "diff",
        "flags",
    } <= commands
    assert "profilekit check nemotron-replayssm+offload" in lines
    assert "profilekit diff nemotron-replayssm --from-release 0.27.0 --to-release 0.33.0" in lines
    formats = {line.rsplit(" ", 1)[1] for line in lines if " --format " in line and line.startswith("profilekit check")}
    assert formats == {"json", "github", "sarif", "markdown"}


SAMPLE = """\
Write a layer:

```toml
# file: profiles/x.toml
[serve]
model = "m"
```

```console
$ profilekit init demo
demo/profilekit.toml
$ cd demo
$ echo $?
0
```
"""


def test_the_walk_reads_commands_outputs_and_files_in_order() -> None:
    assert guide_steps(SAMPLE) == [
        WrittenFile("profiles/x.toml", '# file: profiles/x.toml\n[serve]\nmodel = "m"\n'),
        Command("profilekit init demo", "demo/profilekit.toml\n"),
        Command("cd demo", ""),
        Command("echo $?", "0\n"),
    ]


def test_the_walk_sees_an_output_the_guide_does_not_show(tmp_path: Path) -> None:
    doc = "```console\n$ profilekit init demo\ndemo/profilekit.toml\n$ echo $?\n0\n```\n"
    shown, printed = walk_guide(doc, tmp_path)
    assert shown == [("profilekit init demo", "demo/profilekit.toml\n"), ("echo $?", "0\n")]
    assert printed[0][1].startswith("demo/.gitignore\n") and printed[0][1] != shown[0][1]
    assert printed[1] == ("echo $?", "0\n")


def test_the_walk_refuses_a_command_it_cannot_run(tmp_path: Path) -> None:
    with pytest.raises(AssertionError) as refused:
        walk_guide("```console\n$ bash build/x/serve.sh\n```\n", tmp_path)
    assert str(refused.value) == (
        "the guide's walk cannot run 'bash build/x/serve.sh': only profilekit, cd, cat and `echo $?`"
    )
