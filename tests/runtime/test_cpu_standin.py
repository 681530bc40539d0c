"""GPU code on the CPU stand-in, in a fresh interpreted process each (the stand-in changes torch and
Triton for the whole process)."""

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT


def _run(code: str, interpret: bool = True) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    prelude = f"from diagnose.runtime import cpu_standin\ncpu_standin.install(interpreter={interpret})\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.slow
def test_cuda_tensors_land_on_the_cpu_and_device_queries_are_answered():
    done = _run("""
        import torch, triton
        x = torch.randn(4, device="cuda")
        y = torch.zeros(3).cuda()
        z = torch.ones(2).to("cuda:0")
        assert x.device.type == y.device.type == z.device.type == "cpu"
        assert x.is_cuda and not torch.cuda.is_available()
        props = torch.cuda.get_device_properties(0)
        assert props.multi_processor_count == 132 and torch.cuda.get_device_capability() == (9, 0)
        assert "stand-in" in torch.cuda.get_device_name()
        with torch.cuda.device(x.device):
            torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(); end.record()
        assert end.elapsed_time(start) <= 0 <= start.elapsed_time(end)
        target = triton.runtime.driver.active.get_current_target()
        assert (target.backend, target.arch) == ("cuda", 90)
        assert triton.runtime.driver.active.get_active_torch_device().type == "cpu"
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_autotune_takes_the_first_config_without_timing_any():
    done = _run("""
        import torch, triton, triton.language as tl
        @triton.autotune(configs=[triton.Config({"B": 64}), triton.Config({"B": 128}), triton.Config({"B": 32})],
                         key=["n"])
        @triton.jit
        def copy(x, y, n, B: tl.constexpr):
            o = tl.program_id(0) * B + tl.arange(0, B)
            tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)
        x = torch.randn(1000, device="cuda"); y = torch.empty_like(x)
        copy[lambda m: (triton.cdiv(1000, m["B"]),)](x, y, 1000)
        assert torch.equal(x, y) and copy.best_config.kwargs == {"B": 64}
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_float_arguments_and_libdevice_math_in_the_interpreter():
    done = _run("""
        import torch, triton, triton.language as tl
        from triton.language.extra.libdevice import rsqrt, tanh, pow
        @triton.jit
        def k(x_ptr, out_ptr, eps, n, B: tl.constexpr):
            o = tl.arange(0, B)
            x = tl.load(x_ptr + o, mask=o < n, other=1.0)
            e = eps.to(tl.float32)
            tl.store(out_ptr + o, rsqrt(x * x + e) + tanh(x) + pow(x, 2.0), mask=o < n)
        x = torch.rand(100) + 0.5; out = torch.empty_like(x)
        k[(1,)](x, out, 1e-6, 100, B=128)
        expected = torch.rsqrt(x * x + 1e-6) + torch.tanh(x) + x ** 2
        assert torch.allclose(out, expected, atol=1e-5), (out - expected).abs().max()
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("interpret", [False])
def test_a_compiling_process_gets_the_device_answers_but_no_interpreter_changes(interpret):
    done = _run("""
        import torch
        from triton.runtime import interpreter
        assert torch.randn(2, device="cuda").device.type == "cpu"
        assert not getattr(interpreter._implicit_cvt, "diagnose_floats", False)
        print("ok")
    """, interpret=interpret)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]
