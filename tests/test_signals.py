"""How a run ends when its reader goes away or it is stopped (issue 26): a closed pipe exits 141, Ctrl-C 130,
SIGTERM 143, quietly (nothing on stderr), in every output format and cache state, as real processes.

The report here is larger than a pipe's buffer (64 KiB), so the reader closes while profilekit is in the middle
of writing it: Python's buffered stdout returns the kernel's short count and drops the rest, which made a cut
report exit 0 or 1 like a whole one (`profilekit lint --format json --no-cache | head -1`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_up import CATCH_CTRL_C

FORMATS = ("text", "json", "github", "sarif", "markdown")


@pytest.fixture(scope="module")
def loud_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose lint report is a few hundred KiB in every format: three stacks, each with an error and
    250 warnings (unknown vLLM environment variables)."""
    root = tmp_path_factory.mktemp("loud")
    (root / "profiles").mkdir()
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    for index in range(3):
        env = "".join(f'VLLM_NOT_A_THING_{n} = "{index}"\n' for n in range(250))
        (root / "profiles" / f"stack{index:03}.toml").write_text(
            f'[serve]\nmodel = "org/m{index}"\nmax_num_seqs = 0\n[env]\n{env}', encoding="utf-8"
        )
    return root


def _profilekit(args: list[str], cwd: Path, cache: Path, **kwargs: object) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PROFILEKIT_CACHE_DIR": str(cache)}
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "profilekit", *args], cwd=cwd, env=env, stderr=subprocess.PIPE, **kwargs
    )


def _read_one_line_and_close(args: list[str], cwd: Path, cache: Path) -> tuple[int, bytes, bytes]:
    """`profilekit ARGS | head -1`: read the first line, close the pipe, and wait for profilekit's ending."""
    proc = _profilekit(args, cwd, cache, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    stderr = proc.stderr.read()
    return proc.wait(timeout=120), first, stderr


def _whole(args: list[str], cwd: Path, cache: Path) -> tuple[int, bytes]:
    env = {**os.environ, "PROFILEKIT_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "profilekit", *args], cwd=cwd, env=env, capture_output=True, check=False
    )
    return done.returncode, done.stdout


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_reader_that_closes_the_pipe_early_ends_lint_with_141_and_nothing_on_stderr(
    loud_repo: Path, tmp_path: Path, fmt: str
) -> None:
    """`profilekit lint --format FMT | head -1`, uncached, recording into an empty cache and replayed from it."""
    cache = tmp_path / "cache"
    code, report = _whole(["lint", "--format", fmt, "--no-cache"], loud_repo, cache)
    assert code == 1 and len(report) > 200_000, (code, len(report))  # the whole report exits 1: findings
    for state, args in (
        ("uncached", ["lint", "--format", fmt, "--no-cache"]),
        ("recorded", ["lint", "--format", fmt]),
        ("replayed", ["lint", "--format", fmt]),
    ):
        code, first, stderr = _read_one_line_and_close(args, loud_repo, cache)
        assert (state, code, stderr) == (state, 141, b""), stderr.decode(errors="replace")[-2000:]
        assert report.startswith(first), state
    # a run that lost its reader is not stored as the run's result: the replay still gives the whole report
    assert _whole(["lint", "--format", fmt], loud_repo, cache) == (1, report)


@pytest.mark.parametrize(
    "args", [["flags"], ["show", "stack000"], ["list"], ["explain", "stack000", "serve.max_num_seqs"]], ids=" ".join
)
def test_every_command_notices_a_reader_gone_before_it_wrote(loud_repo: Path, tmp_path: Path, args: list[str]) -> None:
    """A reader that closed before the first byte (`profilekit list | true`): even a report smaller than the pipe
    is a closed pipe, noticed at the flush that ends the run, not an 'Exception ignored' at exit."""
    for cached in ([], ["--no-cache"]):
        for _ in range(2):  # the second run of the cached form is a replay
            read_end, write_end = os.pipe()
            os.close(read_end)
            proc = _profilekit([*cached, *args], loud_repo, tmp_path / "cache", stdout=write_end)
            os.close(write_end)
            assert proc.stderr is not None
            stderr = proc.stderr.read()
            assert (proc.wait(timeout=60), stderr) == (141, b""), stderr.decode(errors="replace")


def _started(proc: subprocess.Popen[bytes], marker: Path) -> None:
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "profilekit ended before it began linting"
        time.sleep(0.01)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_and_sigterm_end_a_lint_quietly(loud_repo: Path, tmp_path: Path, sig: signal.Signals, code: int) -> None:
    """Ctrl-C (or SIGTERM) while `profilekit lint --no-cache` runs, as a real process: 130 (143), nothing on
    stderr. The signal is sent once the run has read its first layer (a `sitecustomize` on the child's path
    touches a marker on that open), seconds before this lint ends. A lint answered from the cache ends within
    milliseconds: tests/test_crash.py stops one at each of its file-system events instead."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    marker = tmp_path / "started"
    (hooks / "sitecustomize.py").write_text(
        "import os, sys\n"
        "def _hook(event, args):\n"
        "    if event == 'open' and str(args[0]).endswith('.toml') and 'profiles' in str(args[0]):\n"
        f"        if not os.path.exists({str(marker)!r}):\n"
        f"            os.close(os.open({str(marker)!r}, os.O_CREAT | os.O_WRONLY))\n"
        "sys.addaudithook(_hook)\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PROFILEKIT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(hooks)}
    proc = subprocess.Popen(
        [*CATCH_CTRL_C, sys.executable, "-m", "profilekit", "lint", "--no-cache"],
        cwd=loud_repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _started(proc, marker)
    proc.send_signal(sig)
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    assert (proc.wait(timeout=60), stderr) == (code, b""), stderr.decode(errors="replace")[-2000:]
