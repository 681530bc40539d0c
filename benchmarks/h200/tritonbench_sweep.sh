#!/usr/bin/env bash
# TritonBench-G on the H200 through `diagnose bench tritonbench` (issue 28's device run), from a checkout
# carried as .corpus/tritonbench (data/TritonBench_G_v1 is all it reads):
#
#   MODE=score    bash benchmarks/h200/tritonbench_sweep.sh   # the originals against themselves
#   MODE=optimize bash benchmarks/h200/tritonbench_sweep.sh   # the agent on each original, compile baseline
#
# JOBS entries at a time share the device (timing holds it alone); BUDGET candidates and WALL seconds per
# entry (optimize); SEEDS (default 2); FILTER (default TritonBench_G); STORE: an earlier call's store to go
# on from (copied, never written); START_WITHIN: no entry starts later, so that LIMIT (default 560) kills
# none. Returns the store, its report (md and json), and (optimize) one tar of every run's report.json.
# Run with the carried wheels on PYTHONPATH (see benchmarks/h200/check_proton_optimize.sh).
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache
mode=${MODE:-score} d="python3 -m diagnose.cli" store="$OUT/tritonbench-$mode.sqlite"
[ -n "${STORE:-}" ] && cp "$STORE" "$store"
extra="--seeds ${SEEDS:-2}${START_WITHIN:+ --start-within $START_WITHIN}"
[ "$mode" = optimize ] && extra="$extra --max-candidates ${BUDGET:-3} --max-wall ${WALL:-90}"
[ "$mode" = score ] && extra="$extra --no-compile"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "=== $d bench tritonbench .corpus/tritonbench --filter ${FILTER:-TritonBench_G} --mode $mode --device cuda --jobs ${JOBS:-6} $extra"
  /usr/bin/time -f "wall %e s" timeout "${LIMIT:-560}" $d bench tritonbench .corpus/tritonbench \
    --filter "${FILTER:-TritonBench_G}" --mode "$mode" --device cuda --jobs "${JOBS:-6}" $extra --store "$store"
  $d bench report --mode "$mode" --store "$store" --format md --out "$OUT/tritonbench-$mode.md"
  $d bench report --mode "$mode" --store "$store" --format json --out "$OUT/tritonbench-$mode.json"
  if [ "$mode" = optimize ]; then
    tar czf "$OUT/tritonbench-runs.tgz" --exclude=checkpoints.sqlite --exclude='*.html' -C "$OUT" \
      "tritonbench-$mode.runs" -C "$DIAGNOSE_CACHE_DIR" runs 2>/dev/null
    rm -rf "$OUT/tritonbench-$mode.runs"
  fi
} > "$OUT/tritonbench-$mode.log" 2>&1
tail -c 3000 "$OUT/tritonbench-$mode.log"
