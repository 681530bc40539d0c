#!/usr/bin/env bash
# `diagnose optimize` on the H200 for the given examples (default: vector_add softmax layernorm), each
# verified and timed on the device; reports come back as $OUT/optimize_<name>.{json,md}.
# Run with the carried wheels on PYTHONPATH (see h200_session3_a.sh).
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache
budget=${BUDGET:-3} wall=${WALL:-160}
{
  for t in ${@:-vector_add softmax layernorm}; do
    echo "=== diagnose optimize examples/$t.py --device cuda --max-candidates $budget --max-wall $wall"
    before=$(ls /tmp/diagnose-cache/runs 2>/dev/null)
    /usr/bin/time -f "wall %e s" timeout $((wall + 40)) python3 -m diagnose.cli optimize "examples/$t.py" --device cuda \
      --max-candidates "$budget" --max-wall "$wall" --quiet
    run=$(ls -td /tmp/diagnose-cache/runs/* 2>/dev/null | head -1)
    [ -n "$run" ] && cp "$run/report.json" "$OUT/optimize_$t.json" && cp "$run/report.md" "$OUT/optimize_$t.md"
  done
} > "$OUT/log.txt" 2>&1
tail -c 9000 "$OUT/log.txt"
