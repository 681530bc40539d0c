#!/usr/bin/env bash
# First H200 call of 2026-12-02 (night): where `check` spends its time (per harness step, plus raw
# file and draw speeds of that machine), Proton on the softmax example (its hatchet tree comes back as
# a parser fixture), then `diagnose optimize` on the matmul example, verified and timed on the device.
# Run on the device machine from the repository root, with the carried wheels (.whl):
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
#   PYTHONPATH=/tmp/site:$PWD bash benchmarks/h200/check_proton_optimize.sh
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton, libcst, langgraph, langgraph.checkpoint.sqlite; print('torch', torch.__version__, 'triton', triton.__version__, 'libcst', libcst.__version__)"
  df -h /tmp /dev/shm | cat
  python3 - <<'PY'
import time, torch
def t(label, f):
    s = time.perf_counter(); f(); print(f"{label:40s} {time.perf_counter() - s:7.2f} s")
x = None
def draw():
    global x
    g = torch.Generator().manual_seed(0); x = torch.randn(2**28, generator=g)
t("randn 2^28 fp32 on CPU", draw)
for d in ("/tmp", "/dev/shm"):
    t(f"torch.save 1 GiB to {d}", lambda: torch.save([x], f"{d}/probe.pt"))
    t(f"torch.load 1 GiB from {d}", lambda: torch.load(f"{d}/probe.pt", weights_only=True))
t("H2D 1 GiB (pageable)", lambda: (x.to("cuda"), torch.cuda.synchronize()))
y = x.to("cuda")
t("D2H 1 GiB (pageable)", lambda: y.cpu())
PY
  for t in vector_add softmax; do
    echo "=== diagnose check examples/$t.py --device cuda --seeds 2"
    /usr/bin/time -f "wall %e s" timeout 200 python3 -m diagnose.cli check "examples/$t.py" --device cuda --seeds 2 \
      --memory-limit 48 --out "$OUT/check_$t.json"
  done
  echo "=== diagnose profile examples/softmax.py --device cuda --proton"
  /usr/bin/time -f "wall %e s" timeout 80 python3 -m diagnose.cli profile examples/softmax.py --device cuda --proton \
    --group rows16384_cols4096_fp32 --plot-dir /tmp/proton_softmax
  cp /tmp/proton_softmax/proton/proton.hatchet "$OUT/h200_softmax.hatchet" 2>/dev/null || echo "no hatchet file"
  echo "=== diagnose optimize examples/matmul.py --device cuda --max-candidates 4 --max-wall 220"
  /usr/bin/time -f "wall %e s" timeout 260 python3 -m diagnose.cli optimize examples/matmul.py --device cuda \
    --max-candidates 4 --max-wall 220 --quiet
  run=$(ls -td /tmp/diagnose-cache/runs/* 2>/dev/null | head -1); echo "run folder: $run"
  [ -n "$run" ] && cp "$run/report.json" "$OUT/optimize_matmul.json" && cp "$run/report.md" "$OUT/optimize_matmul.md"
  cp examples/matmul.optimized.py "$OUT/" 2>/dev/null
} > "$OUT/log.txt" 2>&1
tail -c 9000 "$OUT/log.txt"
