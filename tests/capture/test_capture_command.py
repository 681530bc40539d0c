"""`diagnose capture -- COMMAND` on a project written the way real ones are: tests that make every tensor
on `cuda`, kernels behind autograd functions, settings helpers, autotune, heuristics, block pointers,
in-place outputs, a kernel made by a factory and a launch inside an `nn.Module`."""

import json
import sys

import pytest

from tests.conftest import run_cli

MODULES = [
    "autotuned_softmax",
    "block_ptr_copy",
    "hardcoded_gelu",
    "heuristics_add",
    "inplace_clamp",
    "module_method",
    "nested_kernel",
    "rms_norm",
    "tuned_method",
]


@pytest.fixture
def captured(captured_project):
    return captured_project


@pytest.mark.slow
def test_every_module_of_the_project_has_its_launches(captured):
    project, done = captured
    assert done.returncode == 0, done.stderr
    assert "10 distinct launches" in done.stderr and "on the CPU" in done.stderr
    files = sorted(p.stem for p in (project / ".diagnose" / "launches").glob("*.json"))
    assert files == [f"kernels.{m}" for m in MODULES]


def test_a_launch_file_holds_specs_the_host_call_and_no_data(captured):
    project, _ = captured
    data = json.loads((project / ".diagnose" / "launches" / "kernels.rms_norm.json").read_text())
    assert data["schema"] == "diagnose.launches/1" and data["path"] == "kernels/rms_norm.py"
    (launch,) = data["launches"]
    assert launch["call"] == "RMSNormFunction.apply(x=f32[4,6,96], w=f32[96], eps=1e-06)"
    assert launch["launch"].startswith("_rms_fwd[(24,)](Y=f32[24,96], y_stride=96, X=f32[24,96]")
    assert launch["launch"].endswith("BLOCK=128, num_warps=4)")
    assert launch["host"] == "rms_forward" and launch["by"].startswith("check_ops.py:")


def test_autotuned_and_method_launches(captured):
    project, _ = captured
    launches = project / ".diagnose" / "launches"
    (softmax,) = json.loads((launches / "kernels.autotuned_softmax.json").read_text())["launches"]
    # the options the autotuner's configs set are its own: the launch leaves them to it
    assert "num_warps" not in softmax["launch"] and softmax["launch"].endswith("BLOCK=256)")
    assert softmax["call"] == "softmax(x=f32[16,200])"
    (method,) = json.loads((launches / "kernels.module_method.json").read_text())["launches"]
    assert method["call"] is None and method["host"] == "forward"  # replayed at the kernel itself
    (tuned,) = json.loads((launches / "kernels.tuned_method.json").read_text())["launches"]
    # replayed at the kernel through its autotuner: what the autotuner sets is left to it
    assert tuned["call"] is None and tuned["launch"].startswith("scale_kernel[(4,)](x_ptr=f32[1000]")
    assert "BLOCK" not in tuned["launch"] and "num_warps" not in tuned["launch"]
    (nested,) = json.loads((launches / "kernels.nested_kernel.json").read_text())["launches"]
    assert nested["kernel"] == "square_kernel" and nested["launch"].startswith("_KERNEL[")
    adds = json.loads((launches / "kernels.heuristics_add.json").read_text())["launches"]
    assert sorted(a["call"] for a in adds) == [
        "scaled_add(x=f32[1000], y=f32[1000], alpha=0.5)",
        "scaled_add(x=f32[1024], y=f32[1024], alpha=0.5)",
    ]


def test_the_listing_numbers_launches_as_launch_counts_them(captured):
    project, _ = captured
    listed = run_cli("capture", "--list", str(project / "kernels" / "heuristics_add.py"), env={"PWD": str(project)})
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("2 launches captured") and "scaled_add(x=f32[1024]" in lines[2]


@pytest.mark.slow
def test_a_command_that_launches_nothing_is_an_error(tmp_path):
    done = run_cli("capture", "--device", "cpu", "--project", str(tmp_path), "--", sys.executable, "-c", "print(1)")
    assert done.returncode == 2 and "no Triton launch was seen" in done.stderr


@pytest.mark.slow
def test_a_missing_command_is_an_error(tmp_path):
    done = run_cli("capture", "--project", str(tmp_path), "--", "no-such-command-here")
    assert done.returncode == 2 and "command not found" in done.stderr


@pytest.mark.slow
def test_a_killed_capture_ends_the_command_it_started(tmp_path):
    import os
    import signal
    import subprocess
    import time

    from tests.conftest import ROOT

    marker = tmp_path / "child.pid"
    script = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    capture = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "diagnose.cli",
            "capture",
            "--device",
            "cpu",
            "--project",
            str(tmp_path),
            "--",
            sys.executable,
            "-c",
            script,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline, "the command did not start"
        time.sleep(0.2)
    child = int(marker.read_text())
    capture.send_signal(signal.SIGTERM)
    capture.wait(timeout=30)
    time.sleep(0.5)
    try:
        os.kill(child, 0)
        alive = open(f"/proc/{child}/stat").read().split()[2] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        alive = False
    assert not alive, "the user's command outlived its capture"


@pytest.mark.slow
def test_a_launch_at_a_scripts_top_level_is_replayed_at_the_kernel(tmp_path):
    """Tutorials and benchmark scripts launch at the top level and inside `do_bench(lambda: ...)`."""
    (tmp_path / "demo.py").write_text(
        "import torch\n"
        "import triton\n"
        "import triton.language as tl\n\n\n"
        "@triton.jit\n"
        "def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n\n\n"
        "x = torch.randn(3000, device='cuda')\n"
        "out = torch.empty_like(x)\n"
        "twice_kernel[(3,)](x, out, x.numel(), BLOCK=1024)\n"
        "run = lambda: twice_kernel[(2,)](x, out, 2000, BLOCK=1024)\n"
        "run()\n"
        "assert torch.allclose(out, 2 * x)\n"
    )
    done = run_cli("capture", "--device", "cpu", "--project", str(tmp_path), "--", sys.executable, "demo.py")
    assert done.returncode == 0, done.stderr
    records = json.loads((tmp_path / ".diagnose" / "launches" / "demo.json").read_text())["launches"]
    assert sorted(r["launch"] for r in records) == [
        "twice_kernel[(2,)](x_ptr=f32[3000], out_ptr=f32[3000], n=2000, BLOCK=1024)",
        "twice_kernel[(3,)](x_ptr=f32[3000], out_ptr=f32[3000], n=3000, BLOCK=1024)",
    ]
    assert all(r["call"] is None for r in records)


def test_launch_files_stay_valid_in_another_checkout(captured, tmp_path):
    """Paths in launch files are relative to the project: a moved or re-cloned project still has them."""
    import shutil

    project, _ = captured
    moved = tmp_path / "elsewhere"
    shutil.copytree(project, moved)
    listed = run_cli("capture", "--list", str(moved / "kernels" / "heuristics_add.py"))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("2 launches captured")


def test_an_unknown_device_is_a_usage_error(tmp_path):
    done = run_cli("capture", "--device", "tpu", "--project", str(tmp_path), "--", sys.executable, "-c", "print(1)")
    assert done.returncode == 2 and "--device 'tpu': choose auto, cuda, cpu or none" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_backward_passes_run_where_the_trace_hook_sees_them(tmp_path):
    """On a GPU autograd runs backward passes on its own device threads, which no trace hook reaches;
    the capture switches that off (torch's thread-local switch) once torch is imported, so a backward
    kernel's launch and its host call are recorded like a forward's."""
    (tmp_path / "ops.py").write_text(
        "import torch\n"
        "import triton\n"
        "import triton.language as tl\n\n\n"
        "@triton.jit\n"
        "def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n\n\n"
        "def twice(x):\n"
        "    out = torch.empty_like(x)\n"
        "    twice_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n"
        "    return out\n\n\n"
        "class Twice(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        return twice(x)\n\n"
        "    @staticmethod\n"
        "    def backward(ctx, dy):\n"
        "        return twice(dy)\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\n"
        "import ops\n\n"
        "x = torch.randn(3000, device='cuda', requires_grad=True)\n"
        "ops.Twice.apply(x).sum().backward()\n"
        "print('multithreaded backward:', torch._C._is_multithreading_enabled())\n"
    )
    done = run_cli("capture", "--device", "cpu", "--project", str(tmp_path), "--", sys.executable, "train.py")
    assert done.returncode == 0, done.stderr
    assert "multithreaded backward: False" in done.stdout
    records = json.loads((tmp_path / ".diagnose" / "launches" / "ops.json").read_text())["launches"]
    # the backward's gradient of a sum is one value broadcast: a stride-0 view, replayed as one
    assert {r["call"] for r in records} == {"Twice.apply(x=f32[3000])", "twice(x=f32[3000](stride=(0,)))"}


@pytest.mark.slow
def test_a_file_of_kernels_another_module_launches_replays_their_launches(tmp_path):
    """attorch keeps its kernels in `softmax_kernels.py` (autotuned, block sizes from heuristics) and
    launches them from an autograd function in `softmax_layers.py`: the kernels' file is what a user
    optimizes, and it has no launch of its own."""
    package = tmp_path / "ops"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "scale_kernels.py").write_text(
        "import triton\n"
        "import triton.language as tl\n\n\n"
        "@triton.autotune(configs=[triton.Config({}, num_warps=2), triton.Config({}, num_warps=4)], key=['n'])\n"
        "@triton.heuristics({'BLOCK': lambda args: min(1024, triton.next_power_of_2(args['n']))})\n"
        "@triton.jit\n"
        "def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)\n"
    )
    (package / "scale_layers.py").write_text(
        "import torch\n"
        "from triton import cdiv\n\n"
        "from .scale_kernels import scale_kernel\n\n\n"
        "class ScaleAutoGrad(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x, factor):\n"
        "        out = torch.empty_like(x)\n"
        "        grid = lambda META: (cdiv(x.numel(), META['BLOCK']),)\n"
        "        scale_kernel[grid](x, out, x.numel(), factor)\n"
        "        return out\n"
    )
    (tmp_path / "run.py").write_text(
        "import torch\n"
        "from ops.scale_layers import ScaleAutoGrad\n\n"
        "x = torch.randn(3000, device='cuda')\n"
        "assert torch.allclose(ScaleAutoGrad.apply(x, 2.0), 2 * x)\n"
    )
    done = run_cli("capture", "--device", "cpu", "--project", str(tmp_path), "--", sys.executable, "run.py")
    assert done.returncode == 0, done.stderr
    kernels = str(package / "scale_kernels.py")
    listed = run_cli("capture", "--list", kernels)
    assert "1 launches captured" in listed.stdout and "scale_kernel[(3,)](x_ptr=f32[3000]" in listed.stdout
    checked = run_cli("check", kernels, "--seeds", "2")
    assert checked.returncode == 0, checked.stdout + checked.stderr
