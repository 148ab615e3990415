"""A render, `set` and `lock` killed at every point where they touch the file system (issue 26).

Each run is a child process forked from this one (profilekit already imported: a kill point is a step of the
command, not of Python's start-up) with an audit hook (`sys.addaudithook`) that counts the file-system events
the command raises (open, rename, link, mkdir, remove, chmod, scandir, flock, ...) and sends the signal to its own
process at the N-th: SIGKILL stops it there, SIGTERM and SIGINT are handled as they would be from a terminal. A
sweep kills at every event of the run, so every step of the write is a kill point, and no sleep decides where.

After each kill the output folder holds exactly the previous render or exactly the new one (every file, byte and
mode; its manifest's digests matching; the user's own files and folder kept), and the next render removes
whatever the killed one left (nothing of profilekit's beside the folder or in it). The same for a layer that
`set` edits and for the lock file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from profilekit.cli import main

# the audit events of the file system a write goes through (os.replace raises os.rename, os.fchmod os.chmod)
EVENTS = frozenset(
    {
        "open",
        "os.rename",
        "os.link",
        "os.symlink",
        "os.mkdir",
        "os.remove",
        "os.rmdir",
        "os.chmod",
        "os.scandir",
        "os.listdir",
        "os.truncate",
        "fcntl.flock",
        "shutil.copyfile",
        "ctypes.call_function",
        "subprocess.Popen",
    }
)
SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM, "SIGINT": signal.SIGINT}
# how each signal ends a command: killed outright, or the exit status of profilekit's own handling
ENDINGS = {"SIGKILL": (-signal.SIGKILL,), "SIGTERM": (143, -signal.SIGTERM), "SIGINT": (130,)}

PD = (
    '[serve]\nmodel = "m"\nmax_num_seqs = 15\n'
    '[roles.prefill]\nkind = "vllm"\n[roles.prefill.serve]\nport = 8100\n'
    '[roles.decode]\nkind = "vllm"\n[roles.decode.serve]\nport = 8200\n'
    '[roles.proxy]\nkind = "command"\ncommand = ["vllm-router", "--port", "8192"]\n'
)
SINGLE = '[serve]\nmodel = "m"\n[env]\nA = "1"\n'


def _repo(root: Path) -> Path:
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    (root / "profiles" / "pd.toml").write_text(PD, encoding="utf-8")
    (root / "profiles" / "single.toml").write_text(SINGLE, encoding="utf-8")
    return root


def _fork(argv: list[str], cwd: Path, point: int, sig: int, log: Path) -> tuple[int, int]:
    """Run `profilekit ARGV` (cache as in the environment) in a forked child, signalled at file-system event
    `point` (never, if 0). Returns (how it ended: exit code, or -signal; the events it raised). What it printed
    is in `log` (stderr) and `log` with the suffix .out (stdout)."""
    count_file = log.with_suffix(".count")
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.chdir(cwd)
            for fd, path in ((1, log.with_suffix(".out")), (2, log)):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
            # pytest's capture put its own objects in sys.stdout and sys.stderr: the child writes to its fds
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - the child's whole life
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - as stdout
            seen = [0]

            def hook(event: str, _args: tuple[object, ...]) -> None:
                if event in EVENTS and seen[0] >= 0:
                    seen[0] += 1
                    if seen[0] == point:
                        os.kill(os.getpid(), sig)

            sys.argv = ["profilekit", *argv]
            sys.addaudithook(hook)
            code = main()
            sys.stdout.flush()
            sys.stderr.flush()
            # the command is over: what this harness does next is no kill point (a run shorter than the sweep's
            # first one, as a replay after the recording run, never sees its later points)
            raised, seen[0] = str(seen[0]).encode(), -1
            os.write(os.open(count_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), raised)
        except BaseException:  # what escapes profilekit is a failure the test reports
            import traceback

            traceback.print_exc()
            code = 98
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    ended = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    events = int(count_file.read_text()) if point == 0 and count_file.exists() else 0
    return ended, events


def _snapshot(folder: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Every entry under `folder`: kind, content (or link target) and mode."""
    found: dict[str, tuple[str, bytes | str, int]] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path), 0)
        elif path.is_dir():
            found[rel] = ("dir", b"", path.stat().st_mode & 0o777)
        else:
            found[rel] = ("file", path.read_bytes(), path.stat().st_mode & 0o777)
    return found


def _digests_match(out: Path) -> None:
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for item in manifest["files"]:
        assert hashlib.sha256((out / item["path"]).read_bytes()).hexdigest() == item["sha256"], item["path"]


def _leftovers(folder: Path) -> list[str]:
    """profilekit's names beside or inside `folder`: what an interrupted write leaves."""
    beside = [p.name for p in folder.parent.iterdir() if p.name != folder.name]
    inside = [p.name for p in folder.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".profilekit-")]
    return beside + inside


class Sweep:
    """One command killed at every one of its file-system events, with `check` after each kill."""

    def __init__(self, tmp_path: Path, sig: str) -> None:
        self.tmp = tmp_path
        self.sig = sig
        self.points = 0

    def run(
        self,
        argv: list[str],
        cwd: Path,
        reset: Callable[[], None],
        check: Callable[[int], None],
        *,
        expect: int = 0,
        stride: int = 1,
    ) -> None:
        """`expect`: how the command ends when nothing stops it (lint with findings: 1); `stride`: kill at every
        event (1), or at every n-th, for a command whose events repeat one step many times."""
        reset()
        ended, events = _fork(argv, cwd, 0, 0, self.tmp / "full.log")
        assert ended == expect, (self.tmp / "full.log").read_text()
        assert events > 10, events  # the hook sees the command's file-system steps
        for point in range(1, events + 1, stride):
            reset()
            log = self.tmp / "kill.log"
            ended, _ = _fork(argv, cwd, point, SIGNALS[self.sig], log)
            said = log.read_text(encoding="utf-8", errors="replace")
            # killed before it finished, or finished before the signal was handled (an event after the last write)
            assert ended in (*ENDINGS[self.sig], expect), (point, ended, said)
            assert "Traceback" not in said, (point, said)
            if ended != expect:
                assert said == "", (point, said)  # quietly
            check(point)
            self.points += 1


def _render_sweep(
    tmp_path: Path, sig: str, cached: bool, monkeypatch: pytest.MonkeyPatch, target: tuple[str, ...] = ()
) -> Sweep:
    root = _repo(tmp_path / "repo")
    work = tmp_path / "work"
    out = work / "out"
    layer = root / "profiles" / "pd.toml"
    cache = tmp_path / "cache"
    monkeypatch.setenv("PROFILEKIT_CACHE_DIR", str(cache))
    options = ["--repo", str(root)] + ([] if cached else ["--no-cache"])

    # the previous render (max_num_seqs 15) with a user's file and folder in it, and the new one (101)
    assert main(["--repo", str(root), "render", "pd", "--out", str(out), *target]) == 0
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    (out / "logs").mkdir()
    (out / "logs" / "a.log").write_text("log\n", encoding="utf-8")
    pristine = tmp_path / "pristine"
    shutil.copytree(out, pristine, symlinks=True)
    old = _snapshot(out)
    layer.write_text(PD.replace("max_num_seqs = 15", "max_num_seqs = 101"), encoding="utf-8")
    shutil.rmtree(work)
    assert main(["--repo", str(root), "render", "pd", "--out", str(out), *target]) == 0
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    (out / "logs").mkdir()
    (out / "logs" / "a.log").write_text("log\n", encoding="utf-8")
    new = _snapshot(out)
    assert old != new
    argv = [*options, "render", "pd", "--out", str(out), *target]
    if cached:  # the entry a repeat render replays (its first run recorded it)
        shutil.rmtree(work)
        shutil.copytree(pristine, out, symlinks=True)
        assert _fork(argv, tmp_path, 0, 0, tmp_path / "record.log")[0] == 0

    def reset() -> None:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        shutil.copytree(pristine, out, symlinks=True)

    def check(point: int) -> None:
        now = _snapshot(out)
        assert now in (old, new), (point, sorted(set(now.items()) ^ set(old.items())))
        _digests_match(out)
        assert [p for p in out.iterdir() if p.name.endswith(".tmp")] == [], point
        # the next render removes what the killed one left, and gives the new render
        assert main(["--repo", str(root), "render", "pd", "--out", str(out), *target]) == 0
        assert _leftovers(out) == [], (point, _leftovers(out))
        assert _snapshot(out) == new, point

    sweep = Sweep(tmp_path, sig)
    sweep.run(argv, tmp_path, reset, check)
    return sweep


@pytest.mark.parametrize("sig", list(SIGNALS))
def test_a_killed_render_leaves_the_previous_render_or_the_new_one_whole(
    tmp_path: Path, sig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`profilekit --no-cache render pd --out OUT` after `max_num_seqs` changed in the layer, and the same
    replayed from the cache, for the script and the k8s target, killed at each file-system event: OUT is never a mix (prefill.sh new beside decode.sh old), the manifest's digests always
    match, and the next render removes every leftover."""
    cold = _render_sweep(tmp_path / "cold", sig, cached=False, monkeypatch=monkeypatch)
    warm = _render_sweep(tmp_path / "warm", sig, cached=True, monkeypatch=monkeypatch)
    k8s = ("--target", "k8s")
    cold_k8s = _render_sweep(tmp_path / "cold-k8s", sig, cached=False, monkeypatch=monkeypatch, target=k8s)
    warm_k8s = _render_sweep(tmp_path / "warm-k8s", sig, cached=True, monkeypatch=monkeypatch, target=k8s)
    points = [cold.points, warm.points, cold_k8s.points, warm_k8s.points]
    assert sum(points) >= 200, points


@pytest.mark.parametrize("sig", list(SIGNALS))
def test_a_killed_render_that_changes_the_stack_or_one_role_leaves_one_whole_render(
    tmp_path: Path, sig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other shapes of a render: another stack into the folder (the previous files are stale and go) and
    `--role prefill` (the other roles' files stay)."""
    root = _repo(tmp_path / "repo")
    out = tmp_path / "work" / "out"
    monkeypatch.setenv("PROFILEKIT_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["--repo", str(root), "render", "pd", "--out", str(out)]) == 0
    pristine = tmp_path / "pristine"
    shutil.copytree(out, pristine)
    old = _snapshot(out)
    layer = root / "profiles" / "pd.toml"
    sweep = Sweep(tmp_path, sig)
    for argv, edit in (
        (["render", "single", "--out", str(out)], None),
        (["render", "pd", "--role", "prefill", "--out", str(out)], PD.replace("port = 8100", "port = 8101")),
    ):
        if edit is not None:
            layer.write_text(edit, encoding="utf-8")

        def reset() -> None:
            shutil.rmtree(out.parent, ignore_errors=True)
            shutil.copytree(pristine, out)

        reset()
        assert main(["--repo", str(root), *argv]) == 0
        new = _snapshot(out)  # over the previous render: for --role, the other roles' files kept
        assert new != old

        def check(point: int, argv: list[str] = argv, new: dict[str, tuple[str, bytes | str, int]] = new) -> None:
            now = _snapshot(out)
            assert now in (old, new), (argv, point, sorted(set(now.items()) ^ set(old.items())))
            _digests_match(out)
            assert main(["--repo", str(root), *argv]) == 0
            assert _leftovers(out) == [], (point, _leftovers(out))
            assert _snapshot(out) == new, point

        sweep.run(["--repo", str(root), "--no-cache", *argv], tmp_path, reset, check)
    assert sweep.points >= 80, sweep.points


@pytest.mark.parametrize("sig", list(SIGNALS))
def test_a_killed_set_leaves_the_old_layer_or_the_new_one_and_no_temporary_file(
    tmp_path: Path, sig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`profilekit set pd serve.max_num_seqs 64` killed at each event: pd.toml reads exactly as before or
    exactly as after; the next `set` removes the `.pd.toml.<hex>.tmp` a kill left."""
    root = _repo(tmp_path / "repo")
    layer = root / "profiles" / "pd.toml"
    monkeypatch.setenv("PROFILEKIT_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["--repo", str(root), "--no-cache", "set", "pd", "serve.max_num_seqs", "64"]
    assert _fork(argv, tmp_path, 0, 0, tmp_path / "set.log")[0] == 0
    after = layer.read_bytes()
    assert b"max_num_seqs = 64" in after

    def reset() -> None:
        layer.write_text(PD, encoding="utf-8")

    def check(point: int) -> None:
        assert layer.read_bytes() in (PD.encode(), after), point
        assert main(["--repo", str(root), "set", "pd", "serve.max_num_seqs", "64"]) == 0
        assert layer.read_bytes() == after
        assert sorted(p.name for p in layer.parent.iterdir()) == ["pd.toml", "single.toml"], point

    sweep = Sweep(tmp_path, sig)
    sweep.run(argv, tmp_path, reset, check)
    assert sweep.points >= 20, sweep.points


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize("sig", list(SIGNALS))
def test_a_killed_lock_leaves_the_old_lock_or_the_new_one(
    tmp_path: Path, sig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`profilekit lock` (no lock before) and `profilekit update platform` (which rewrites profilekit.lock for a
    moved branch) killed at each event: the lock is the old one (or none) or the new one, whole; the next run
    leaves no temporary file beside it."""
    platform = tmp_path / "platform"
    (platform / "profiles").mkdir(parents=True)
    (platform / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    (platform / "profiles" / "base.toml").write_text('[serve]\nmodel = "m"\n', encoding="utf-8")
    _git(platform, "init", "-q", "-b", "main")
    _git(platform, "add", "-A")
    _git(platform, "commit", "-q", "-m", "one")
    root = tmp_path / "consumer"
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text(
        '[vllm]\nversion = "0.33.0"\n\n[sources.platform]\ngit = "../platform"\nrev = "main"\n', encoding="utf-8"
    )
    (root / "profiles" / "site.toml").write_text('extends = ["platform:base"]\n', encoding="utf-8")
    monkeypatch.setenv("PROFILEKIT_CACHE_DIR", str(tmp_path / "cache"))
    lock = root / "profilekit.lock"
    assert main(["--repo", str(root), "lock"]) == 0
    before = lock.read_bytes()
    sweep = Sweep(tmp_path, sig)

    def unlocked() -> None:
        lock.unlink(missing_ok=True)

    def first_lock(point: int) -> None:  # `profilekit lock` of a repository without a lock: none, or all of it
        assert not lock.exists() or lock.read_bytes() == before, point
        assert main(["--repo", str(root), "lock"]) == 0
        assert sorted(p.name for p in root.iterdir()) == ["profilekit.lock", "profilekit.toml", "profiles"], point

    sweep.run(["--repo", str(root), "--no-cache", "lock"], root, unlocked, first_lock)
    (platform / "profiles" / "base.toml").write_text('[serve]\nmodel = "m2"\n', encoding="utf-8")
    _git(platform, "commit", "-qam", "two")
    argv = ["--repo", str(root), "--no-cache", "update", "platform"]
    assert main(argv[:2] + argv[3:]) == 0
    after = lock.read_bytes()
    assert after != before

    def reset() -> None:
        lock.write_bytes(before)

    def check(point: int) -> None:
        assert lock.read_bytes() in (before, after), point
        assert main(argv[:2] + argv[3:]) == 0
        assert sorted(p.name for p in root.iterdir()) == ["profilekit.lock", "profilekit.toml", "profiles"], point

    sweep.run(argv, root, reset, check)
    assert sweep.points >= 20, sweep.points


@pytest.mark.parametrize("sig", list(SIGNALS))
def test_a_lint_stopped_at_any_point_ends_quietly_and_leaves_the_cache_usable(
    tmp_path: Path, sig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`profilekit lint` killed at each file-system event, answered from the cache (Ctrl-C printed a traceback
    from the cache's reads: issue 26, item 2), recording into an empty cache, and uncached: it ends with the
    signal's status and nothing printed, and the next lint prints the same report as before."""
    root = _repo(tmp_path / "repo")
    (root / "profiles" / "single.toml").write_text(SINGLE + "[serve.nope]\n", encoding="utf-8")  # a finding
    for index in range(6):  # a few more layers: more steps to stop a lint at
        (root / "profiles" / f"more{index}.toml").write_text(f'[serve]\nmodel = "m{index}"\n', encoding="utf-8")
    cache = tmp_path / "cache"
    monkeypatch.setenv("PROFILEKIT_CACHE_DIR", str(cache))
    # in this process first: the modules a lint imports are imported here before the sweep, as the render sweeps
    # do, so its kill points are the command's own steps whatever tests ran before (not Python's imports)
    assert main(["--repo", str(root), "lint"]) == 1
    log = tmp_path / "whole.log"
    assert _fork(["--repo", str(root), "lint"], tmp_path, 0, 0, log)[0] == 1
    report = log.with_suffix(".out").read_text(encoding="utf-8")
    assert "error unknown-option serve.nope" in report
    sweep = Sweep(tmp_path, sig)
    # a replay and an uncached run at every event; a recording run (which also hashes profilekit's files for the
    # cache key, one read after another of the same kind) at every 2nd
    for state, argv, stride in (
        ("replayed", ["--repo", str(root), "lint"], 1),
        ("recorded", ["--repo", str(root), "lint"], 2),
        ("uncached", ["--repo", str(root), "--no-cache", "lint"], 1),
    ):

        def reset(state: str = state) -> None:
            if state == "recorded":
                shutil.rmtree(cache, ignore_errors=True)

        def check(point: int) -> None:
            again = tmp_path / "again.log"
            assert _fork(["--repo", str(root), "lint"], tmp_path, 0, 0, again)[0] == 1, point
            assert again.with_suffix(".out").read_text(encoding="utf-8") == report, point

        sweep.run(argv, tmp_path, reset, check, expect=1, stride=stride)
    assert sweep.points >= 70, sweep.points


def test_an_output_folder_that_is_a_symlink_stays_one_and_its_folder_gets_the_render(tmp_path: Path) -> None:
    """`--out current` where `current -> releases/r1`: the link is kept, the folder it names is replaced whole,
    and nothing is left beside either."""
    root = _repo(tmp_path / "repo")
    real = tmp_path / "releases" / "r1"
    real.mkdir(parents=True)
    (real / "notes.txt").write_text("mine\n", encoding="utf-8")
    link = tmp_path / "current"
    link.symlink_to("releases/r1")
    for _round in range(2):
        assert main(["--repo", str(root), "render", "pd", "--out", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == "releases/r1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "releases", "repo"]
    assert sorted(p.name for p in (tmp_path / "releases").iterdir()) == ["r1"]
    assert (real / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    _digests_match(real)
    assert "prefill.sh" in {p.name for p in real.iterdir()}


def test_the_next_render_removes_what_killed_renders_left_and_nothing_else(tmp_path: Path) -> None:
    """What earlier kills left — temporary files of the files written one by one (`.prefill.sh.<hex>.tmp`, mode
    0755 among them, as profilekit before the swap left them), a staging folder — goes with the next render;
    look-alike names of the user's (`.prefill.sh.tmp`, `.out.profilekit-old`, a dotfile) stay."""
    root = _repo(tmp_path / "repo")
    out = tmp_path / "out"
    assert main(["--repo", str(root), "render", "pd", "--out", str(out)]) == 0
    for name, mode in ((".prefill.sh.0123456789ab.tmp", 0o755), (".decode.env.k3j_9x0a.tmp", 0o600)):
        (out / name).write_text("half", encoding="utf-8")
        (out / name).chmod(mode)
    stage = tmp_path / ".out.profilekit-00112233aabb"
    shutil.copytree(out, stage)  # a previous render swapped out, then killed before it was removed
    (stage / "notes.txt").write_text("mine\n", encoding="utf-8")  # a file of the user's carried over
    mine = [out / ".prefill.sh.tmp", out / ".hidden", tmp_path / ".out.profilekit-old"]
    for path in mine:
        path.write_text("mine\n", encoding="utf-8")
    assert main(["--repo", str(root), "render", "pd", "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.profilekit-old", "out", "repo"]
    assert all(path.read_text(encoding="utf-8") == "mine\n" for path in mine)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine\n"  # back where it was
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp") and p.name != ".prefill.sh.tmp"]
    _digests_match(out)
