#!/usr/bin/env bash
# Capture a project's Triton launches on the GPU from its own scripts (its benchmarks, at the sizes it is
# used at), several side by side: capturing times nothing, so captures may share the GPU. Each is cut
# at SECONDS; what it launched until then is kept. The launches go to PROJECT/.diagnose/launches.
#
#   benchmarks/h200/capture_scripts.sh PROJECT OUT SECONDS SCRIPT...
#
# Environment: JOBS (captures at once, 4), DEVICE (cuda; cpu runs them on the interpreter). OUT gets capture/<script>.txt and launches.tgz.
set -uo pipefail
project=$(cd "$1" && pwd); out=$(mkdir -p "$2" && cd "$2" && pwd); seconds=$3; shift 3
mkdir -p "$out/capture"
printf '%s\n' "$@" | xargs -P "${JOBS:-4}" -I{} sh -c '
  name=$(basename "$3" .py)
  cd "$0" && python3 -m diagnose.cli capture --device "${DEVICE:-cuda}" --project "$0" --timeout "$1" -- python3 "$3" \
    > "$2/capture/$name.txt" 2>&1
  echo "$name: $(grep -h "distinct launch" "$2/capture/$name.txt" | tail -1)"' "$project" "$seconds" "$out" {}
tar -C "$project" -czf "$out/launches.tgz" .diagnose/launches
