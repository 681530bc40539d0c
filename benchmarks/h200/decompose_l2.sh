#!/usr/bin/env bash
# Issue 30's KernelBench level-2 sweep on the device, resumable: carry .whl, the level-2 problems (a copy of
# KernelBench/level2/*.py in .corpus/kernelbench-l2) and the last call's results (.scratch/dec-l2, empty the
# first time); copy $OUT/dec back into .scratch/dec-l2 after each call (results.jsonl: problems done are skipped).
#
#   JOBS=6 PLIMIT=250 START=260 bash benchmarks/h200/decompose_l2.sh
#
# JOBS problems at once (each with cores / JOBS threads), PLIMIT seconds per problem, no problem started after
# START seconds, so the call ends inside the device's 600 s.
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache
. benchmarks/h200/site.sh  # the wheels, and bytecode for every package (the image has none)
mkdir -p "$OUT/dec" && cp -r .scratch/dec-l2/. "$OUT/dec/" 2>/dev/null
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  /usr/bin/time -f "wall %e s" python3 benchmarks/decompose_kernelbench.py .corpus/kernelbench-l2 --first 100 \
    --out "$OUT/dec" --device cuda --jobs "${JOBS:-6}" --timeout 200 --problem-limit "${PLIMIT:-250}" \
    --start-within "${START:-260}" --fuse-budget 1
  python3 benchmarks/decompose_kernelbench.py .corpus/kernelbench-l2 --first 100 --out "$OUT/dec" --summary-only \
    --markdown "$OUT/summary.md"
} > "$OUT/log.txt" 2>&1
rm -rf "$OUT/dec/rows" "$OUT/dec/work" 2>/dev/null
tail -c 5000 "$OUT/log.txt"
