"""GPU code on the CPU stand-in, in a fresh interpreted process each (the stand-in changes torch and
Triton for the whole process)."""

import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

LAUNCHER = FIXTURES / "modules" / "launcher"


def _run(code: str, interpret: bool = True, path: tuple = (), target: str = "cuda:sm90") -> subprocess.CompletedProcess:
    """`code` run as a script file (kernels are defined in a file, as `triton.jit` expects)."""
    env = {"PYTHONPATH": ":".join(map(str, (ROOT, *path))), "PATH": "/usr/bin:/bin"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    prelude = f"from diagnose.runtime import cpu_standin\ncpu_standin.install({target!r}, interpreter={interpret})\n"
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "script.py"
        script.write_text(prelude + textwrap.dedent(code))
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)


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
        # unsloth's table of streams per device, built at import
        streams = {torch.cuda.device(i).idx: torch._C._cuda_getCurrentRawStream(i) for i in range(torch.cuda.device_count())}
        assert streams == {0: 0} and torch.cuda.device("cuda:1").idx == 1 and torch.cuda.device(x.device).idx == 0
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
def test_a_library_that_asks_each_backend_whether_triton_is_usable_finds_the_target_active():
    # vLLM's idiom: Triton counts as usable only where exactly one installed backend's driver is active;
    # otherwise the library swaps in a placeholder module and its host code fails on `triton.cdiv`.
    done = _run("""
        from triton.backends import backends
        active = [name for name, backend in backends.items() if backend.driver.is_active()]
        assert active == ["nvidia"], active
        import triton
        assert triton.runtime.driver.active.get_current_target().backend == "cuda"
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]
    done = _run(
        """
        from triton.backends import backends
        active = [name for name, backend in backends.items() if backend.driver.is_active()]
        assert active == ["amd"], active
        print("ok")
    """,
        target="hip:gfx942",
    )
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


def test_an_autotuner_given_warmup_and_rep_benches_through_do_bench_and_takes_the_first_config():
    """FlagGems' `libtuner` passes `warmup=25, rep=100`: Triton's autotuner then times each config with
    `triton.testing.do_bench`, which asks the driver for its device interface (the reference of every
    FlagGems reduction failed on the CPU: `'StandInDriver' object has no attribute
    'get_device_interface'`). Each config runs a few times and they tie, so the first listed wins."""
    done = _run("""
        import torch, triton, triton.language as tl
        runs = []
        def count(nargs):
            runs.append(1)
        @triton.autotune(configs=[triton.Config({"B": 64}, pre_hook=count), triton.Config({"B": 128})],
                         key=["n"], warmup=25, rep=100)
        @triton.jit
        def copy(x, y, n, B: tl.constexpr):
            o = tl.program_id(0) * B + tl.arange(0, B)
            tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)
        x = torch.randn(1000, device="cuda"); y = torch.empty_like(x)
        copy[lambda m: (triton.cdiv(1000, m["B"]),)](x, y, 1000)
        assert torch.equal(x, y) and copy.best_config.kwargs == {"B": 64}, copy.best_config
        assert 1 <= len(runs) <= 10, len(runs)
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
        assert k.cache_key  # Triton's dependency walk accepts the numpy libdevice as it does the declarations
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("interpret", [False])
def test_a_compiling_process_gets_the_device_answers_but_no_interpreter_changes(interpret):
    done = _run(
        """
        import torch
        from triton.runtime import interpreter
        assert torch.randn(2, device="cuda").device.type == "cpu"
        assert not getattr(interpreter._implicit_cvt, "diagnose_floats", False)
        assert interpreter.InterpretedFunction.__module__ == "triton.runtime.interpreter"
        print("ok")
    """,
        interpret=interpret,
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_a_launcher_that_reads_the_compiled_kernels_shape_runs_in_the_interpreter():
    """FlagGems' idiom (tests/fixtures/modules/launcher): a launcher that unwraps autotune/heuristics
    objects down to the `JITFunction`, and launches again the kernel the first launch returned."""
    done = _run(
        """
        import torch
        from triton.runtime.jit import JITFunction
        from gems.norm import rms_norm, rms_norm_kernel, scale_kernel, scale_twice
        x, w = torch.randn(6, 96, device="cuda"), torch.randn(96, device="cuda")
        for _ in range(2):  # the second round launches only through the kept kernels
            torch.testing.assert_close(rms_norm(x, w), x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w)
            y = torch.randn(1000, device="cuda")
            torch.testing.assert_close(scale_twice(y, 3.0), 9.0 * y)
        kernel = scale_kernel.jit_function
        assert isinstance(kernel, JITFunction) and kernel.__name__ == "scale_kernel"
        assert [p.name for p in kernel.params if p.is_constexpr] == ["BLOCK", "EVEN"]
        assert len(scale_kernel.kernels) == 1 and len(rms_norm_kernel.kernels) == 1
        print("ok")
    """,
        path=(LAUNCHER,),
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_an_interpreted_launch_returns_a_kernel_that_launches_again_and_counts_once():
    done = _run("""
        import torch, triton, triton.language as tl
        from diagnose.verify.instrument import LaunchLog, watch_launches
        log = LaunchLog()
        watch_launches(log)
        @triton.jit
        def fill(out_ptr, value, n, B: tl.constexpr, OFFSET: tl.constexpr = 1):
            o = tl.arange(0, B)
            tl.store(out_ptr + o, value + OFFSET, mask=o < n)
        a, b, c = torch.zeros(10), torch.zeros(10), torch.zeros(10)
        kernel = fill[(1,)](a, 2.0, 10, B=16)
        kernel[(1, 1, 1)](b, 5.0, 10)  # runtime arguments only, as Triton 3.6's compiled kernels take them
        kernel[(1,)](c, 7.0, 10, 16, 3)  # every parameter, as Triton 3.3 to 3.5's did
        assert a.tolist() == [3.0] * 10 and b.tolist() == [6.0] * 10 and c.tolist() == [10.0] * 10
        assert kernel.name == "fill" and log.launches == {"fill": 3}, log.launches
        assert fill.warmup(a, 2.0, 10, B=16, grid=(1,)) is not None and log.launches == {"fill": 3}
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_a_kernel_without_source_stays_the_interpreters_own():
    done = _run("""
        import torch, triton, triton.language as tl
        from triton.runtime.jit import JITFunction
        scope = {"tl": tl}
        exec("def one(out_ptr, B: tl.constexpr):\\n    o = tl.arange(0, B)\\n    tl.store(out_ptr + o, o * 0 + 1)\\n", scope)
        one = triton.jit(scope["one"])
        out = torch.zeros(8)
        assert one[(1,)](out, B=8) is None and out.tolist() == [1.0] * 8 and not isinstance(one, JITFunction)
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_a_device_function_gets_a_dtype_as_the_compiler_gives_it():
    """Compiled device code gets every non-tensor argument as a `tl.constexpr` and reads a dtype's
    `.value` (FlagGems' `get_dtype_min`); the interpreter passes the bare dtype."""
    done = _run("""
        import torch, triton, triton.language as tl
        @triton.jit
        def lowest(dtype):
            d = dtype.value
            if d.is_floating():
                value: tl.constexpr = float("-inf")
                return value
            bits: tl.constexpr = -1 * 2 ** (d.int_bitwidth - 1)
            return bits
        @triton.jit
        def floor_of(x, dtype):
            return tl.full(x.shape, lowest(dtype), dtype=dtype) + x.to(dtype) * 0
        @triton.jit
        def k(x_ptr, out_ptr, B: tl.constexpr):
            o = tl.arange(0, B)
            x = tl.load(x_ptr + o)
            tl.store(out_ptr + o, tl.maximum(floor_of(x, x_ptr.type.element_ty), x))
        for x in (torch.randn(16), torch.randint(-5, 5, (16,), dtype=torch.int32)):
            out = torch.empty_like(x)
            k[(1,)](x, out, B=16)
            assert torch.equal(out, x)
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_and_or_not_on_tensors_are_elementwise_as_compiled():
    """Compiled, `a and b` on tensors is `logical_and` (FlagGems masks 2-D loads so); in the plain
    interpreter a block is always true, `a and b` is `b`, and the load reads past the row."""
    done = _run("""
        import torch, triton, triton.language as tl
        @triton.jit
        def row_sums(x_ptr, out_ptr, R, C, HAS_SCALE: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
            r = tl.arange(0, BR)[:, None]
            c = tl.arange(0, BC)[None, :]
            mask = r < R and c < C
            x = tl.load(x_ptr + r * C + c, mask=mask, other=0.0)
            keep = not (x < 0) or not HAS_SCALE
            s = tl.sum(tl.where(keep, x, 0.0), axis=1)
            if HAS_SCALE and R > 0:
                s = s * 2
            tl.store(out_ptr + tl.arange(0, BR), s, mask=tl.arange(0, BR) < R)
        x = torch.randn(3, 5) + 10; x[1, 2] = -1.0
        out = torch.empty(3)
        row_sums[(1,)](x, out, 3, 5, HAS_SCALE=True, BR=4, BC=8)
        expected = 2 * x.clamp(min=0).sum(1)
        assert torch.allclose(out, expected), (out, expected)
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_a_grid_given_as_a_list_launches_as_compiled():
    """The tutorials' layer-norm backward launches on `grid = lambda meta: [triton.cdiv(N, meta['BLOCK'])]`
    and compiled Triton takes a list; Triton 3.6's interpreter adds `(1,) * k` to it (a TypeError)."""
    done = _run("""
        import torch, triton, triton.language as tl
        @triton.jit
        def double(x_ptr, n, BLOCK: tl.constexpr):
            o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) * 2, mask=o < n)
        x = torch.ones(100)
        double[lambda meta: [triton.cdiv(100, meta["BLOCK"])]](x, 100, BLOCK=32)
        double[[4]](x, 100, BLOCK=32)
        assert x.tolist() == [4.0] * 100, x
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_a_builtin_called_through_an_alias_runs_in_the_interpreter():
    # unsloth's `triton_cast = tl.cast`, called in its cross-entropy kernel
    done = _run("""
        import torch, triton, triton.language as tl
        triton_cast = tl.cast
        @triton.jit
        def widen(x, y, n, B: tl.constexpr):
            o = tl.arange(0, B)
            tl.store(y + o, triton_cast(tl.load(x + o, mask=o < n), tl.float32) * 2, mask=o < n)
        x = torch.arange(10, dtype=torch.int32); y = torch.empty(10)
        widen[(1,)](x, y, 10, B=16)
        assert torch.equal(y, torch.arange(10, dtype=torch.float32) * 2) and triton_cast is tl.cast
        print("ok")
    """)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]
