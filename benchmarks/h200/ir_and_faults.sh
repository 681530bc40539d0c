#!/usr/bin/env bash
# On the H200: offline IR predictions against the real JIT (examples and the IR fixture corpus), and the
# gpu-marked tests for device faults. Output in $OUT/ir_vs_gpu.txt and $OUT/gpu-faults.txt.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 benchmarks/ir_vs_gpu.py examples/matmul.py examples/softmax.py examples/vector_add.py examples/layernorm.py > "$OUT/ir_vs_gpu_examples.txt" 2>&1
python3 benchmarks/ir_vs_gpu.py > "$OUT/ir_vs_gpu_fixtures.txt" 2>&1
python3 -m pytest -m gpu tests/gpu -k device_faults -v -p no:cacheprovider > "$OUT/gpu-faults.txt" 2>&1
tail -n 12 "$OUT"/*.txt
