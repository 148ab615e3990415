#!/usr/bin/env bash
# Cold-start benchmark of profilekit beside Hydra and the other layered-config tools, using the
# shared runner (../shared/bench/bench.py). Builds its own venv with the measured versions of the
# other tools plus this checkout of profilekit, then prints a markdown table (and keeps raw JSON).
#   bash bench/run.sh [RUNS]      # default 20 runs per workload; then bench/startup.py (both cache states)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
shared=${PROFILEKIT_SHARED:-$(dirname "$repo")/shared}/bench
venv=${PROFILEKIT_BENCH_VENV:-$HOME/.cache/profilekit-bench/venv}
runs=${1:-20}
[ -f "$shared/bench.py" ] || { echo "bench/run.sh: no $shared/bench.py (set PROFILEKIT_SHARED)" >&2; exit 2; }
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r "$shared/requirements-bench.txt"
fi
"$venv/bin/pip" install -q "$repo"   # non-editable: measure what users install
pk="$venv/bin/profilekit --repo $repo"
cd "$shared"
"$venv/bin/python" bench.py --runs "$runs" --import-runs 3 \
  --only floor --only "hydra" --only "omegaconf" --only profilekit \
  --extra "profilekit show=$pk show nemotron-replayssm+site/h100" \
  --extra-raw "profilekit render --print=$pk render nemotron-replayssm --print" \
  --extra-raw "profilekit check=$pk check nemotron-replayssm" \
  --extra-raw "profilekit lint=$pk lint" \
  --extra-raw "profilekit --help=$venv/bin/profilekit --help" \
  --json "$here/results.json"

# Both cache states beside Hydra, interleaved rounds, ratios to Hydra's compose (the speed issue's targets):
# writes bench/startup-results.md and .json.
cd "$repo"
"$venv/bin/python" -m compileall -q "$("$venv/bin/python" -c 'import os, profilekit; print(os.path.dirname(profilekit.__file__))')"
"$venv/bin/python" bench/startup.py --python "$venv/bin/python" --shared "$shared" --runs "$runs" \
  $(command -v valgrind >/dev/null && echo --instructions)
