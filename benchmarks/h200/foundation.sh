#!/usr/bin/env bash
# The foundation issue's device run, on the H200 (device machine; its python3 has torch and triton):
# ceilings, `diagnose check --device cuda` on the four examples, then the gpu-marked tests.
# Everything it prints goes to $OUT/log.txt; JSON reports to $OUT/*.json.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 COLUMNS=160
start=$(date +%s)
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"
  python3 benchmarks/device_ceilings.py --json "$OUT/ceilings.json"
  for t in vector_add softmax layernorm matmul; do
    echo "=== diagnose check examples/$t.py --device cuda --seeds 2"
    /usr/bin/time -f "wall %e s" python3 -m diagnose.cli check "examples/$t.py" --device cuda --seeds 2 \
      --memory-limit 48 --out "$OUT/check_$t.json"
    echo "rc=$?"
  done
  left=$(( 570 - ($(date +%s) - start) ))
  echo "=== gpu tests (${left}s left)"
  [ "$left" -gt 30 ] && timeout "$left" python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -x
} > "$OUT/log.txt" 2>&1
tail -c 6000 "$OUT/log.txt"
