#!/usr/bin/env bash
# Issue 31's one-GPU comparison: the same npukernel entries scored by the local executor and through Ray
# (a local Ray started on the device machine, one actor holding its one GPU), one entry at a time each,
# against eager (torch.compile left out: the comparison is the executor, and compiling doubles the time).
#
# Ray's cp312 wheel (78 MB for 2.58, 79 MB for 2.60) is over what one device call carries (64 MiB), so it
# travels split in two (`split -b 40000000 ray-V-cp312-cp312-manylinux2014_x86_64.whl ray.part.`, the wheel's
# name in .whl-ray1/NAME): a first call with RAY_PART=1 carries .whl-ray1 (part one and Ray's dependencies)
# and leaves them in /tmp/raypart; a second call, made while the machine is still warm, carries .whl-ray2
# (part two) and .whl, joins the wheel, installs it and runs both sweeps. FILTER picks the entries.
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache
if [ "${RAY_PART:-2}" = 1 ]; then
  mkdir -p /tmp/raypart && cp .whl-ray1/* /tmp/raypart/ && ls -la /tmp/raypart | tail -3
  exit 0
fi
cat /tmp/raypart/ray.part.aa .whl-ray2/ray.part.ab > "/tmp/raypart/$(cat /tmp/raypart/NAME)"
rm -f /tmp/raypart/ray.part.aa /tmp/raypart/NAME
WHEELS="/tmp/raypart/*.whl .whl/*.whl" . benchmarks/h200/site.sh  # and bytecode (the image has none)
d="python3 -m diagnose.cli"
filter=${FILTER:-level1/math_,level1/activation_,level2/norm_}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton, ray; print('torch', torch.__version__, 'triton', triton.__version__, 'ray', ray.__version__)"
  for executor in local ray; do
    echo "=== $d bench benchmarks/npukernel --filter $filter --device cuda --jobs 1 --seeds 2 --no-compile --executor $executor"
    /usr/bin/time -f "wall %e s" timeout "${LIMIT:-240}" $d bench benchmarks/npukernel --filter "$filter" --device cuda \
      --jobs 1 --seeds 2 --no-compile --executor "$executor" --store "$OUT/$executor.sqlite"
    $d bench report --store "$OUT/$executor.sqlite" --format json --out "$OUT/$executor.json"
    $d bench report --store "$OUT/$executor.sqlite" --format md --out "$OUT/$executor.md"
  done
} > "$OUT/log.txt" 2>&1
tail -c 4000 "$OUT/log.txt"
