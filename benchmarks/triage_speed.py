"""How fast is triage? Builds a 500-line kernel file with 10 kernels (and their launchers, a
ModelNew, input groups) and prints the median wall time of several runs per target, plus the
slowest rules. Target: under 50 ms per file on a 2-core machine (the editor re-triages as you type).

Run: python benchmarks/triage_speed.py [--runs 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from diagnose.triage import triage_source  # noqa: E402
from diagnose.triage.codes import RULES  # noqa: E402
from diagnose.triage.context import build_context  # noqa: E402
from diagnose.targets import lookup as parse_target  # noqa: E402

KERNELS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "good_kernels"
SOURCES = [
    "fused_softmax.py",
    "grouped_matmul.py",
    "layer_norm.py",
    "flash_attention_fwd.py",
    "cross_entropy.py",
    "embedding.py",
    "vector_add.py",
    "persistent_matmul.py",
    "linear_bias_relu.py",
    "swiglu.py",
]


def build_file(target_lines: int = 500) -> str:
    """Ten real kernels from the good corpus (with their host code) in one module, renamed so they
    do not collide, padded with plain host helpers up to `target_lines`."""
    parts = ["import torch", "import torch.nn as nn", "import triton", "import triton.language as tl", ""]
    for i, name in enumerate(SOURCES):
        body = (KERNELS / name).read_text().split("\n")
        body = [line for line in body if not line.startswith(("import ", "from "))]
        text = "\n".join(body).replace("ModelNew", f"ModelNew{i}").replace("get_input", f"get_input{i}_")
        parts.append(f"# ---- {name}\n{text}")
    text = "\n".join(parts)
    pad = max(0, target_lines - text.count("\n") - 1)
    helpers = [f"def helper_{j}(x, n):\n    y = x * {j}\n    return y + n\n" for j in range(pad // 4 + 1)]
    lines = (text + "\n" + "\n".join(helpers)).split("\n")
    return "\n".join(lines[: max(target_lines, text.count("\n") + 1)]) + "\n"


def median_ms(fn, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    source = build_file()
    lines = source.count("\n")
    ctx = build_context(source, "bench.py", parse_target("cuda:sm90"))
    print(
        f"file: {lines} lines, {len(ctx.kernels)} kernels, {len(ctx.launches)} launch sites, "
        f"{len(RULES)} rules; median of {args.runs} runs\n"
    )
    print(f"{'what':<34}{'median ms':>10}{'min ms':>9}")
    for target in ("cuda:sm90", "hip:gfx942", "ascend:910b"):
        med, low = median_ms(lambda t=target: triage_source(source, "bench.py", t), args.runs)
        print(f"{'triage_source ' + target:<34}{med:>10.1f}{low:>9.1f}")
    med, low = median_ms(lambda: build_context(source, "bench.py", parse_target("cuda:sm90")), args.runs)
    print(f"{'  of which: build_context':<34}{med:>10.1f}{low:>9.1f}")
    costs = []
    for code, rule in RULES.items():
        target = parse_target("ascend:910b" if rule.targets == ("ascend",) else "cuda:sm90")
        ctx = build_context(source, "bench.py", target)
        instance = rule()
        list(instance.check(ctx))  # warm the context's caches as the engine does
        med, _ = median_ms(lambda r=instance, c=ctx: list(r.check(c)), max(3, args.runs // 3))
        costs.append((med, code, rule.name))
    print("\nslowest rules (warm context):")
    for med, code, name in sorted(costs, reverse=True)[:5]:
        print(f"  {code} {name:<32}{med:>8.2f} ms")


if __name__ == "__main__":
    main()
