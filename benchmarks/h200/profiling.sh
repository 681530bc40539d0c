#!/usr/bin/env bash
# Issue 5's device run on the H200 (device machine; its python3 has torch 2.11 and triton 3.6):
#   1. the ceilings, measured through diagnose/profiling/ceilings.py and its cache (asked twice);
#   2. the launch-configuration variant sweep (benchmarks/profiling_sweep.py), stopping at a deadline;
#   3. `diagnose profile --ncu` (profile_command) on the four examples, each time-boxed.
# Writes $OUT/log.txt (everything), ceilings.json, sweep.json, profile.tgz (plots, profile JSON, ncu
# CSV pages; the binary .ncu-rep left out) and prints a short table last.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 DIAGNOSE_CACHE_DIR=$PWD/.diagnose_cache_h200
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
mkdir -p "$OUT/profile"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch, triton, numpy, matplotlib; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'numpy', numpy.__version__, 'matplotlib', matplotlib.__version__)"
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
  echo "ncu: $NCU"; "$NCU" --version 2>&1 | tail -1
  echo "=== [$(elapsed) s] ceilings"
  timeout 110 python3 benchmarks/profiling_ceilings.py --json "$OUT/ceilings.json" --timeout 100
  echo "=== [$(elapsed) s] sweep"
  timeout $(( 230 - $(elapsed) )) python3 benchmarks/profiling_sweep.py --json "$OUT/sweep.json" --deadline $(( start + 185 ))
  for pair in softmax:rows16384_cols4096_fp32 layernorm:rows8192_cols8000 vector_add:n_2e26_odd matmul:m4096_n4096_k4096_fp16; do
    t=${pair%%:*}; g=${pair#*:}; left=$(( 395 - $(elapsed) ))
    echo "=== [$(elapsed) s] diagnose profile examples/$t.py --ncu --group $g (${left}s left)"
    if [ "$left" -lt 50 ]; then echo "skipped: out of time"; continue; fi
    b=$(( left < 95 ? left : 95 ))
    timeout $b python3 benchmarks/profiling_examples.py "$t" "$g" "$OUT/profile/$t" --ncu --timeout $(( b - 10 )) --ncu-timeout $(( b - 35 ))
    echo "rc=$?"
  done
  echo "=== [$(elapsed) s] done"
} > "$OUT/log.txt" 2>&1
tar --exclude='*.ncu-rep' -czf "$OUT/profile.tgz" -C "$OUT" profile && rm -rf "$OUT/profile"
grep -E "^(===|copy|matmul |launch|first call|device:|ncu:|torch )" "$OUT/log.txt"
grep -E "^(vector_add|softmax|layernorm|matmul)_.* [yN]$|skipped" "$OUT/log.txt"
grep -E "^  (roofline|class|estimate)|^    - |^note:|^\[profile|rc=" "$OUT/log.txt" | cut -c1-230
