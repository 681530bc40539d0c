#!/usr/bin/env bash
# Capture a real project's Triton launches from its own tests on the GPU, then optimize its kernel modules
# as they are (benchmarks/optimize_modules.py), several at a time, the device shared through one lock.
#
#   benchmarks/h200/real_modules.sh PROJECT OUT "PYTEST ARGS" MODULE...
#
# Environment: CAPTURE_S (capture time limit, default 240; 0 skips the capture and reuses PROJECT's launches),
# PYTEST_K (a -k expression for the tests), JOBS (3), BUDGET (candidates per module, 3), WALL (seconds per
# module, 150). Launches captured before (carried in PROJECT/.diagnose/launches) are kept and added to.
# OUT gets: capture.txt, launches.tgz, optimize.txt, optimize.json, patches.tgz, runs.tgz (each run's report).
# JOBS > 1 shares the host: timing holds the GPU alone, not the CPU, and a host function of several short
# launches (under ~0.3 ms, as Liger's backward passes) then measures the other jobs' compiles
# (benchmarks/results/2026-12-04-h200-liger-row-loops): use JOBS=1 for such modules.
set -uo pipefail
project=$(cd "$1" && pwd); out=$2; tests=$3; shift 3
mkdir -p "$out"
if [ "${CAPTURE_S:-240}" != 0 ]; then
  python3 -m diagnose.cli capture --device cuda --project "$project" --timeout "${CAPTURE_S:-240}" -- \
    python3 -m pytest -q -p no:cacheprovider $tests ${PYTEST_K:+-k "$PYTEST_K"} > "$out/capture.txt" 2>&1
  tail -5 "$out/capture.txt"
fi
tar -C "$project" -czf "$out/launches.tgz" .diagnose/launches
modules=(); for m in "$@"; do modules+=("$project/$m"); done
python3 benchmarks/optimize_modules.py --project "$project" --launches "$project/.diagnose/launches" --device cuda \
  --jobs "${JOBS:-3}" --max-candidates "${BUDGET:-3}" --max-wall "${WALL:-150}" --out "$out/optimize.json" \
  "${modules[@]}" 2>&1 | tee "$out/optimize.txt" | tail -30
(cd "$project" && find . -name '*.diagnose.patch' -print0 | tar --null -czf "$out/patches.tgz" -T -)
runs=$(python3 -c "import json,sys; print(' '.join(r['run'] for r in json.load(open(sys.argv[1])) if r.get('run')))" "$out/optimize.json")
root=$(python3 -c "from diagnose import knobs; print(knobs.runs_root())")
(cd "$root" && tar -czf "$out/runs.tgz" $(for r in $runs; do echo "$r/report.json $r/report.md"; done) 2>/dev/null)
