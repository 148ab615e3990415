#!/usr/bin/env python3
"""Build and cache the CPU-only vLLM oracle environments (stdlib only).

Layout under ``${PROFILEKIT_ORACLE_CACHE:-~/.cache/profilekit-oracle}``:

``base-<hash>/``
    One virtual environment shared by every release: the CPU build of torch
    and the oracle pins (``oracle-pins.txt``), all installed ``--no-deps``.
    The hash covers the pins file, the torch version and the Python version.
``vllm-<X>/``
    A Python-only copy of the ``vllm==X`` wheel (``.py`` files, package data
    and the dist-info; no compiled extensions), put first on ``PYTHONPATH`` of
    the base interpreter (vllm-facts.md section 5.4).

Each directory is built in a temporary sibling, verified, stamped with a
marker file and renamed into place, under an exclusive lock, so a rebuild is
skipped when the directory is complete and two concurrent builds do not step
on each other.

Usage::

    python3 tools/oracle/build_env.py --versions 0.27.0 0.33.0
    python3 tools/oracle/build_env.py --all
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKER = HERE / "worker.py"

SUPPORTED_VERSIONS: tuple[str, ...] = (
    "0.27.0",
    "0.27.1",
    "0.28.0",
    "0.29.0",
    "0.30.0",
    "0.31.0",
    "0.32.0",
    "0.33.0",
)
TORCH_VERSION = "2.13.0"
MARKER = ".profilekit-oracle-complete"
# Bump when the extraction rules below change, so old copies get rebuilt.
EXTRACT_POLICY = 1
# Compiled code and C/CUDA sources: the parser and config validators never
# load them (checked against /proc/self/maps, vllm-facts.md section 5.4).
SKIP_SUFFIXES = (".so", ".h", ".hpp", ".cuh", ".inl", ".cu", ".cc", ".cpp", ".c")
ELF_MAGIC = b"\x7fELF"


class BuildError(RuntimeError):
    """A step of the oracle build failed; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class OracleEnv:
    """Where one release's oracle lives: the interpreter and its PYTHONPATH."""

    version: str
    python: Path
    vllm_copy: Path

    def worker_command(self) -> list[str]:
        """The argv that starts a worker for this release."""
        return [str(self.python), "-u", str(WORKER)]

    def worker_environ(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The process environment for the worker (vLLM copy first on the path)."""
        env = dict(os.environ if base is None else base)
        env["PYTHONPATH"] = str(self.vllm_copy)
        env["VLLM_TARGET_DEVICE"] = "cpu"
        env["HF_HUB_OFFLINE"] = "1"
        env["TRANSFORMERS_OFFLINE"] = "1"
        env["PYTHONNOUSERSITE"] = "1"
        env.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        # No interaction with an outer virtual environment.
        env.pop("VIRTUAL_ENV", None)
        env.pop("PYTHONHOME", None)
        return env


def log(message: str) -> None:
    print(f"[oracle-build] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def timed(step: str) -> Iterator[None]:
    start = time.monotonic()
    log(f"{step} ...")
    try:
        yield
    finally:
        log(f"{step}: {time.monotonic() - start:.1f} s")


def cache_root() -> Path:
    configured = os.environ.get("PROFILEKIT_ORACLE_CACHE")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "profilekit-oracle"


def pins_file() -> Path:
    """The pins, kept in the repository beside this script."""
    pins = HERE / "oracle-pins.txt"
    if not pins.is_file():
        raise BuildError(f"oracle pins not found: {pins}")
    return pins


def python_tag() -> str:
    return f"cp{sys.version_info.major}{sys.version_info.minor}"


def base_key() -> str:
    digest = hashlib.sha256()
    digest.update(pins_file().read_bytes())
    digest.update(f"\0torch=={TORCH_VERSION}+cpu".encode())
    digest.update(f"\0python={sys.implementation.name}-{sys.version.split()[0]}".encode())
    return digest.hexdigest()[:12]


def base_dir() -> Path:
    return cache_root() / f"base-{base_key()}"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def vllm_copy_dir(version: str) -> Path:
    return cache_root() / f"vllm-{version}"


def find_torch_wheel() -> Path:
    """The local CPU torch wheel; never let pip choose a CUDA build."""
    name_glob = f"torch-{TORCH_VERSION}+cpu-{python_tag()}-{python_tag()}-*.whl"
    explicit = os.environ.get("PROFILEKIT_TORCH_WHEEL")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise BuildError(f"PROFILEKIT_TORCH_WHEEL={explicit} is not a file")
        return path
    dirs: list[Path] = []
    for raw in (os.environ.get("PIP_FIND_LINKS", ""), _pip_config_find_links()):
        dirs.extend(Path(p) for p in raw.split() if p and "://" not in p)
    dirs.append(Path("/opt/wheels"))
    for directory in dirs:
        matches = sorted(directory.glob(name_glob)) if directory.is_dir() else []
        if matches:
            return matches[-1]
    raise BuildError(
        f"the CPU wheel of torch {TORCH_VERSION} ({name_glob}) was not found in "
        + ", ".join(str(d) for d in dirs)
        + ". The oracle must not install the CUDA build from PyPI. "
        "Put the wheel in one of those folders or set PROFILEKIT_TORCH_WHEEL."
    )


def _pip_config_find_links() -> str:
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.find-links"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def run(cmd: Sequence[str | Path], *, env: dict[str, str] | None = None) -> None:
    argv = [str(c) for c in cmd]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-30:]
        raise BuildError(f"command failed with exit code {result.returncode}: {' '.join(argv)}\n" + "\n".join(tail))


def pip_environ() -> dict[str, str]:
    env = dict(os.environ)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    return env


@contextlib.contextmanager
def locked(target: Path) -> Iterator[None]:
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.parent / f".{target.name}.lock"
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_marker(directory: Path) -> dict[str, object] | None:
    try:
        data = json.loads((directory / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_marker(directory: Path, data: dict[str, object]) -> None:
    (directory / MARKER).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def _install_into_place(tmp: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)


def ensure_base(*, force: bool = False) -> Path:
    """Build (or reuse) the shared venv with torch (CPU) and the pins."""
    target = base_dir()
    expected = {"key": base_key(), "torch": TORCH_VERSION}
    marker = read_marker(target)
    if not force and marker is not None and _subset(expected, marker):
        log(f"base environment up to date: {target}")
        return target
    with locked(target):
        marker = read_marker(target)
        if not force and marker is not None and _subset(expected, marker):
            log(f"base environment up to date: {target}")
            return target
        torch_wheel = find_torch_wheel()
        pins = pins_file()
        start = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            with timed("create venv"):
                run([sys.executable, "-m", "venv", "--clear", tmp])
            py = venv_python(tmp)
            with timed(f"install torch from {torch_wheel.name} (--no-deps)"):
                run([py, "-m", "pip", "install", "--no-deps", torch_wheel], env=pip_environ())
            with timed(f"install pins from {pins} (--no-deps)"):
                run([py, "-m", "pip", "install", "--no-deps", "-r", pins], env=pip_environ())
            with timed("check torch is the CPU build"):
                probe = subprocess.run(
                    [py, "-c", "import torch; print(torch.__version__)"],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if probe.returncode != 0 or "+cpu" not in probe.stdout:
                    raise BuildError(
                        f"torch in the oracle venv is not the CPU build: {probe.stdout!r} {probe.stderr[-2000:]}"
                    )
            _fix_script_shebangs(tmp / "bin", old=tmp, new=target)
            write_marker(
                tmp,
                {**expected, "pins": str(pins), "built_seconds": round(time.monotonic() - start, 1)},
            )
            _install_into_place(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        log(f"base environment built in {time.monotonic() - start:.1f} s: {target}")
    return target


def _subset(expected: Mapping[str, object], actual: Mapping[str, object]) -> bool:
    return all(actual.get(k) == v for k, v in expected.items())


def _fix_script_shebangs(bin_dir: Path, *, old: Path, new: Path) -> None:
    """Console scripts hard-code the venv path; point them at the final one."""
    for script in bin_dir.iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        data = script.read_bytes()
        if data.startswith(b"#!") and str(old).encode() in data[:4096]:
            script.write_bytes(data.replace(str(old).encode(), str(new).encode()))


def _wanted(member: zipfile.ZipInfo, version: str) -> bool:
    name = member.filename
    if member.is_dir():
        return False
    top = name.split("/", 1)[0]
    if top not in ("vllm", f"vllm-{version}.dist-info"):
        return False
    base = name.rsplit("/", 1)[-1]
    return not (base.endswith(SKIP_SUFFIXES) or ".so." in base)


def ensure_vllm(version: str, *, base: Path, force: bool = False) -> Path:
    """Build (or reuse) the Python-only copy of ``vllm==version``."""
    if version not in SUPPORTED_VERSIONS:
        raise BuildError(f"unsupported vLLM version {version}; supported: {' '.join(SUPPORTED_VERSIONS)}")
    target = vllm_copy_dir(version)
    expected: dict[str, object] = {"version": version, "policy": EXTRACT_POLICY}
    marker = read_marker(target)
    if not force and marker is not None and _subset(expected, marker):
        log(f"vllm {version} copy up to date: {target}")
        return target
    with locked(target):
        marker = read_marker(target)
        if not force and marker is not None and _subset(expected, marker):
            log(f"vllm {version} copy up to date: {target}")
            return target
        py = venv_python(base)
        start = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        download = Path(tempfile.mkdtemp(prefix=f".download-{version}-", dir=target.parent))
        try:
            with timed(f"download vllm=={version} wheel"):
                run(
                    [
                        py,
                        "-m",
                        "pip",
                        "download",
                        f"vllm=={version}",
                        "--no-deps",
                        "--only-binary=:all:",
                        "--no-cache-dir",
                        "-d",
                        download,
                    ],
                    env=pip_environ(),
                )
            wheels = sorted(download.glob(f"vllm-{version}-*.whl"))
            if len(wheels) != 1:
                raise BuildError(f"expected one vllm {version} wheel, got {wheels}")
            with timed(f"extract Python-only copy of {wheels[0].name}"):
                count = _extract(wheels[0], tmp, version)
            log(f"extracted {count} files")
            shutil.rmtree(download, ignore_errors=True)
            with timed("byte-compile"):
                run([py, "-m", "compileall", "-q", "-j", "0", tmp / "vllm"])
            with timed(f"verify: import the vllm {version} parser"):
                verify(OracleEnv(version=version, python=py, vllm_copy=tmp))
            write_marker(
                tmp,
                {**expected, "wheel": wheels[0].name, "built_seconds": round(time.monotonic() - start, 1)},
            )
            _install_into_place(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:
            shutil.rmtree(download, ignore_errors=True)
        log(f"vllm {version} copy built in {time.monotonic() - start:.1f} s: {target}")
    return target


def _extract(wheel: Path, dest: Path, version: str) -> int:
    count = 0
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if not _wanted(member, version):
                continue
            with archive.open(member) as source:
                head = source.read(4)
                if head == ELF_MAGIC:  # a bundled executable, e.g. vllm/vllm-rs
                    continue
                out = dest / member.filename
                out.parent.mkdir(parents=True, exist_ok=True)
                with open(out, "wb") as sink:
                    sink.write(head)
                    shutil.copyfileobj(source, sink)
            count += 1
    return count


def verify(env: OracleEnv) -> None:
    """Start the worker and parse one argv; raise BuildError if that fails."""
    request = json.dumps({"op": "parse", "argv": ["dummy-model", "--max-model-len", "64"]})
    result = subprocess.run(
        env.worker_command(),
        input=request + "\n",
        env=env.worker_environ(),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    answers: list[object] = []
    for line in result.stdout.splitlines():
        with contextlib.suppress(ValueError):
            answers.append(json.loads(line))
    hello = answers[0] if answers else None
    parsed = answers[1] if len(answers) > 1 else None
    ok = (
        result.returncode == 0
        and isinstance(hello, dict)
        and hello.get("version") == env.version
        and isinstance(parsed, dict)
        and parsed.get("ok") is True
        and parsed.get("namespace", {}).get("max_model_len") == 64
    )
    if not ok:
        raise BuildError(
            f"vllm {env.version}: the oracle worker check failed (exit {result.returncode}); "
            f"answers={answers!r}\n" + result.stderr[-4000:]
        )
    log(f"worker check passed: {hello}")


def ensure(version: str, *, force: bool = False) -> OracleEnv:
    """Make sure the oracle for ``version`` exists and return where it lives."""
    base = ensure_base(force=force)
    copy = ensure_vllm(version, base=base, force=force)
    return OracleEnv(version=version, python=venv_python(base), vllm_copy=copy)


def prune() -> list[Path]:
    """Delete base venvs with another key and copies of unsupported releases."""
    root = cache_root()
    keep = {base_dir().name, *(vllm_copy_dir(v).name for v in SUPPORTED_VERSIONS)}
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for entry in sorted(root.iterdir()):
        if not entry.is_dir() or entry.name in keep:
            continue
        if entry.name.startswith(("base-", "vllm-", ".base-", ".vllm-", ".download-")):
            with locked(entry):
                shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--versions", nargs="+", metavar="X.Y.Z", help="releases to build")
    which.add_argument("--all", action="store_true", help="every supported release")
    which.add_argument(
        "--prune",
        action="store_true",
        help="delete cached environments that no current key or supported release uses",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument(
        "--print-env",
        action="store_true",
        help="print one JSON line per release with the python and PYTHONPATH",
    )
    args = parser.parse_args(argv)
    if args.prune:
        for path in prune():
            log(f"removed {path}")
        return 0
    versions = list(SUPPORTED_VERSIONS) if args.all else list(args.versions)
    unknown = [v for v in versions if v not in SUPPORTED_VERSIONS]
    if unknown:
        parser.error(f"unsupported vLLM version(s) {' '.join(unknown)}; supported: {' '.join(SUPPORTED_VERSIONS)}")
    total = time.monotonic()
    log(f"cache: {cache_root()}")
    try:
        for version in versions:
            with timed(f"oracle for vllm {version}"):
                env = ensure(version, force=args.force)
            if args.print_env:
                print(
                    json.dumps({"version": version, "python": str(env.python), "pythonpath": str(env.vllm_copy)}),
                    flush=True,
                )
    except BuildError as exc:
        log(f"ERROR: {exc}")
        return 1
    log(f"all done in {time.monotonic() - total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
