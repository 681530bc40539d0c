#!/usr/bin/env bash
# Issue 25's device numbers in one call: the gpu-marked harness tests (GPU_TESTS=1, or on an H200), the host's
# comparison speed, and `check` / `optimize` of the examples per phase (benchmarks/phase_times.py).
#
#   GPU_TESTS=1 LIMIT=330 bash benchmarks/h200/harness_phases.sh          # carry .whl
#
# .whl holds the wheels of what `diagnose` imports that the device image lacks (langgraph and its checkpoint
# packages, langchain-core, langsmith and its needs sniffio and distro, libcst, pydantic, ...: see KINDS.md's
# package list). EXAMPLES (default softmax) and LIMIT (seconds for phase_times, default 300) may be set.
# Session 35 on an H100: 23/23 tests in 84 s, compare_speed ~20 s, phase_times of softmax 107 s.
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache
. benchmarks/h200/site.sh  # the wheels, and bytecode for every package (the image has none)
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton, langgraph; print('torch', torch.__version__, 'triton', triton.__version__)"
  # Timings first, on a quiet host: after the gpu tests (session 36) the host's comparisons ran up to 5x slower
  # than on the same kind of machine before them (2^26 fp32 `near` 0.550 s against 0.102 s); what was busy is
  # listed before each timed part.
  echo "=== busiest processes"; ps -eo pid,pcpu,etime,comm --sort=-pcpu | head -6; uptime
  echo "=== compare_speed"
  timeout 60 python3 benchmarks/compare_speed.py --log2 24 26 28
  # The parent maps the workers' files and its comparisons fault the pages in on 16 threads: whether reading
  # them in beats that on this host (check's compare phase was 6-14 s on an H100, session 36).
  echo "=== tensor_io_speed"
  timeout 60 python3 benchmarks/tensor_io_speed.py --gib 1
  echo "=== phase_times ${EXAMPLES:-softmax}"
  /usr/bin/time -f "wall %e s" timeout "${LIMIT:-300}" python3 benchmarks/phase_times.py --device cuda \
    --examples ${EXAMPLES:-softmax} --candidates 4 --jobs --out "$OUT/phases.md"
  if [ -n "${GPU_TESTS:-}" ] || nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    echo "=== gpu tests"
    timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_harness_on_gpu.py -p no:cacheprovider -rA 2>&1 | tail -40
    echo "=== busiest processes after the tests"; ps -eo pid,pcpu,etime,comm --sort=-pcpu | head -6; uptime
  fi
} > "$OUT/log.txt" 2>&1
tail -c 6000 "$OUT/log.txt"
