#!/usr/bin/env bash
# `diagnose optimize` on the H200 for the given tasks (example names, or task paths such as
# benchmarks/npukernel/level3/attention.py; default: vector_add softmax layernorm), each verified and
# timed on the device; reports come back as $OUT/optimize_<name>.json (seven at most: $OUT returns
# eight files and the log is one; the JSON is the source of truth). BUDGET (candidates) and
# WALL (seconds per run) set the agent's budget; SEEDS (default 3) input sets per group, NO_COMPILE=1
# no torch.compile baseline.
# Run with the carried wheels on PYTHONPATH (see benchmarks/h200/check_proton_optimize.sh).
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache
budget=${BUDGET:-3} wall=${WALL:-160} extra="--seeds ${SEEDS:-3}${NO_COMPILE:+ --no-compile}"
{
  for t in ${@:-vector_add softmax layernorm}; do
    case "$t" in *.py) task=$t ;; *) task=examples/$t.py ;; esac
    name=$(basename "$task" .py)
    echo "=== diagnose optimize $task --device cuda --max-candidates $budget --max-wall $wall $extra"
    /usr/bin/time -f "wall %e s" timeout $((wall + 90)) python3 -m diagnose.cli optimize "$task" --device cuda \
      --max-candidates "$budget" --max-wall "$wall" $extra --quiet
    run=$(ls -td /tmp/diagnose-cache/runs/* 2>/dev/null | head -1)
    [ -n "$run" ] && cp "$run/report.json" "$OUT/optimize_$name.json"
  done
} > "$OUT/log.txt" 2>&1
tail -c 9000 "$OUT/log.txt"
