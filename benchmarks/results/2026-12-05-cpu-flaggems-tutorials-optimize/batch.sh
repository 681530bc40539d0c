#!/bin/bash
# usage: batch.sh TAG file...
TAG=$1; shift
OUT=/tmp/h26/$TAG; mkdir -p $OUT
cd /tmp/rcb/src/flaggems
for f in "$@"; do
  n=$(basename $f .py)
  s=$(date +%s)
  GEMS_VENDOR=nvidia PYTHONPATH=src DIAGNOSE_CACHE_DIR=/tmp/h26/cache-$TAG PYTHONDONTWRITEBYTECODE=1 timeout 840 /work/main/.venv/bin/python -m diagnose.cli optimize $f --launches .diagnose/launches --max-candidates 3 --seeds 2 --max-wall 240 --device cpu > $OUT/$n.out 2> $OUT/$n.err
  rc=$?
  e=$(date +%s)
  rep=$(grep -o "report \S*report.json" $OUT/$n.out | head -1 | cut -d' ' -f2)
  summ=$(/work/main/.venv/bin/python - "$rep" <<'PY'
import json,sys
p=sys.argv[1]
if not p: print("no-report"); sys.exit()
d=json.load(open(p)); c=d.get("candidates",[])
print(f"proposed={len(c)} verified={sum(1 for x in c if (x.get('verdict') or {}).get('passed'))}")
PY
)
  base=$(grep -o "verify the task as given: passed=[A-Za-z]*" $OUT/$n.err | head -1)
  err=$(grep "^diagnose: error" $OUT/$n.err | head -1 | cut -c1-300)
  echo "$f rc=$rc secs=$((e-s)) $base $summ $err" >> $OUT/summary.txt
done
echo DONE >> $OUT/summary.txt
