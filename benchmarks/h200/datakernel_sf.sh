#!/usr/bin/env bash
# Issue 29's device run: DataKernelBench at scale factor SF (default 10) on one GPU, from data generated on
# the device machine (DuckDB's dbgen and Parquet: SF 1 took 11 s on the 2-core VM, SF 10 73 s on an H100's 16-core host) into /tmp/dk.
#
#   bash benchmarks/h200/datakernel_sf.sh                       # score, core then full, compile baseline
#   MODE=optimize KINDS=core FILTER=q06 bash benchmarks/h200/datakernel_sf.sh
#   STREAM_ROWS=15000000 KINDS= bash benchmarks/h200/datakernel_sf.sh   # the out-of-core run only (4+ partitions)
#
# Carry .whl and .whl-dk (duckdb, its tpch extension, dask, pandas and theirs: 54 MB together). Each kind's
# sweep gets LIMIT seconds (default 240) and starts no entry after START_WITHIN (default LIMIT - 90), so rows
# land; the stores and reports come back. Data live in /tmp/dk for as long as the machine stays warm. Each worker
# may use MEM GiB of host memory (default 40: at SF 10 Q1's reference needs more than the usual 16).
# Tried on the CPU at SF 0.01 (DEVICE=cpu SITE=/tmp/none OUT=/tmp/o SF=0.01 KINDS=core FILTER=q06
# STREAM_ROWS=16384, the venv first on PATH): validate, score and 4-partition stream in 20 s.
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache DIAGNOSE_DATAKERNEL_DIR=/tmp/dk
WHEELS=".whl/*.whl .whl-dk/*.whl .whl-dk/pandas/*.whl" . benchmarks/h200/site.sh  # and bytecode (the image has none)
d="python3 -m diagnose.cli" sf=${SF:-10} mode=${MODE:-score} limit=${LIMIT:-240}
extra="--sf $sf --device ${DEVICE:-cuda} --jobs ${JOBS:-2} --seeds ${SEEDS:-2} --start-within ${START_WITHIN:-$((limit - 90))} --memory-limit ${MEM:-40}"
[ -n "${FILTER:-}" ] && extra="$extra --filter $FILTER"
[ "$mode" = optimize ] && extra="$extra --max-candidates ${BUDGET:-3} --max-wall ${WALL:-120}"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton, duckdb; print('torch', torch.__version__, 'triton', triton.__version__, 'duckdb', duckdb.__version__)"
  echo "=== data: $d bench datakernel --mode validate --sf $sf --filter q06 (generates SF $sf once)"
  /usr/bin/time -f "wall %e s" $d bench datakernel --mode validate --sf "$sf" --filter q06
  for kind in ${KINDS-core full}; do
    echo "=== $d bench datakernel --mode $mode --kind $kind $extra"
    /usr/bin/time -f "wall %e s" timeout "$limit" $d bench datakernel --mode "$mode" --kind "$kind" $extra \
      --store "$OUT/dk-$mode-$kind.sqlite"
    $d bench report --mode "$mode" --store "$OUT/dk-$mode-$kind.sqlite" --format md --out "$OUT/dk-$mode-$kind.md"
    $d bench report --mode "$mode" --store "$OUT/dk-$mode-$kind.sqlite" --format json --out "$OUT/dk-$mode-$kind.json"
  done
  if [ -n "${STREAM_ROWS:-}" ]; then
    echo "=== $d bench datakernel --mode stream --sf $sf --partition-rows $STREAM_ROWS"
    /usr/bin/time -f "wall %e s" timeout "$limit" $d bench datakernel --mode stream --sf "$sf" --device "${DEVICE:-cuda}" --partition-rows "$STREAM_ROWS"
  fi
} > "$OUT/datakernel.log" 2>&1
tail -c 4000 "$OUT/datakernel.log"
