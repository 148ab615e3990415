"""Start-up of profilekit beside Hydra, OmegaConf and `python -c pass`, both cache states, one interleaved run.

    python bench/startup.py --python VENV/bin/python [--runs 20] [--warmup 2] [--out bench/startup-results.md]

`bash bench/run.sh` builds VENV (hydra-core and omegaconf at the versions of ../shared/bench/requirements-bench.txt,
this checkout of profilekit installed non-editable, as users install it) and calls this script.

Every workload is a new process. The runs are interleaved: each round runs every workload once, in an order
shuffled per round (seeded), so a slow moment of the machine falls on all of them alike; ratios are of medians
to Hydra's compose API in the same run. Cache states:

- cold: every run gets a new, empty cache folder (`PROFILEKIT_CACHE_DIR`), so it parses, validates, composes,
  checks and writes its cache entry as a first run on a new machine does;
- warm: one cache folder, filled by the warm-up rounds; the inputs do not change between runs.

The incremental lint workload changes one layer of a generated 1,000-layer repository before every run
(alternating a value, so each run sees a real change) with the cache warm from the previous run.
With `--instructions`, each workload runs once more under valgrind's callgrind and the table also gives the
instructions it executed, and their ratio to Hydra's: a measure a busy machine does not move.
Writes a markdown table with the targets of the speed issue, and the raw numbers as JSON beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from lint_repo import generate  # noqa: E402  (bench scripts run from any folder)

HYDRA = "hydra compose API (3 layers)"


@dataclass
class Workload:
    name: str
    argv: list[str]
    cache: str | None = None  # "cold", "warm" or None (not profilekit)
    target: float | None = None  # ratio to Hydra's compose median
    cwd: Path = REPO
    before: Path | None = None  # a layer file to change before each run (incremental lint)
    target_s: float | None = None
    walls: list[float] = field(default_factory=list)
    instructions: int | None = None  # one run under callgrind (--instructions)


def workloads(python: str, shared: Path, big_repo: Path) -> list[Workload]:
    pk = [str(Path(python).with_name("profilekit"))]
    repo = ["--repo", str(REPO)]
    out = tempfile.mkdtemp(prefix="pk-bench-out-")
    profilekit = {
        "--version": ([*pk, "--version"], {"cold": 0.15}),
        "--help": ([*pk, "--help"], {"cold": 0.3}),
        "check nemotron-replayssm": ([*pk, *repo, "check", "nemotron-replayssm"], {"cold": 0.5, "warm": 0.25}),
        "render nemotron-replayssm": (
            [*pk, *repo, "render", "nemotron-replayssm", "--out", out],
            {"cold": 0.6, "warm": 0.25},
        ),
        "show nemotron-replayssm+site/h100": ([*pk, *repo, "show", "nemotron-replayssm+site/h100"], {}),
        "lint (example repository)": ([*pk, *repo, "lint"], {"warm": 0.3}),
    }
    found: list[Workload] = [
        Workload("python -c pass", [python, "-c", "pass"]),
        Workload("omegaconf merge (3 layers)", [python, str(shared / "omegaconf_merge.py")], cwd=shared),
        Workload(HYDRA, [python, str(shared / "hydra_compose.py")], cwd=shared),
    ]
    for name, (argv, targets) in profilekit.items():
        states = ("cold",) if name in ("--version", "--help") else ("cold", "warm")
        found += [Workload(f"profilekit {name}", argv, state, targets.get(state)) for state in states]
    found.append(
        Workload(
            "profilekit lint, 1,000 layers, one changed",
            [*pk, "--repo", str(big_repo), "lint"],
            "warm",
            before=big_repo / "profiles" / "deploy" / "d7.toml",
            target_s=0.3,
        )
    )
    return found


def _change(path: Path, round_: int) -> None:
    """Set the layer's `max_num_seqs` to another value each round: a real edit the cache must notice."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    edited = [f"max_num_seqs = {129 + round_ % 2}\n" if line.startswith("max_num_seqs =") else line for line in lines]
    if not any(line.startswith("max_num_seqs =") for line in lines):
        raise SystemExit(f"{path}: no `max_num_seqs = ` line to change")
    path.write_text("".join(edited), encoding="utf-8")
    # dated a second ago, as an edit made before running lint is: lint does not store what it read of a file
    # dated within its racy window (it may have changed while being read)
    stamp = time.time() - 1
    os.utime(path, (stamp, stamp))


def _run(work: Workload, env: dict[str, str], round_: int) -> float:
    if work.before is not None:
        _change(work.before, round_)
    start = time.perf_counter()
    done = subprocess.run(
        work.argv, check=False, cwd=work.cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1) or (work.cache is None and done.returncode):
        raise SystemExit(f"{work.name} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return elapsed


def _env(work: Workload, warm_dir: str, big_dir: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure installed bytecode, not Python's compiler
    env["HYDRA_FULL_ERROR"] = "1"
    if work.cache == "cold":
        env["PROFILEKIT_CACHE_DIR"] = tempfile.mkdtemp(prefix="pk-bench-cold-")
    elif work.cache == "warm":
        env["PROFILEKIT_CACHE_DIR"] = big_dir if work.before is not None else warm_dir
    return env


_dirs = (tempfile.mkdtemp(prefix="pk-bench-warm-"), tempfile.mkdtemp(prefix="pk-bench-big-"))


def measure(works: list[Workload], *, runs: int, warmup: int, seed: int) -> None:
    warm_dir, big_dir = _dirs
    shuffle = random.Random(seed)
    for round_ in range(warmup + runs):
        order = works[:]
        shuffle.shuffle(order)
        for work in order:
            elapsed = _run(work, _env(work, warm_dir, big_dir), round_)
            if round_ >= warmup:
                work.walls.append(elapsed * 1000)


def count_instructions(works: list[Workload], *, round_: int) -> None:
    """One more run of each workload under valgrind's callgrind: instructions executed, whatever the load.

    Run after `measure`, so the warm workloads find the cache that the timed rounds left.
    """
    warm_dir, big_dir = _dirs
    for work in works:
        if work.before is not None:
            _change(work.before, round_)
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *work.argv]
        done = subprocess.run(
            argv, cwd=work.cwd, env=_env(work, warm_dir, big_dir), capture_output=True, text=True, check=False
        )
        refs = [line for line in done.stderr.splitlines() if "I   refs:" in line or "Collected :" in line]
        if not refs:
            raise SystemExit(f"{work.name}: valgrind printed no instruction count: {done.stderr[-400:]}")
        work.instructions = int(refs[-1].rsplit(maxsplit=1)[-1].replace(",", ""))


def table(works: list[Workload], *, header: str) -> str:
    hydra_work = next(w for w in works if w.name == HYDRA)
    hydra = statistics.median(hydra_work.walls)
    counted = hydra_work.instructions is not None
    extra = " instructions (M) | vs Hydra, by instructions |" if counted else ""
    lines = [
        header,
        "",
        "| workload | cache | median ms | min ms | vs Hydra compose | target | met |" + extra,
        "| --- | --- | ---: | ---: | ---: | ---: | --- |" + (" ---: | ---: |" if counted else ""),
    ]
    for w in works:
        median = statistics.median(w.walls)
        ratio = median / hydra
        if w.target is not None:
            target, met = f"≤ {w.target:.2f}×", "yes" if ratio <= w.target else "**no**"
        elif w.target_s is not None:
            target, met = f"< {w.target_s * 1000:.0f} ms", "yes" if median < w.target_s * 1000 else "**no**"
        else:
            target, met = "", ""
        row = f"| {w.name} | {w.cache or ''} | {median:.0f} | {min(w.walls):.0f} | {ratio:.2f}× | {target} | {met} |"
        if counted and w.instructions is not None and hydra_work.instructions:
            row += f" {w.instructions / 1e6:.0f} | {w.instructions / hydra_work.instructions:.2f}× |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def _versions(python: str) -> str:
    code = (
        "import sys, importlib.metadata as m\n"
        "print(sys.version.split()[0], *(m.version(p) for p in ('hydra-core', 'omegaconf', 'profilekit')))"
    )
    py, hydra, omegaconf, pk = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    return f"python {py}, hydra-core {hydra}, omegaconf {omegaconf}, profilekit {pk}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True, help="interpreter of a venv with hydra-core, omegaconf, profilekit")
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "bench")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=HERE / "startup-results.md")
    parser.add_argument(
        "--instructions", action="store_true", help="also count each workload's instructions once with valgrind"
    )
    args = parser.parse_args()
    if not (args.shared / "hydra_compose.py").is_file():
        parser.error(f"no {args.shared / 'hydra_compose.py'}: pass --shared (the folder of the shared benchmark)")
    with tempfile.TemporaryDirectory(prefix="pk-bench-repo-") as big:
        generate(Path(big), 1000)
        works = workloads(args.python, args.shared, Path(big))
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        measure(works, runs=args.runs, warmup=args.warmup, seed=args.seed)
        if args.instructions:
            count_instructions(works, round_=args.warmup + args.runs)
    load = os.getloadavg()[0]
    header = (
        f"{_versions(args.python)}; {os.cpu_count()} cores; {args.runs} interleaved rounds after {args.warmup} "
        f"warm-up rounds; started {started}, load average {load:.1f} at the end.\n"
        f"Reproduce: `bash bench/run.sh` (or `python bench/startup.py --python VENV/bin/python`)."
    )
    text = table(works, header=header)
    sys.stdout.write(text)
    args.out.write_text(text, encoding="utf-8")
    raw = {
        w.name + (f" ({w.cache})" if w.cache else ""): {"wall_ms": w.walls, "instructions": w.instructions}
        for w in works
    }
    args.out.with_suffix(".json").write_text(json.dumps(raw, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
