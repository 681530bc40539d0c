"""Offline predictions against the real JIT on a GPU: hash, registers, spills, shared memory,
vector widths and MMA engine, per example kernel.

    python benchmarks/ir_vs_gpu.py [FILE ...]        (on a machine with an NVIDIA GPU)

For every example launch of every file (default: the IR fixture corpus), it compiles offline for
the target matching the GPU (`diagnose.ir.compile_launch`), then lets Triton's JIT compile the same
launch on the device (`JITFunction.warmup` on CUDA tensors with the same strides and storage
offsets) and loads the binary (`n_regs`, `n_spills` come from the driver). Facts are extracted from
both compiles with the same extractors and compared line by line. Exits 2 with one line where
there is no GPU.
"""

from __future__ import annotations

import glob
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def device_target() -> str | None:
    import torch

    if not torch.cuda.is_available():
        return None
    major, _ = torch.cuda.get_device_capability()
    return {8: "cuda:sm80", 9: "cuda:sm90", 10: "cuda:sm100"}.get(major)


def on_device(value):
    """A CUDA copy of a CPU tensor with the same size, strides and storage offset (so alignment)."""
    import torch

    if not isinstance(value, torch.Tensor):
        return value
    storage = torch.empty(value.untyped_storage().nbytes() // value.element_size(), dtype=value.dtype, device="cuda")
    return storage.as_strided(value.size(), value.stride(), value.storage_offset())


def jit_record(kernel, concrete, target):
    """A CompileRecord built from the JIT's CompiledKernel, so the same extractors read it."""
    from diagnose.ir.compile import TEXT_STAGES, CompileRecord

    return CompileRecord(
        kernel=concrete.kernel,
        title=concrete.title,
        target=target.name,
        hash=kernel.hash,
        name=kernel.name,
        group_dir=str(Path(next(iter(kernel.metadata_group.values()))).parent),
        metadata=kernel.metadata._asdict(),
        specialization={},
        steps=(),
        ptxas_log="",
        source_path=concrete.jit.fn.__code__.co_filename,
        seconds=0.0,
        cache_hit=False,
        asm={k: v for k, v in kernel.asm.items() if k in TEXT_STAGES and isinstance(v, str)},
    )


def per_line(evidence, name, field):
    return {(e.location.line, e.arg("access", "")): e.arg(field) for e in evidence if e.name == name and e.location}


def main() -> int:
    try:
        target_name = device_target()
    except ImportError:
        target_name = None
    if target_name is None:
        print("ir_vs_gpu: needs an NVIDIA GPU (sm_80, sm_90 or sm_100) and torch with CUDA; none here")
        return 2
    import torch

    from diagnose.ir.compile import CompileFailed, compile_launch
    from diagnose.ir.facts import FactContext, facts_for
    from diagnose.ir.launch import collect_launches
    from diagnose.ir.specialize import expand_configs
    from diagnose.targets import lookup

    target = lookup(target_name)
    props = torch.cuda.get_device_properties(0)
    print(
        f"# {props.name}: {props.multi_processor_count} SMs, L2 {props.L2_cache_size / 2**20:.0f} MiB "
        f"(registry: {target.sm_count} SMs, L2 {target.l2_bytes / 2**20:.0f} MiB); target {target.name}"
    )
    files = sys.argv[1:] or sorted(p for p in glob.glob(str(ROOT / "tests/fixtures/ir/[!_]*.py")))
    header = f"{'kernel':<44} {'hash':>5} {'regs off/gpu':>13} {'local/4':>9} {'shared':>13} {'widths':>7} {'mma':>12}"
    print(header)
    mismatches = 0
    for file in files:
        for launch in collect_launches(file):
            for concrete in expand_configs(launch):
                label = f"{Path(file).stem}:{concrete.title}"[:44]
                try:
                    offline = compile_launch(concrete, target)
                except CompileFailed as e:
                    print(f"{label:<44} offline compile failed: {e.message}")
                    continue
                args = [on_device(a) for a in concrete.args]
                try:
                    kernel = concrete.jit.warmup(*args, grid=(1,), **concrete.kwargs)
                    kernel._init_handles()
                    regs_gpu, spills_gpu = kernel.n_regs, kernel.n_spills
                except Exception as e:  # noqa: BLE001 (report and go on) OutOfResources for kernels over the shared-memory limit, ...
                    print(f"{label:<44} JIT/load: {type(e).__name__}: {str(e).splitlines()[0][:60]}")
                    continue
                ctx_off = FactContext(offline, target, concrete.grid, concrete.jit.fn.__code__.co_filename)
                ctx_gpu = FactContext(
                    jit_record(kernel, concrete, target), target, concrete.grid, concrete.jit.fn.__code__.co_filename
                )
                f_off, f_gpu = facts_for(ctx_off), facts_for(ctx_gpu)
                regs_off = next((e.arg("registers") for e in f_off if e.name == "PtxasResources"), None)
                # The driver's n_spills is the local (stack) size in 32-bit words: ptxas's stack frame / 4.
                stack = next((e.arg("stack_frame") for e in f_off if e.name == "PtxasResources"), None)
                spill_off = None if stack is None else stack // 4
                widths_ok = per_line(f_off, "GlobalAccessWidth", "bits") == per_line(f_gpu, "GlobalAccessWidth", "bits")
                mma_off = per_line(f_off, "DotLowering", "engine")
                mma_ok = mma_off == per_line(f_gpu, "DotLowering", "engine")
                same = offline.hash == kernel.hash
                row_ok = (
                    same
                    and regs_off == regs_gpu
                    and spill_off == spills_gpu
                    and widths_ok
                    and mma_ok
                    and offline.metadata["shared"] == kernel.metadata.shared
                )
                mismatches += not row_ok
                mma = ",".join(sorted(set(mma_off.values()))) or "-"
                regs = f"{regs_off}/{regs_gpu}"
                spills = f"{spill_off}/{spills_gpu}"
                shared = f"{offline.metadata['shared']}/{kernel.metadata.shared}"
                print(
                    f"{label:<44} {'ok' if same else 'DIFF':>5} {regs:>13} {spills:>9} {shared:>13} "
                    f"{'ok' if widths_ok else 'DIFF':>7} {mma + ('' if mma_ok else ' DIFF'):>12}"
                )
    print(f"# {mismatches} rows differ")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
