"""git, run as a reader of data: fetch a source into a bare mirror, resolve a revision, copy a commit's files out.

Sources are data, never code. Nothing is ever checked out: files are read from git's object store with
`ls-tree` and `cat-file`, so no hook, filter, attribute or submodule of the source runs or is followed. The
mirror is a bare repository profilekit made itself (no hooks; `core.hooksPath` points at an empty folder
anyway), git never prompts (`GIT_TERMINAL_PROMPT=0`), and only the transports a source may name are allowed
(`GIT_ALLOW_PROTOCOL`): `ext::` and friends, which run commands, are refused before git sees them too.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from profilekit.records import record
from profilekit.sources.lockfile import tree_hash

PROTOCOLS = "file:git:http:https:ssh"
# a file a source may hold, and how much of them: a profile repository is small
MAX_FILES = 20_000
MAX_BYTES = 200 * 1024 * 1024
# what profilekit reads from a source: a symlink there is refused, elsewhere it is left out
READ_PARTS = ("profiles", "profilekit.toml", "templates")
_REV = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/+-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SCP = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:")  # git@host:path, ssh without a scheme


class GitError(Exception):
    """git failed, or a source is not what profilekit reads; the message is for the user (no credentials)."""


class UnsafeSource(GitError):
    """A commit holds what a source may not: a path out of its folder, a symlink where profilekit reads."""


def url_problem(url: str) -> str:
    """Why `url` cannot name a source ("" when it can); never repeats a credential it carries."""
    if "\x00" in url or "\n" in url or url != url.strip():
        return "the git URL holds whitespace or control characters"
    match = _SCHEME.match(url)
    if match is not None:
        scheme = match.group(1).lower()
        if scheme not in PROTOCOLS.split(":"):
            return f"git URLs of scheme {scheme!r} are not allowed (use https://, ssh://, git:// or file://)"
        rest = url[match.end() :]
        host = rest.split("/", 1)[0]
        if "@" in host:
            user = host.rsplit("@", 1)[0]
            if ":" in user or scheme in ("http", "https"):
                return (
                    f"the git URL carries credentials ({scheme}://***@...): a lock file and every message would "
                    "repeat them"
                )
        return ""
    if "::" in url:
        return "git transports written as `NAME::ADDRESS` run programs and are not allowed"
    if url.startswith("-"):
        return "a git URL cannot start with '-'"
    return ""


def git_address(root: Path, git: str) -> str:
    """What git is given: a URL as written, a local path made absolute against the repository root."""
    if _SCHEME.match(git) or _SCP.match(git):
        return git
    return str((root / Path(git).expanduser()).resolve())


def rev_problem(rev: str) -> str:
    return (
        ""
        if _REV.match(rev) and ".." not in rev and not rev.endswith((".lock", "/"))
        else ("a rev is a tag, a branch or a commit: letters, digits and . _ / + -, not starting with '-'")
    )


def is_commit(rev: str) -> bool:
    return _COMMIT.match(rev) is not None


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_ALLOW_PROTOCOL=PROTOCOLS,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_ASKPASS="true",
        SSH_ASKPASS="true",
        LC_ALL="C",
    )
    return env


def _git(args: list[str], *, cwd: Path | None = None, stdin: bytes | None = None, timeout: float = 300) -> bytes:
    hooks = os.devnull  # a file, not a folder: no hook can be found under it
    command = ["git", "-c", f"core.hooksPath={hooks}", "-c", "protocol.file.allow=always", "-c", "core.fsmonitor=false"]
    try:
        done = subprocess.run(
            [*command, *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            env=_env(),
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed (sources are fetched with git: apt install git)") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} did not finish in {timeout:.0f} s") from None
    if done.returncode != 0:
        raise GitError(_strip_credentials(_reason(done.stderr.decode("utf-8", "replace"), args[0])))
    return done.stdout


def _reason(stderr: str, verb: str) -> str:
    """git's first `fatal:` (or `error:`) line, which says what went wrong; the lines after it say what to try."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        for prefix in ("fatal: ", "error: "):
            if line.startswith(prefix):
                return line.removeprefix(prefix)
    return lines[0] if lines else f"git {verb} failed"


def _strip_credentials(text: str) -> str:
    return re.sub(r"(://)[^/@\s]*@", r"\1***@", text)


def mirror_path(cache: Path, url: str) -> Path:
    return cache / "repos" / hashlib.sha256(url.encode()).hexdigest()[:24]


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One process at a time fetches into (or extracts from) a mirror."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{folder}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fetch(cache: Path, url: str, *, commit: str | None = None) -> Path:
    """Bring the branches and tags of `url` (and `commit`, when no branch or tag holds it) into its mirror."""
    mirror = mirror_path(cache, url)
    with _locked(mirror):
        if not (mirror / "HEAD").is_file():
            shutil.rmtree(mirror, ignore_errors=True)
            mirror.mkdir(parents=True)
            _git(["init", "--bare", "-q", str(mirror)])
        if commit is not None and has_commit(mirror, commit):
            return mirror
        _git(
            ["fetch", "-q", "--prune", "--force", "--no-write-fetch-head", "--", url,
             "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
            cwd=mirror,
        )  # fmt: skip
        if commit is not None and not has_commit(mirror, commit):
            _git(["fetch", "-q", "--no-write-fetch-head", "--", url, commit], cwd=mirror)
    return mirror


def has_commit(mirror: Path, commit: str) -> bool:
    try:
        _git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=mirror)
    except GitError:
        return False
    return True


def resolve(mirror: Path, rev: str) -> str | None:
    """The commit `rev` names in the mirror: a tag, then a branch, then a commit (full or abbreviated)."""
    for ref in (f"refs/tags/{rev}", f"refs/heads/{rev}", rev):
        try:
            out = _git(["rev-parse", "--verify", "-q", "--end-of-options", f"{ref}^{{commit}}"], cwd=mirror)
        except GitError:
            continue
        return out.decode().strip()
    return None


@record(frozen=True, slots=True)
class TreeEntry:
    """One entry of a git tree, as `git ls-tree -r` lists it."""

    mode: str
    kind: str
    sha: str
    path: str


def _entries(mirror: Path, commit: str) -> list[TreeEntry]:
    raw = _git(["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit], cwd=mirror)
    found: list[TreeEntry] = []
    for line in raw.split(b"\0"):
        if not line:
            continue
        head, _, path = line.partition(b"\t")
        mode, kind, sha = head.decode().split(" ")
        found.append(TreeEntry(mode, kind, sha, path.decode("utf-8", "surrogateescape")))
    return found


def path_problem(path: str) -> str:
    """Why a path inside a source cannot be written below its folder ("" when it can)."""
    if path.startswith("/") or "\\" in path or "\x00" in path:
        return "an absolute path, or one with '\\' or NUL"
    for part in path.split("/"):
        if part in ("", ".", "..") or part.lower() == ".git":
            return f"a path with the part {part!r}"
    return ""


def _read(path: str) -> bool:
    return any(path == part or path.startswith(part + "/") for part in READ_PARTS)


def extract(mirror: Path, commit: str, dest: Path) -> None:
    """Write the files of `commit` into `dest` (made whole under a temporary name, then renamed into place).

    Only regular files are written. A symlink or a submodule where profilekit reads (profiles/, templates/,
    profilekit.toml) refuses the source; elsewhere it is left out. A path that would leave `dest` refuses it.
    """
    entries = _entries(mirror, commit)
    files: list[TreeEntry] = []
    for entry in entries:
        problem = path_problem(entry.path)
        if problem:
            raise UnsafeSource(f"commit {commit[:7]} holds {entry.path!r}, {problem}: a source stays in its folder")
        if entry.mode in ("100644", "100755"):
            files.append(entry)
        elif _read(entry.path):
            what = "a symlink" if entry.mode == "120000" else "not a regular file"
            raise UnsafeSource(f"{entry.path} in commit {commit[:7]} is {what}: sources are read as plain files only")
    if len(files) > MAX_FILES:
        raise UnsafeSource(f"commit {commit[:7]} holds {len(files):,} files, more than a source may ({MAX_FILES:,})")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".tmp-{dest.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        total = 0
        for entry, data in zip(files, _blobs(mirror, [e.sha for e in files]), strict=True):
            total += len(data)
            if total > MAX_BYTES:
                raise UnsafeSource(f"commit {commit[:7]} holds more than {MAX_BYTES // 2**20} MB of files")
            target = tmp / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)

        digest = tree_hash(tmp)
        try:
            os.rename(tmp, dest)
        except OSError:
            if not dest.is_dir():  # another run put the same commit there first: keep theirs
                raise
            return
        record = dest.with_name(dest.name + ".digest")
        record.with_suffix(".tmp").write_text(digest + "\n", encoding="ascii")
        os.replace(record.with_suffix(".tmp"), record)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _blobs(mirror: Path, shas: list[str]) -> Iterator[bytes]:
    if not shas:
        return
    raw = _git(["cat-file", "--batch"], cwd=mirror, stdin="".join(f"{s}\n" for s in shas).encode())
    at = 0
    for _sha in shas:
        end = raw.index(b"\n", at)
        size = int(raw[at:end].split(b" ")[2])
        yield raw[end + 1 : end + 1 + size]
        at = end + 1 + size + 1


def ref_names(mirror: Path) -> list[str]:
    """The tags, then the branches, of a mirror (did-you-mean for a rev that names none)."""
    raw = _git(["for-each-ref", "--format=%(refname:short)", "refs/tags", "refs/heads"], cwd=mirror)
    return raw.decode("utf-8", "replace").split()


def log_subjects(mirror: Path, old: str, new: str) -> list[str]:
    """`git log --oneline old..new`, newest first: what `update` moved over."""
    raw = _git(["log", "--format=%h %s", "--end-of-options", f"{old}..{new}"], cwd=mirror)
    return raw.decode("utf-8", "replace").splitlines()
