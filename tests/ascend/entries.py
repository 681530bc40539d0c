"""Worker entries the Ascend tests run inside the toolchain's own Python (`tests.ascend.entries:...`)."""

from __future__ import annotations


def versions(payload: dict) -> dict:
    """What the toolchain's interpreter imports as `triton` and `torch`."""
    import importlib.metadata

    import torch
    import triton

    return {
        "triton": triton.__version__,
        "torch": torch.__version__,
        "triton_file": triton.__file__,
        "triton_ascend": importlib.metadata.version("triton-ascend"),
    }


def interpret_add(payload: dict) -> dict:
    """A vector add and a loop with a runtime bound on the Triton interpreter (TRITON_INTERPRET=1)."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    @triton.jit
    def total(x, out, n, BLOCK: tl.constexpr):
        acc = tl.zeros([BLOCK], tl.float32)
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x + offs, mask=offs < n, other=0.0)
        tl.store(out, tl.sum(acc, 0))

    x, y = torch.randn(1000), torch.randn(1000)
    out, s = torch.empty(1000), torch.empty(1)
    add[(4,)](x, y, out, 1000, BLOCK=256)
    total[(1,)](x, s, 1000, BLOCK=128)
    return {"add": torch.allclose(out, x + y), "sum": abs(float(s[0]) - float(x.sum())) < 1e-3}


def npu_vector_add(payload: dict) -> dict:
    """A vector add launched on the NPU and compared with torch on the same device."""
    import torch
    import triton
    import triton.language as tl

    from diagnose.runtime.devices import synchronize, torch_device

    @triton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    device = torch_device("npu")
    n = 98432
    x, y = torch.randn(n, device=device), torch.randn(n, device=device)
    out = torch.empty_like(x)
    add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    synchronize("npu")
    return {"max_error": float((out - (x + y)).abs().max().cpu()), "device": str(out.device)}


def npu_timer(payload: dict) -> dict:
    """The harness's timer on the NPU: which torch module it times with, and a vector add's median."""
    import torch

    from diagnose.runtime.devices import torch_device
    from diagnose.verify import timing

    timer = timing.EventTimer("npu")
    x = torch.randn(1 << 20, device=torch_device("npu"))
    (t,) = timing.measure(timer, {"add": lambda: x + x}, "n_2e20")
    return {
        "backend": timer.backend.__name__,
        "median_ms": t.median_ms,
        "reps": t.reps,
        "flush_bytes": timer.flush_buffer.numel(),
        "flush_device": str(timer.flush_buffer.device),
    }
