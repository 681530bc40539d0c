#!/usr/bin/env bash
# The npukernel score sweep on the H200, entries four at a time sharing the device (`--jobs 4`: timing
# loops hold the device lock alone), against eager and torch.compile, two seeds. Resumable: the store
# given as $1 is copied into $OUT, swept for at most $2 seconds (default 420), reported, and returned;
# pass the returned store again to go on. GPU tests first when GPU_TESTS=1.
# Run with the carried wheels on PYTHONPATH (see benchmarks/h200/check_proton_optimize.sh).
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache
store=$OUT/npukernel.sqlite seconds=${2:-420}
[ -f "$1" ] && cp "$1" "$store"
d="python3 -m diagnose.cli"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  if [ "${GPU_TESTS:-0}" = 1 ]; then
    echo "=== python3 -m pytest -m gpu tests/gpu/test_harness_on_gpu.py"
    /usr/bin/time -f "wall %e s" timeout 240 python3 -m pytest -q -m gpu tests/gpu/test_harness_on_gpu.py -p no:cacheprovider
  fi
  echo "=== $d bench benchmarks/npukernel --device cuda --jobs 4 --seeds 2 --store npukernel.sqlite (at most $seconds s)"
  /usr/bin/time -f "wall %e s" timeout "$seconds" $d bench benchmarks/npukernel --device cuda --jobs 4 --seeds 2 \
    --store "$store"
  $d bench report --store "$store" --format md --out "$OUT/npukernel.md"
  $d bench report --store "$store" --format json --out "$OUT/npukernel.json"
} > "$OUT/log.txt" 2>&1
tail -c 6000 "$OUT/log.txt"
