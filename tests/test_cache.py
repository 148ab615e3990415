"""The cache (profilekit.cache): a repeat run is answered from it, and never with a stale or damaged answer.

Every test runs the real command in a new process, as a user does, with the cache in a folder of its own.
Layer files are dated a minute back unless a test says otherwise: a file dated after a run began is, by design,
not cached (the run may have read it before or after the change).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

STACK_FILES = {
    "profilekit.toml": '[vllm]\nversion = "0.33.0"\n',
    "profiles/base.toml": (
        "[layer]\nabstract = true\n\n[serve]\n"
        'model = "Qwen/Qwen3-0.6B"\nport = 8000\nmax_num_seqs = 256\n\n[env]\nVLLM_LOGGING_LEVEL = "INFO"\n'
    ),
    "profiles/small.toml": '[layer]\nextends = ["base"]\n\n[serve]\nmax_num_seqs = 64\n',
}


def _age(path: Path, seconds: float = 60) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    _age(path)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name, text in STACK_FILES.items():
        write(root, name, text)
    return root


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def pk(cwd: Path, cache: Path, *args: str, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PROFILEKIT_CACHE_DIR": str(cache)}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run(
        [sys.executable, *flags, "-m", "profilekit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def answered(cwd: Path, cache: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], bool]:
    """Run `profilekit ARGS`; also say whether the run was answered from the cache: it loaded none of the CLI
    (`cli.common`, which both typer's commands and the fast path run through; typer itself no longer tells, as a
    hot command made in full does not load it either)."""
    done = pk(cwd, cache, *args, importtime=True)
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    stderr = "".join(line + "\n" for line in done.stderr.splitlines() if not line.startswith("import time"))
    made = "profilekit.cli.common" in loaded
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout, stderr), not made


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "runs").rglob("*") if p.is_file() and not p.name.startswith("."))


def test_a_repeat_run_is_answered_from_the_cache_with_the_same_output(repo: Path, cache: Path) -> None:
    first, cached = answered(repo, cache, "render", "small", "--print")
    assert first.returncode == 0 and not cached, first.stderr
    second, cached = answered(repo, cache, "render", "small", "--print")
    assert cached
    assert (second.returncode, second.stdout, second.stderr) == (first.returncode, first.stdout, first.stderr)
    assert "--max-num-seqs 64" in second.stdout


def test_an_edited_layer_is_read_again(repo: Path, cache: Path) -> None:
    assert "--max-num-seqs 64" in pk(repo, cache, "render", "small", "--print").stdout
    write(repo, "profiles/small.toml", STACK_FILES["profiles/small.toml"].replace("64", "32"))
    done, cached = answered(repo, cache, "render", "small", "--print")
    assert not cached and "--max-num-seqs 32" in done.stdout


def test_an_edit_that_keeps_size_and_time_is_caught_by_the_digest(repo: Path, cache: Path) -> None:
    """Size and modification time are only a shortcut: the same size and time with other bytes is a change."""
    path = repo / "profiles/small.toml"
    assert "--max-num-seqs 64" in pk(repo, cache, "render", "small", "--print").stdout
    before = path.stat()
    path.write_text(STACK_FILES["profiles/small.toml"].replace("64", "48"), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert "--max-num-seqs 48" in pk(repo, cache, "render", "small", "--print").stdout


def test_the_same_bytes_rewritten_still_count_as_unchanged(repo: Path, cache: Path) -> None:
    """A checkout that rewrites a file with the same content (a new time) keeps the answer."""
    pk(repo, cache, "check", "small")
    write(repo, "profiles/small.toml", STACK_FILES["profiles/small.toml"])
    _, cached = answered(repo, cache, "check", "small")
    assert cached


def test_a_new_layer_file_is_seen(repo: Path, cache: Path) -> None:
    assert "large" not in pk(repo, cache, "list").stdout
    write(repo, "profiles/large.toml", '[layer]\nextends = ["base"]\n\n[serve]\nmax_num_seqs = 512\n')
    done, cached = answered(repo, cache, "list")
    assert not cached and "large" in done.stdout


def test_a_team_template_added_later_replaces_the_built_in_one(repo: Path, cache: Path) -> None:
    write(repo, "profilekit.toml", STACK_FILES["profilekit.toml"] + '\n[render]\ntemplates = "team"\n')
    (repo / "team").mkdir()
    assert "team-made" not in pk(repo, cache, "render", "small", "--print").stdout
    builtin = (Path(__file__).resolve().parents[1] / "templates/launch.sh.j2").read_text(encoding="utf-8")
    write(repo, "team/launch.sh.j2", builtin.replace("set -euo pipefail", "set -euo pipefail\n# team-made", 1))
    done = pk(repo, cache, "render", "small", "--print")
    assert done.returncode == 0, done.stderr
    assert "team-made" in done.stdout


def test_a_model_folder_created_later_is_read(repo: Path, cache: Path) -> None:
    """`serve.model` naming a local folder that does not exist yet: once it does, its config.json counts."""
    layer = '[layer]\nextends = ["base"]\n\n[serve]\nmodel = "models/tiny"\nmax_model_len = 4096\n'
    write(repo, "profiles/local.toml", layer)
    first = pk(repo, cache, "check", "local")
    assert first.returncode == 0 and "model-facts-missing" in first.stdout
    config = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "max_position_embeddings": 1024}
    write(repo, "models/tiny/config.json", json.dumps(config))
    second, cached = answered(repo, cache, "check", "local")
    assert not cached and second.returncode == 1 and "max-model-len-positions" in second.stdout
    config["max_position_embeddings"] = 8192  # the same file, edited
    write(repo, "models/tiny/config.json", json.dumps(config))
    third, cached = answered(repo, cache, "check", "local")
    assert not cached and third.returncode == 0 and "no problems found" in third.stdout


def test_findings_are_answered_too_but_usage_errors_are_not(repo: Path, cache: Path) -> None:
    write(repo, "profiles/bad.toml", '[layer]\nextends = ["base"]\n\n[serve]\nmax_num_seq = 64\n')
    first = pk(repo, cache, "check", "bad")
    assert first.returncode == 1 and "max_num_seqs" in first.stdout + first.stderr
    second, cached = answered(repo, cache, "check", "bad")
    assert cached and (second.returncode, second.stdout, second.stderr) == (1, first.stdout, first.stderr)
    assert pk(repo, cache, "check", "nosuch").returncode == 2
    _, cached = answered(repo, cache, "check", "nosuch")
    assert not cached


def test_a_layer_dated_after_the_run_started_is_not_cached(repo: Path, cache: Path) -> None:
    """A file changed while the run read it may have been read before or after the change: nothing is stored."""
    path = write(repo, "profiles/small.toml", STACK_FILES["profiles/small.toml"])
    _age(path, -5)  # five seconds ahead: changed after the run began, as far as its time says
    assert pk(repo, cache, "check", "small").returncode == 0
    assert entries(cache) == []
    _age(path)
    pk(repo, cache, "check", "small")
    assert len(entries(cache)) == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # truncated
        lambda raw: raw.replace(b"64", b"99"),  # a byte changed: the checksum no longer matches
        lambda raw: b"\x00\xff" * 40,  # not an entry at all
        lambda raw: b"",
    ],
    ids=["truncated", "edited", "garbage", "empty"],
)
def test_a_damaged_entry_is_ignored_and_made_again(repo: Path, cache: Path, damage: object) -> None:
    first = pk(repo, cache, "render", "small", "--print")
    [entry] = entries(cache)
    entry.write_bytes(damage(entry.read_bytes()))  # type: ignore[operator]
    again, cached = answered(repo, cache, "render", "small", "--print")
    assert not cached and (again.returncode, again.stdout, again.stderr) == (0, first.stdout, first.stderr)
    third, cached = answered(repo, cache, "render", "small", "--print")
    assert cached and third.stdout == first.stdout


def test_a_foreign_entry_with_a_valid_checksum_is_not_trusted(repo: Path, cache: Path) -> None:
    """An entry copied from another key (or written by another tool) names another key: ignored."""
    import hashlib

    pk(repo, cache, "render", "small", "--print")
    pk(repo, cache, "check", "small")
    render_entry, check_entry = entries(cache)[0], entries(cache)[1]
    body = json.loads(check_entry.read_bytes().partition(b"\n")[2])
    for path in (render_entry, check_entry):
        payload = json.dumps(body).encode()
        path.write_bytes(hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    done = pk(repo, cache, "render", "small", "--print")
    assert done.returncode == 0 and done.stdout.startswith("#!")


def test_no_cache_neither_reads_nor_writes(repo: Path, cache: Path) -> None:
    pk(repo, cache, "--no-cache", "check", "small")
    assert entries(cache) == []
    pk(repo, cache, "check", "small")
    done, cached = answered(repo, cache, "check", "small", "--no-cache")
    assert done.returncode == 0 and not cached


def test_concurrent_runs_leave_one_whole_entry(repo: Path, cache: Path) -> None:
    expected = pk(repo, cache, "--no-cache", "render", "small", "--print").stdout
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda _i: pk(repo, cache, "render", "small", "--print"), range(12)))
    assert all(r.returncode == 0 and r.stdout == expected for r in results)
    assert len(entries(cache)) == 1
    done, cached = answered(repo, cache, "render", "small", "--print")
    assert cached and done.stdout == expected


def test_a_replayed_render_writes_its_files_again_through_the_writer(repo: Path, cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = pk(repo, cache, "render", "small", "--out", str(out))
    assert first.returncode == 0, first.stderr
    files = {p.name: (p.read_bytes(), p.stat().st_mode & 0o777) for p in out.iterdir()}
    for path in out.iterdir():
        path.unlink()
    victim = tmp_path / "victim"
    victim.write_text("untouched\n", encoding="utf-8")
    (out / "serve.sh").symlink_to(victim)  # planted: replaced, never followed
    again, cached = answered(repo, cache, "render", "small", "--out", str(out))
    assert cached and (again.returncode, again.stdout, again.stderr) == (0, first.stdout, first.stderr)
    assert {p.name: (p.read_bytes(), p.stat().st_mode & 0o777) for p in out.iterdir()} == files
    assert not (out / "serve.sh").is_symlink() and victim.read_text(encoding="utf-8") == "untouched\n"


def test_a_replayed_render_that_cannot_write_reports_it_as_a_first_run_does(
    repo: Path, cache: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert pk(repo, cache, "render", "small", "--out", str(out)).returncode == 0
    for path in out.iterdir():
        path.unlink()
    out.rmdir()
    out.write_text("a file where the folder was\n", encoding="utf-8")
    done = pk(repo, cache, "render", "small", "--out", str(out))
    assert done.returncode == 2 and "cannot write to output folder" in done.stderr


def test_no_secret_reaches_the_cache(repo: Path, cache: Path) -> None:
    token = "sk-live-" + "7Hq2ZpX9wLmN4vB8"
    write(repo, "profiles/leaky.toml", f'[layer]\nextends = ["base"]\n\n[serve]\napi_key = "{token}"\n')
    for args in (["check", "leaky"], ["show", "leaky"], ["explain", "leaky", "api_key"], ["lint"]):
        pk(repo, cache, *args)
        pk(repo, cache, *args)
    assert entries(cache)
    for entry in entries(cache):
        assert token.encode() not in entry.read_bytes()


def test_an_entry_another_user_owns_or_could_write_is_not_trusted(repo: Path, cache: Path) -> None:
    """A replayed entry says what to print and what to write where: only the user's own entries count."""
    import hashlib

    first = pk(repo, cache, "render", "small", "--print")
    [entry] = entries(cache)
    body = entry.read_bytes().partition(b"\n")[2].replace(b"exec vllm serve", b"exec evil serve")
    forged = hashlib.sha256(body).hexdigest().encode() + b"\n" + body  # valid checksum, right key
    entry.write_bytes(forged)
    entry.chmod(0o666)
    assert pk(repo, cache, "render", "small", "--print").stdout == first.stdout
    entry.write_bytes(forged)
    entry.chmod(0o600)
    if os.getuid() == 0:  # root can give the file away to test the owner check
        os.chown(entry, 65534, 65534)
        assert pk(repo, cache, "render", "small", "--print").stdout == first.stdout
    entry.write_bytes(forged)
    if os.getuid() == 0:
        os.chown(entry, 0, 0)
    entry.chmod(0o600)
    # the same bytes as the user's own private file are used: the owner and mode checks are what refused them above
    assert "exec evil serve" in pk(repo, cache, "render", "small", "--print").stdout


def _forged(entry: Path) -> bytes:
    """The entry's bytes made to say `exec evil serve`, checksum and key intact: what replaying it would print."""
    import hashlib

    body = entry.read_bytes().partition(b"\n")[2].replace(b"exec vllm serve", b"exec evil serve")
    return hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_entry_that_is_a_symlink_is_not_followed(repo: Path, cache: Path, tmp_path: Path) -> None:
    """`profilekit render small --print` twice, its entry replaced by a symlink to a well-formed entry of the same
    key elsewhere (the user's own, mode 0600): the second run is made afresh, the link's target left alone."""
    first = pk(repo, cache, "render", "small", "--print")
    [entry] = entries(cache)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = elsewhere / entry.name
    forged = _forged(entry)
    planted.write_bytes(forged)
    planted.chmod(0o600)
    entry.unlink()
    entry.symlink_to(planted)
    assert "exec evil serve" in planted.read_text(encoding="utf-8")
    again, cached = answered(repo, cache, "render", "small", "--print")
    assert not cached and (again.returncode, again.stdout) == (0, first.stdout)
    assert _listing(elsewhere) == {entry.name: forged}  # the target untouched
    assert not entry.is_symlink()  # the fresh entry replaced the link
    third, cached = answered(repo, cache, "render", "small", "--print")
    assert cached and third.stdout == first.stdout


@pytest.mark.parametrize("depth", ["runs", "runs/XX"])
def test_a_cache_folder_that_is_a_symlink_is_neither_read_nor_written_through(
    repo: Path, cache: Path, tmp_path: Path, depth: str
) -> None:
    """`profilekit render small --print` twice, `runs/` or `runs/XX/` (XX: the key's first two characters) of the
    cache moved elsewhere and a symlink left in its place: a forged entry there is not replayed, and nothing is
    written there; the link is replaced by a real folder that the next run is answered from."""
    first = pk(repo, cache, "render", "small", "--print")
    [entry] = entries(cache)
    entry.write_bytes(_forged(entry))
    link = cache / depth.replace("XX", entry.parent.name)
    elsewhere = tmp_path / "elsewhere"
    link.rename(elsewhere)
    link.symlink_to(elsewhere, target_is_directory=True)
    before = _listing(elsewhere)
    assert any(b"exec evil serve" in data for data in before.values())
    again, cached = answered(repo, cache, "render", "small", "--print")
    assert not cached and (again.returncode, again.stdout) == (0, first.stdout)
    assert _listing(elsewhere) == before  # nothing written through the link
    assert not link.is_symlink() and link.is_dir()
    third, cached = answered(repo, cache, "render", "small", "--print")
    assert cached and third.stdout == first.stdout


@pytest.mark.parametrize("xdg", [None, "", "  ", "/srv/cache"])
def test_the_default_folder_is_the_one_platformdirs_names(xdg: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    from profilekit.cache import cache_dir

    monkeypatch.delenv("PROFILEKIT_CACHE_DIR", raising=False)
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert cache_dir() == platformdirs.user_cache_dir("profilekit", appauthor=False)


# ---- a digest remembered within one run (profilekit.cache.file_digest)


def _opens(path: Path) -> list[str]:
    """The opens of `path` this process makes from now on (an audit hook cannot be removed: it filters by name)."""
    seen: list[str] = []
    target = str(path)

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "open" and args and args[0] == target:
            seen.append(event)

    sys.addaudithook(hook)
    return seen


def test_a_settled_file_is_read_once_per_run_and_the_recording_still_sees_it(tmp_path: Path) -> None:
    from profilekit import cache
    from profilekit.cache import record

    path = write(tmp_path, "profiles/a.toml", "[serve]\nport = 1\n")
    time.sleep(cache.RACY_NS / 1e9 * 2)  # its change time (set by `write` dating it back) out of the racy window
    opens = _opens(path)
    first = cache.file_digest(str(path))
    recording = record.start(())
    try:
        again = cache.file_digest(str(path))
    finally:
        record.stop(recording)
    assert first == again == cache.digest(path.read_bytes())
    assert len(opens) == 2  # the first digest and read_bytes above: the second digest read nothing
    assert str(path) in recording.files


def test_a_file_changed_since_it_was_digested_is_read_again(tmp_path: Path) -> None:
    from profilekit import cache

    path = write(tmp_path, "profiles/a.toml", "[serve]\nport = 1\n")
    time.sleep(cache.RACY_NS / 1e9 * 2)
    first = cache.file_digest(str(path))
    # the same size and modification time, as `touch -r` or `rsync -t` leave them: the change time still moves
    mtime = path.stat().st_mtime_ns
    path.write_text("[serve]\nport = 2\n", encoding="utf-8")
    os.utime(path, ns=(mtime, mtime))
    assert cache.file_digest(str(path)) == cache.digest(b"[serve]\nport = 2\n") != first


def test_a_file_written_just_now_is_never_remembered(tmp_path: Path) -> None:
    """Two writes within one timestamp tick can leave every stat field equal: a fresh file is always read."""
    from profilekit import cache

    path = tmp_path / "fresh.toml"
    path.write_text("a = 1\n", encoding="utf-8")
    opens = _opens(path)
    cache.file_digest(str(path))
    cache.file_digest(str(path))
    assert len(opens) == 2
