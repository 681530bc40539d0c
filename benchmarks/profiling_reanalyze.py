"""Re-run the profiling analysis of the H200 run without a device, from what the run saved.

    python benchmarks/profiling_reanalyze.py [--results benchmarks/results/2026-12-02-h200-profiling]

For each example: the measurements in `<results>/profile/<example>/<example>.profile.json` (work,
timings, ceilings), the Nsight Compute pages of that run (committed as
`tests/fixtures/profiling/ncu/h200_<example>_{raw,source_sass,details}.csv`) and the offline compile
redone here. Prints what `diagnose profile --ncu` prints and writes `<results>/reanalysis.txt` and
`<results>/profile/<example>/<example>.reanalysis.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PAGES = ROOT / "tests" / "fixtures" / "profiling" / "ncu"
KERNELS = {
    "softmax": "softmax_kernel",
    "layernorm": "layernorm_kernel",
    "vector_add": "add_kernel",
    "matmul": "matmul_kernel",
}


def main() -> int:
    from diagnose.profiling.nvidia.ncu_run import NcuRun
    from diagnose.profiling.profile import reanalyze
    from diagnose.profiling.render import render_text

    parser = argparse.ArgumentParser()
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results" / "2026-12-02-h200-profiling"))
    args = parser.parse_args()
    results = Path(args.results)
    texts = []
    for example, kernel in KERNELS.items():
        pages = NcuRun(
            str(PAGES),
            (PAGES / f"h200_{example}_raw.csv").read_text(),
            (PAGES / f"h200_{example}_details.csv").read_text(),
            ((kernel, (PAGES / f"h200_{example}_source_sass.csv").read_text()),),
        )
        result = reanalyze(results / "profile" / example, ROOT / "examples" / f"{example}.py", pages)
        text = render_text(result).replace(str(ROOT) + "/", "")
        texts.append(text)
        print(text)
        (results / "profile" / example / f"{example}.reanalysis.json").write_text(
            json.dumps(result.to_dict(), indent=1).replace(str(ROOT) + "/", "")
        )
    (results / "reanalysis.txt").write_text("\n".join(texts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
