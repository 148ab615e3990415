"""Time `profilekit lint` as a whole cold process on generated repositories (issue 9, speed on large repositories).

    python bench/lint_speed.py [--runs 5] [--profilekit PATH] [--out bench/lint-results.md]

Each workload is a repository from bench/lint_repo.py (same seed, same bytes every time) and one `lint` mode;
every run is a new process with a new, empty cache folder, so the figures include interpreter start-up, imports
and writing the cache, as a CI job pays them.
The package's bytecode is compiled first, as `pip install` does for an installed package: an editable install
under PYTHONDONTWRITEBYTECODE=1 (set on some CI machines) would otherwise recompile every module on every run,
which measures Python's compiler, not profilekit.
Prints a markdown table (median, min, max wall time) with the targets of issue 9, and writes it to --out.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_repo import generate

# (layers, combinations, target seconds or None)
WORKLOADS: tuple[tuple[int, str, float | None], ...] = (
    (50, "none", None),
    (200, "none", None),
    (1000, "none", 0.5),
    (50, "pairs", None),
    (200, "pairs", 1.5),
    (30, "all", 5.0),
)


def _time(cmd: list[str], cwd: Path, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        # a new, empty cache folder each run: a CI job starts with none (with one, every run after the first would
        # be answered from it, and the table would time the cache, not the lint)
        env = {**os.environ, "PROFILEKIT_CACHE_DIR": tempfile.mkdtemp(prefix="profilekit-lint-cache-")}
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        times.append(time.perf_counter() - start)
        shutil.rmtree(env["PROFILEKIT_CACHE_DIR"], ignore_errors=True)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} in {cwd} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return times


def _compile_bytecode(profilekit: str) -> None:
    """Compile the profilekit package the command runs, with the interpreter beside its console script."""
    beside = Path(profilekit).with_name("python")
    python = str(beside) if beside.exists() else sys.executable
    find = "import os, profilekit; print(os.path.dirname(profilekit.__file__))"
    package = subprocess.run([python, "-c", find], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([python, "-m", "compileall", "-q", package], check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    beside = Path(sys.executable).with_name("profilekit")  # the console script of this interpreter's install
    parser.add_argument("--profilekit", default=str(beside) if beside.exists() else shutil.which("profilekit"))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "lint-results.md")
    args = parser.parse_args()
    _compile_bytecode(args.profilekit)
    rows = [
        "| layers | combinations | median s | min s | max s | target s |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory(prefix="profilekit-lint-bench-") as tmp:
        repos: dict[int, Path] = {}
        for layers, mode, target in WORKLOADS:
            if layers not in repos:
                repos[layers] = Path(tmp) / f"repo{layers}"
                generate(repos[layers], layers)
            cmd = [args.profilekit, "lint", "--combinations", mode]
            times = _time(cmd, repos[layers], args.runs)
            goal = "-" if target is None else f"{target:g}"
            rows.append(
                f"| {layers} | {mode} | {statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f} | {goal} |"
            )
            print(rows[-1], flush=True)
    cpus = subprocess.run(["nproc"], capture_output=True, text=True, check=False).stdout.strip()
    head = (
        f"`profilekit lint` cold process (bytecode compiled), medians of {args.runs} runs, {cpus} CPUs, "
        f"python {sys.version.split()[0]}"
    )
    table = "\n".join([head, "", *rows]) + "\n"
    args.out.write_text(table, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
