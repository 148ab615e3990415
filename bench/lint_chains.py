"""Time `profilekit lint` on long `extends` chains and cycles as a whole cold process (issue 12, hostile input).

    python bench/lint_chains.py [--runs 3] [--command "profilekit"] [--only chain-5000-none] [--out FILE]

Each workload is a repository of n layers, each deployable (none is abstract): in a *chain* c0 extends c1
extends ... c{n-1}, which sets serve.model; in a *cycle* c{n-1} extends c0 again (the hostile corpus's
`chain`, tests/hostile/test_load.py). Every run is a new process with `--no-cache`, so the figures are the
lint's work, not a replay of the last one. `--command` is the profilekit to time (e.g. an older checkout:
`--command "env PYTHONPATH=/tmp/old/src python -m profilekit"`). Prints a markdown table (median, min, max wall
time) and writes it to --out when given.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# (shape, layers, combinations)
WORKLOADS: tuple[tuple[str, int, str], ...] = (
    ("chain", 1000, "none"),
    ("chain", 2000, "none"),
    ("chain", 5000, "none"),
    ("chain", 10000, "none"),
    ("chain", 200, "pairs"),
    ("chain", 1000, "pairs"),
    ("cycle", 1000, "none"),
    ("cycle", 5000, "none"),
    ("cycle", 5000, "pairs"),
    ("cycle", 10000, "pairs"),
)


def generate(root: Path, shape: str, layers: int) -> None:
    (root / "profiles").mkdir(parents=True)
    (root / "profilekit.toml").write_text('[vllm]\nversion = "0.33.0"\n', encoding="utf-8")
    for i in range(layers):
        parent = f"c{i + 1}" if i + 1 < layers else ("c0" if shape == "cycle" else "")
        extends = f'[layer]\nextends = ["{parent}"]\n' if parent else ""
        model = '[serve]\nmodel = "m"\n' if i == layers - 1 else ""
        (root / "profiles" / f"c{i}.toml").write_text(extends + model, encoding="utf-8")


def _time(cmd: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{shlex.join(cmd)} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    beside = Path(sys.executable).with_name("profilekit")  # the console script of this interpreter's install
    parser.add_argument("--command", default=str(beside) if beside.exists() else shutil.which("profilekit") or "")
    parser.add_argument("--only", action="append", default=[], help="a workload as shape-layers-combinations")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = ["| shape | layers | combinations | median s | min s | max s |", "|---|---:|---|---:|---:|---:|"]
    with tempfile.TemporaryDirectory(prefix="profilekit-lint-chains-") as tmp:
        for shape, layers, mode in WORKLOADS:
            if args.only and f"{shape}-{layers}-{mode}" not in args.only:
                continue
            repo = Path(tmp) / f"{shape}{layers}"
            if not repo.exists():
                generate(repo, shape, layers)
            cmd = [*shlex.split(args.command), "--repo", str(repo), "lint", "--no-cache", "--combinations", mode]
            times = _time(cmd, args.runs)
            median, low, high = statistics.median(times), min(times), max(times)
            rows.append(f"| {shape} | {layers} | {mode} | {median:.2f} | {low:.2f} | {high:.2f} |")
            print(rows[-1], flush=True)
    cpus = subprocess.run(["nproc"], capture_output=True, text=True, check=False).stdout.strip()
    head = f"`profilekit lint --no-cache`, cold process, {args.runs} runs, {cpus} CPUs, python {sys.version.split()[0]}"
    table = "\n".join([head, "", *rows]) + "\n"
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
