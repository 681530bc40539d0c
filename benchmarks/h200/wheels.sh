#!/usr/bin/env bash
# Downloads, on this machine, the wheels the device scripts carry: the device image has torch and triton but not
# what `diagnose` imports beside them, and nothing can be fetched there. Versions are the ones this checkout's
# .venv resolved, for the device's CPython 3.12 on x86-64 Linux.
#
#   bash benchmarks/h200/wheels.sh            # .whl: langgraph, pydantic, libcst, ... (every device script)
#   bash benchmarks/h200/wheels.sh dk         # .whl-dk: DuckDB, its TPC-H extension, Dask, pandas (datakernel_sf.sh)
#   bash benchmarks/h200/wheels.sh ray        # .whl-ray1 / .whl-ray2: Ray split in two (ray_vs_local.sh)
#
# The folders are ignored by git (add them to .git/info/exclude) and named in a run's `carry`.
set -euo pipefail
pip="${PIP:-.venv/bin/pip}"
version() { "$pip" freeze 2>/dev/null | grep -i -E "^$1==" | head -1; }
fetch() {  # fetch FOLDER NAME...: each NAME at the version .venv holds
  local folder=$1; shift
  local pins=()
  for name in "$@"; do
    pin=$(version "$name")
    [ -n "$pin" ] || { echo "wheels.sh: $name is not installed in .venv" >&2; exit 2; }
    pins+=("$pin")
  done
  mkdir -p "$folder"
  local platforms=()
  for p in manylinux1 manylinux2014 manylinux_2_17 manylinux_2_24 manylinux_2_26 manylinux_2_27 manylinux_2_28 \
           manylinux_2_31 manylinux_2_34 manylinux_2_35; do
    platforms+=(--platform "${p}_x86_64")
  done
  "$pip" download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
    --dest "$folder" "${pins[@]}"
  du -sh "$folder"
}
case "${1:-base}" in
  base)
    fetch .whl aiosqlite annotated-types distro jiter jsonpatch jsonpointer jsonschema jsonschema-specifications \
      langchain-core langchain-protocol langgraph langgraph-checkpoint langgraph-checkpoint-sqlite \
      langgraph-prebuilt langgraph-sdk langsmith lazy-importer libcst orjson ormsgpack platformdirs pydantic \
      pydantic_core pytest-asyncio referencing requests-toolbelt rpds-py sniffio sqlite-vec tenacity truststore \
      typing-inspection typing_extensions uuid_utils websockets xxhash zstandard httpx2 httpcore2 ;;
  dk)
    fetch .whl-dk dask duckdb duckdb_extension_tpch importlib_metadata locket partd pandas ;;
  ray)
    fetch .whl-ray1 ray msgpack click
    # One call carries at most 64 MiB: the Ray wheel travels in two parts, joined on the device.
    wheel=$(cd .whl-ray1 && ls ray-*.whl)
    (cd .whl-ray1 && split -b 40000000 "$wheel" ray.part. && rm "$wheel" && echo "$wheel" > NAME)
    mkdir -p .whl-ray2 && mv .whl-ray1/ray.part.ab .whl-ray2/
    du -sh .whl-ray1 .whl-ray2 ;;
  *) echo "wheels.sh: unknown set '$1' (base, dk or ray)" >&2; exit 2 ;;
esac
