#!/bin/bash
# `diagnose optimize` on vLLM's Triton kernels on the CPU (Triton's interpreter), as a user would run it on
# an installed vLLM: no tests ship in the wheel, so each file gets a call spec written as a user would
# write one (sizes the interpreter runs in minutes). One summary line per file.
#
#     bash benchmarks/vllm_optimize.sh VLLM_ROOT DEPS_FOLDER OUT_FOLDER
#
# VLLM_ROOT: the vLLM wheel unpacked (`unzip vllm-*.whl 'vllm/*' 'vllm-*.dist-info/*'`: vLLM reads its own
# version from the dist-info), copied first: nothing is written into it. DEPS_FOLDER: what those modules
# import besides torch and triton, a folder or several joined by `:` (`pip install --no-deps --target
# DEPS_FOLDER regex psutil pyzmq transformers ...`,
# each module a failed import names). PER (seconds per file, default 900) bounds each run; ONLY (paths
# under vllm/ joined by `,`, e.g. `kernels/triton/fused_sigmoid_gate_mul`) runs those alone.
#
# DEVICE=cuda times the candidates on a GPU with each file's second call spec (serving-sized: 1024 sequences
# of a 128k vocabulary, 8192 tokens of a 4096-wide model). vLLM's compiled extensions are not needed by these
# kernels and the wheel's 239 MB do not travel to a device machine, so there VLLM_TARGET_DEVICE=cpu keeps
# vLLM from importing them (`vllm/platforms/cuda.py` imports `_C_stable_libtorch` at its top); the Triton
# kernels and their host wrappers run unchanged, on CUDA tensors.
set -u
root=$(realpath "$1"); deps=$(echo "$2" | tr : "\n" | xargs -n1 realpath | paste -sd:); out=$3
here=$(cd "$(dirname "$0")/.." && pwd)
copy=$(mktemp -d)/vllm; cp -r "$root" "$copy"; cd "$copy"
export PYTHONPATH=$here:$copy:$deps${PYTHONPATH:+:$PYTHONPATH} DIAGNOSE_CACHE_DIR=$copy/.diagnose-cache
[ "${DEVICE:-cpu}" != cpu ] && export VLLM_TARGET_DEVICE=cpu
mkdir -p "$out"; : > "$out/summary.txt"
device=${DEVICE:-cpu}; python=$(command -v python || command -v python3)
while IFS='|' read -r file cpu_call gpu_call; do
  [ -z "$file" ] && continue
  call=$cpu_call; [ "$device" != cpu ] && call=$gpu_call
  [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$file,"* ]] && continue
  name=$(echo "$file" | tr / _)
  start=$(date +%s)
  timeout -k 10 "${PER:-900}" "$python" -m diagnose.cli optimize "vllm/$file.py" --call "$call" \
      --device "$device" --max-candidates 3 --seeds 2 --max-wall $(( ${PER:-900} * 9 / 10 )) > "$out/$name.out" 2> "$out/$name.err"
  rc=$?
  last=$(grep -v '^\s*$' "$out/$name.out" | grep -v '^run \|^patch: ' | tail -1 | cut -c1-200)
  why=$(grep -E 'error|propose rewrites: [0-9]|verify and time' "$out/$name.err" | tail -3 | cut -c1-300 | tr '\n' ' ')
  echo "$file rc=$rc $(( $(date +%s) - start ))s :: $last :: $why" | tee -a "$out/summary.txt"
done <<'LIST'
v1/attention/ops/triton_merge_attn_states|merge_attn_states(output=bf16[256,16,128], prefix_output=bf16[256,16,128], prefix_lse=f32[16,256], suffix_output=bf16[256,16,128], suffix_lse=f32[16,256])|merge_attn_states(output=bf16[8192,32,128], prefix_output=bf16[8192,32,128], prefix_lse=f32[32,8192], suffix_output=bf16[8192,32,128], suffix_lse=f32[32,8192])
v1/worker/gpu/sample/min_p|apply_min_p(logits=f32[256,32000], expanded_idx_mapping=i32[256](range=(0, 256)), min_p=f32[256](range=(0.0, 0.2)))|apply_min_p(logits=f32[1024,128256], expanded_idx_mapping=i32[1024](range=(0, 1024)), min_p=f32[1024](range=(0.0, 0.2)))
kernels/triton/fused_sigmoid_gate_mul|fused_sigmoid_gate_mul(x=bf16[256,2048], gate=bf16[256,2048])|fused_sigmoid_gate_mul(x=bf16[8192,4096], gate=bf16[8192,4096])
models/beam/nvidia/layernorm|beam_rms_norm(x=bf16[256,8,128], weight=bf16[128], eps=1e-6)|beam_rms_norm(x=bf16[8192,32,128], weight=bf16[128], eps=1e-6)
kernels/triton/fused_pre_fc_norms|fused_pre_fc_norms(inputs_embeds=bf16[256,1024], hidden_states=bf16[256,1024], emb_weight=bf16[1024], hid_weight=bf16[1024], eps=1e-6)|fused_pre_fc_norms(inputs_embeds=bf16[8192,4096], hidden_states=bf16[8192,4096], emb_weight=bf16[4096], hid_weight=bf16[4096], eps=1e-6)
vllm_flash_attn/ops/triton/rotary|apply_rotary(x=f16[2,128,8,64], cos=f16[128,32], sin=f16[128,32])|apply_rotary(x=f16[8,2048,32,128], cos=f16[2048,64], sin=f16[2048,64])
v1/worker/gpu/sample/gumbel|apply_temperature(logits=f32[64,32000], expanded_idx_mapping=i32[64](range=(0, 64)), temperature=f32[64](range=(0.5, 1.5)))|apply_temperature(logits=f32[1024,128256], expanded_idx_mapping=i32[1024](range=(0, 1024)), temperature=f32[1024](range=(0.5, 1.5)))
v1/worker/gpu/sample/logprob|compute_token_logprobs(logits=f32[64,32000], token_ids=i64[64,4](range=(0, 32000)))|compute_token_logprobs(logits=f32[1024,128256], token_ids=i64[1024,4](range=(0, 128256)))
model_executor/layers/fused_embed_norm|fused_embed_norm(input_ids=i64[256](range=(0, 4096)), embed_table=bf16[4096,1024], chain_weight=bf16[1024], eps=1e-6)|fused_embed_norm(input_ids=i64[8192](range=(0, 32000)), embed_table=bf16[32000,4096], chain_weight=bf16[4096], eps=1e-6)
model_executor/layers/activation|swiglustep_and_mul_triton(output=bf16[128,1024], input=bf16[128,2048])|swiglustep_and_mul_triton(output=bf16[8192,8192], input=bf16[8192,16384])
LIST
