#!/bin/bash
# usage: opt.sh TAG CODE_ROOT module...   (one optimize at a time, as real_corpus.py runs it)
tag=$1; code=$2; shift 2
for m in "$@"; do
  cd /tmp/rr/runs && PYTHONPATH=$code:/tmp/rcb/src/liger/src:/tmp/rcb/src/liger PYTHONDONTWRITEBYTECODE=1 \
   DIAGNOSE_CACHE_DIR=/tmp/rr/cache-$tag \
   timeout 900 /work/main/.venv/bin/python -m diagnose.cli optimize /tmp/rcb/src/liger/src/liger_kernel/ops/$m.py \
   --launches /tmp/rcb/src/liger/.diagnose/launches --max-candidates 3 --seeds 2 --max-wall 240 --device cpu \
   > /tmp/rr/opt-$tag-$m.out 2> /tmp/rr/opt-$tag-$m.err
  echo "$m rc=$?" >> /tmp/rr/opt-$tag.done
done
