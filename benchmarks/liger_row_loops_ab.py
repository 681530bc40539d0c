"""Liger-Kernel's norm backward passes as diagnose rewrites them, against the originals, on a GPU: the
modules of a Liger checkout rewritten by the library (`prefetch-next-row`, `programs-per-sm` with two
programs per SM, and both), imported side by side, each backward host function timed one variant at a
time with `triton.testing.do_bench` (L2 flushed before every call; best of two runs) and its outputs
compared with the original's. A measurement, not a test; needs a CUDA device.

    PYTHONPATH=LIGER/src python benchmarks/liger_row_loops_ab.py --root LIGER/src/liger_kernel/ops

Prints one line per module, dtype and shape: each variant's time and its speedup over the original.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PREFETCH = ("prefetch-next-row", {})
TWO_PER_SM = ("programs-per-sm", {"programs_per_sm": 2})
VARIANTS = {"orig": [], "prefetch": [PREFETCH], "pps2": [TWO_PER_SM], "prefetch+pps2": [PREFETCH, TWO_PER_SM]}
SHAPES = (("bfloat16", 8192, 4096), ("bfloat16", 16384, 2048), ("float32", 8192, 4096))
MODULES = ("rms_norm", "layer_norm", "poly_norm", "fused_add_rms_norm")


def variant(root: Path, folder: Path, module: str, steps: list) -> object:
    """The module rewritten by `steps` (rewrite id, launch values), imported under a name of its own."""
    from diagnose.rewrite.rewrite import RewriteContext
    from diagnose.rewrite.table import REWRITES

    text = (root / f"{module}.py").read_text()
    for rewrite_id, params in steps:
        text = REWRITES[rewrite_id].apply(RewriteContext(text, f"{module}.py", params=tuple(params.items())))
    tag = "_".join(r.replace("-", "_") for r, _ in steps) or "orig"
    path = folder / f"{module}_{tag}.py"
    path.write_text(text)
    name = f"liger_kernel.ops.diagnose_ab_{module}_{tag}"  # inside the package: its relative imports resolve
    spec = importlib.util.spec_from_file_location(name, path)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded
    spec.loader.exec_module(loaded)
    return loaded


def backward_call(module: str, dtype, rows: int, cols: int):
    """A call of the module's backward host function on random inputs of one shape."""
    import torch
    from liger_kernel.ops.utils import calculate_settings

    gen = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape, dt=dtype):
        return torch.randn(*shape, device="cuda", dtype=dt, generator=gen)

    block, warps = calculate_settings(cols)
    f32 = torch.float32
    if module == "rms_norm":
        args = (rand(rows, cols), rand(rows, cols), rand(cols, dt=f32), rand(rows, dt=f32).abs() + 0.5)
        return lambda m: m.rms_norm_backward(*args, 0.0, 0, block, warps, False, None)
    if module == "layer_norm":
        args = (rand(rows, cols), rand(rows, cols), rand(cols), rand(cols), rand(rows), rand(rows).abs() + 0.5)
        return lambda m: m.layer_norm_backward(*args)
    if module == "poly_norm":
        args = (rand(rows, cols), rand(rows, cols), rand(3, dt=f32), rand(rows, 3, dt=f32).abs() + 0.5)
        return lambda m: m.poly_norm_backward(*args, block, warps, False)
    args = (rand(rows, cols), rand(rows, cols), rand(rows, cols), rand(cols, dt=f32), rand(rows, dt=f32).abs() + 0.5)
    return lambda m: m.fused_add_rms_norm_backward(*args, 0.0, 0, block, warps, 2, False)


def main() -> None:
    import torch
    import triton

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="liger_kernel/ops of a Liger checkout")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="diagnose-ab-") as folder:
        for module in MODULES:
            loaded = {name: variant(args.root, Path(folder), module, steps) for name, steps in VARIANTS.items()}
            for dtype_name, rows, cols in SHAPES:
                call = backward_call(module, getattr(torch, dtype_name), rows, cols)
                reference = call(loaded["orig"])
                cells, base = [], None
                for name, m in loaded.items():
                    out = call(m)
                    same = all(
                        torch.allclose(p.float(), q.float(), rtol=2e-2, atol=2e-1)
                        for p, q in zip(reference, out)
                        if isinstance(p, torch.Tensor)
                    )
                    ms = min(triton.testing.do_bench(lambda: call(m), rep=100) for _ in range(2))
                    base = base or ms
                    cells.append(f"{name} {ms * 1e3:.1f}us{'' if same else ' MISMATCH'} ({base / ms:.2f}x)")
                print(f"{module} {dtype_name} [{rows},{cols}] " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
