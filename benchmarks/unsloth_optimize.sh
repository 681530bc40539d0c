#!/bin/bash
# `diagnose optimize` on unsloth's kernel files on the CPU (Triton's interpreter), as a user would run it
# in a checkout: each file's own tests where it has them, else a call spec written as a user would write
# one (sizes the interpreter runs in seconds). One summary line per file.
#
#     bash benchmarks/unsloth_optimize.sh UNSLOTH_CHECKOUT DEPS_FOLDER OUT_FOLDER
#
# UNSLOTH_CHECKOUT: unslothai/unsloth (the `unsloth/` package at its root), copied first: nothing is
# written into it. DEPS_FOLDER: what unsloth imports besides torch and triton, installed with
# `pip install --no-deps --target DEPS_FOLDER huggingface_hub unsloth_zoo transformers tokenizers
# safetensors regex tqdm filelock fsspec hf_xet psutil datasets multiprocess dill xxhash pyarrow pandas
# trl peft accelerate` (no torch of theirs). `UNSLOTH_ALLOW_CPU=1` is unsloth's own switch for
# importing without a GPU. PER (seconds per file, default 420) bounds each run; ONLY (a file name, e.g.
# `swiglu`) runs that one alone.
set -u
checkout=$(realpath "$1"); deps=$(realpath "$2"); out=$3
here=$(cd "$(dirname "$0")/.." && pwd)
copy=$(mktemp -d)/unsloth; cp -r "$checkout" "$copy"; cd "$copy"
export UNSLOTH_ALLOW_CPU=1 PYTHONPATH=$here:$deps:$copy DIAGNOSE_CACHE_DIR=$copy/.diagnose-cache
mkdir -p "$out"; : > "$out/summary.txt"
while IFS='|' read -r file call; do
  [ -z "$file" ] && continue
  [ -n "${ONLY:-}" ] && [ "$file" != "$ONLY" ] && continue
  name=$(echo "$file" | tr / _)
  if [ -n "$call" ]; then args=(--call "$call"); else args=(); fi
  start=$(date +%s)
  timeout -k 10 "${PER:-420}" python -m diagnose.cli optimize "unsloth/kernels/$file.py" "${args[@]}" \
      --device cpu --max-candidates 3 --seeds 2 --max-wall 360 > "$out/$name.out" 2> "$out/$name.err"
  rc=$?
  last=$(grep -v '^\s*$' "$out/$name.out" | grep -v '^run ' | tail -1 | cut -c1-200)
  why=$(grep -E 'error|propose rewrites' "$out/$name.err" | tail -2 | cut -c1-400 | tr '\n' ' ')
  echo "$file rc=$rc $(( $(date +%s) - start ))s :: $last :: $why" | tee -a "$out/summary.txt"
done <<'LIST'
rms_layernorm|
layernorm|
swiglu|swiglu_fg_kernel(e=f16[2,256,1024], g=f16[2,256,1024])
geglu|geglu_exact_forward_kernel(gate=f16[2,256,1024], up=f16[2,256,1024])
rope_embedding|Fast_RoPE_Embedding.apply(Q=f16[2,128,8,64], cos=f16[128,64], sin=f16[128,64])
cross_entropy_loss|fast_cross_entropy_loss(logits=f32[2,64,4096], labels=i64[2,64](range=(0, 4096)))
LIST
