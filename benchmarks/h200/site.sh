# Sourced by the device scripts (`. benchmarks/h200/site.sh`): installs the carried wheels (bash
# benchmarks/h200/wheels.sh builds them) into $SITE (default /tmp/site), puts it and the checkout on
# PYTHONPATH, and gives every Python process of the run bytecode to read.
#
# The device image holds no bytecode for its packages and writes none (each `import torch` compiled some
# 1,200 modules from source: 3-4 s per process on an H100 host, 1.7 s of a `check`'s parent and as much in
# each worker and in each of Inductor's compile processes; session 37's profile). A user's pip install
# compiles bytecode when it installs, so the runs here would measure an installation nobody has: the
# bytecode goes to PYTHONPYCACHEPREFIX, compiled once per machine before anything is timed (about 20 s on
# 16 cores, printed to $OUT/install.txt).
#
# WHEELS: the wheel files to install (default .whl/*.whl; a glob that matches nothing is left out).
shopt -s nullglob
# shellcheck disable=SC2206 - the globs are meant to expand here
wheels=(${WHEELS:-.whl/*.whl})
shopt -u nullglob
SITE=${SITE:-/tmp/site}
{
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${wheels[@]}"
  export PYTHONPYCACHEPREFIX=/tmp/pycache
  start=$(date +%s)
  packages=$(python3 - <<'EOF'
import importlib.util
for name in ("torch", "triton", "numpy", "sympy", "jinja2", "networkx", "filelock", "fsspec", "typing_extensions"):
    spec = importlib.util.find_spec(name)
    if spec is not None:
        print(spec.submodule_search_locations[0] if spec.submodule_search_locations else spec.origin)
EOF
)
  # shellcheck disable=SC2086 - one path per word
  python3 -m compileall -q -j 0 "$SITE" diagnose benchmarks $packages > /dev/null 2>&1
  echo "bytecode into $PYTHONPYCACHEPREFIX in $(( $(date +%s) - start )) s"
} > "$OUT/install.txt" 2>&1
export PYTHONPATH=$SITE:$PWD PYTHONPYCACHEPREFIX=/tmp/pycache
