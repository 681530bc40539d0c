#!/usr/bin/env bash
# `diagnose optimize` on the H200 for several kernels at once: the npukernel entries named by $1
# (comma-separated, as --filter takes them) plus the examples named by $2 (comma-separated, e.g.
# vector_add), copied into one suite folder and swept in optimize mode, four entries at a time sharing
# the device (timing loops hold the device lock alone). BUDGET candidates and WALL seconds per entry.
# SEEDS (default 2) input sets per group in every verification; NO_COMPILE=1 skips the torch.compile
# baseline. STORE: a store of an earlier call to go on from (entries done there are skipped; copied,
# never written). REDO=1 runs the named entries again (a newer rewrite). START_WITHIN: no entry starts later (so that LIMIT kills none). LIMIT (default 545) bounds the whole sweep (the store keeps what finished). DEVICE=cpu tries it on the interpreter. Returns the store, its report, and one tar of every run's report.json (the source of truth).
# Run with the carried wheels on PYTHONPATH (see benchmarks/h200/check_proton_optimize.sh).
export PYTHONUNBUFFERED=1 COLUMNS=160 DIAGNOSE_CACHE_DIR=/tmp/diagnose-cache
device=${DEVICE:-cuda} budget=${BUDGET:-3} wall=${WALL:-200} seeds=${SEEDS:-2} suite=/tmp/optimize_suite d="python3 -m diagnose.cli"
extra="--seeds $seeds${NO_COMPILE:+ --no-compile}${START_WITHIN:+ --start-within $START_WITHIN}${REDO:+ --redo}"
rm -rf "$suite" && mkdir -p "$suite/examples"
[ -n "${STORE:-}" ] && cp "$STORE" "$OUT/optimize.sqlite"
for id in $(python3 -c "from diagnose.bench.suite import load_suite; print(' '.join(e.id for e in load_suite('benchmarks/npukernel', '$1')))"); do
  mkdir -p "$suite/$(dirname "$id")" && cp "benchmarks/npukernel/$id.py" "$suite/$id.py"
done
for name in ${2//,/ }; do cp "examples/$name.py" "$suite/examples/$name.py"; done
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "=== $d bench $suite --mode optimize --device "$device" --jobs ${JOBS:-4} --max-candidates $budget --max-wall $wall $extra"
  find "$suite" -name '*.py' | sort
  /usr/bin/time -f "wall %e s" timeout "${LIMIT:-545}" $d bench "$suite" --mode optimize --device "$device" --jobs "${JOBS:-4}" --max-candidates "$budget" \
    --max-wall "$wall" $extra --store "$OUT/optimize.sqlite"
  $d bench report --mode optimize --store "$OUT/optimize.sqlite" --format md --out "$OUT/optimize.md"
  $d bench report --mode optimize --store "$OUT/optimize.sqlite" --format json --out "$OUT/optimize.json"
  tar czf "$OUT/runs.tgz" --exclude=checkpoints.sqlite --exclude='*.html' -C "$OUT" optimize.runs \
    -C "$DIAGNOSE_CACHE_DIR" runs && echo "runs.tgz: $(tar tzf "$OUT/runs.tgz" | wc -l) files"
  rm -rf "$OUT/optimize.runs"
} > "$OUT/log.txt" 2>&1
tail -c 8000 "$OUT/log.txt"
