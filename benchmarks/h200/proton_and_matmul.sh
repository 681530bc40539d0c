#!/usr/bin/env bash
# One short H200 call (the session had 277 s of device time left): Proton on the softmax example
# (its hatchet tree comes back as a parser fixture), then `diagnose rewrite` on the matmul example,
# verified and timed on the device. Everything it prints goes to $OUT/log.txt.
# Run on the device machine from the repository root, after installing the carried wheels
# (libcst, platformdirs) into /tmp/site:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
#   PYTHONPATH=/tmp/site:$PWD bash benchmarks/h200/proton_and_matmul.sh
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton, libcst; print('torch', torch.__version__, 'triton', triton.__version__, 'libcst', libcst.__version__)"
  echo "=== diagnose profile examples/softmax.py --device cuda --proton"
  /usr/bin/time -f "wall %e s" timeout 80 python3 -m diagnose.cli profile examples/softmax.py --device cuda --proton \
    --group rows16384_cols4096_fp32 --plot-dir /tmp/proton_softmax
  cp /tmp/proton_softmax/proton/proton.hatchet "$OUT/h200_softmax.hatchet" 2>/dev/null || echo "no hatchet file"
  echo "=== diagnose rewrite examples/matmul.py --device cuda --seeds 2 --no-compile"
  /usr/bin/time -f "wall %e s" timeout 150 python3 -m diagnose.cli rewrite examples/matmul.py --device cuda \
    --seeds 2 --no-compile
  cp examples/matmul.diagnose.py "$OUT/" 2>/dev/null
} > "$OUT/log.txt" 2>&1
tail -c 8000 "$OUT/log.txt"
