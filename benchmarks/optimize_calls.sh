#!/usr/bin/env bash
# Optimize a real project's kernel files from `--call` specs on this machine, one copy per file, and print a line
# each (exit code, seconds, the run's verdict). Not a test: the rows of a results README come from it.
#
#   bash benchmarks/optimize_calls.sh CALLS ROOT OUT [PYTHONPATH_FIRST]
#
# CALLS: lines `path/under/ROOT.py|fn(x=f32[64,1000], ...)`. Each file is copied into OUT/<name>/ and optimized
# there (`--device cpu --max-candidates 3`, at most 1500 s); its log is OUT/<name>/log.txt. PYTHONPATH_FIRST puts
# another checkout of diagnose (a worktree of an earlier commit: the "before") ahead of the installed one.
set -uo pipefail
calls=$1 root=$2 out=$3 first=${4:-}
mkdir -p "$out"
while IFS='|' read -r file spec; do
  [ -z "$file" ] && continue
  dir=$out/$(basename "$file" .py)
  rm -rf "$dir" && mkdir -p "$dir" && cp "$root/$file" "$dir/"
  start=$(date +%s)
  (cd "$dir" && PYTHONPATH=$first timeout 1500 diagnose optimize "$(basename "$file")" --call "$spec" --device cpu \
      --max-candidates 3 > log.txt 2>&1; echo "rc=$? seconds=$(( $(date +%s) - start ))" >> log.txt)
  echo "$file: $(tail -1 "$dir/log.txt") | $(grep -E '^Best|^No ' "$dir/log.txt" | tail -1)"
done < "$calls"
