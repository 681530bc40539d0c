#!/usr/bin/env bash
# Optimize a real project's kernel files from `--call` specs on this machine, and print a line each (exit code,
# seconds, the run's verdict). Not a test: the rows of a results README come from it.
#
#   bash benchmarks/optimize_calls.sh CALLS ROOT OUT [PYTHONPATH_FIRST]
#
# CALLS: lines `path/under/ROOT.py|fn(x=f32[64,1000], ...)`. Each file is copied into OUT/<name>/ and optimized
# there (`--device cpu --max-candidates 3`, at most 1500 s); its log is OUT/<name>/log.txt. PYTHONPATH_FIRST puts
# another checkout of diagnose (a worktree of an earlier commit: the "before") ahead of the installed one.
# IN_PLACE=1: a file that imports its own package (FlagGems' ops, Liger's, mamba's) is optimized where it is, ROOT
# on PYTHONPATH (a scratch copy of the package's source: its cache and patch are written beside it, the patch
# then moved to OUT/<name>/). Extra environment for the project (GEMS_VENDOR=nvidia) passes through.
set -uo pipefail
calls=$1 root=$2 out=$3 first=${4:-}
mkdir -p "$out"
while IFS='|' read -r file spec; do
  [ -z "$file" ] && continue
  name=$(basename "$file" .py)
  dir=$out/$name
  rm -rf "$dir" && mkdir -p "$dir"
  start=$(date +%s)
  if [ "${IN_PLACE:-}" = 1 ]; then
    (cd "$root" && rm -rf .diagnose_cache && PYTHONPATH=${first:+$first:}$root timeout 1500 diagnose optimize "$file" \
        --call "$spec" --device cpu --max-candidates 3 > "$dir/log.txt" 2>&1; echo "rc=$? seconds=$(( $(date +%s) - start ))" >> "$dir/log.txt")
    patch="$root/${file%.py}.diagnose.patch"
    [ -f "$patch" ] && mv "$patch" "$dir/"
  else
    cp "$root/$file" "$dir/"
    (cd "$dir" && PYTHONPATH=$first timeout 1500 diagnose optimize "$(basename "$file")" --call "$spec" --device cpu \
        --max-candidates 3 > log.txt 2>&1; echo "rc=$? seconds=$(( $(date +%s) - start ))" >> log.txt)
  fi
  echo "$file: $(tail -1 "$dir/log.txt") | $(grep -E '^Best|^No ' "$dir/log.txt" | tail -1)"
done < "$calls"
