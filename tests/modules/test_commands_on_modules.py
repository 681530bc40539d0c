"""`check`, `inspect` and `optimize` on kernel modules as projects write them, with no scaffolding: each
idiom from its captured launches and from a `--call` spec (the fixture project: tests/fixtures/modules).
The commands run in the test's process (`run_cli_here`: dozens of them, one import of torch and warm
zygotes); the launches are captured by a real `diagnose capture` subprocess, and every kernel runs in a
worker subprocess as always."""

import json
import shutil

import pytest

from tests.conftest import MODULE_PROJECT, ROOT, run_cli, run_cli_here

CALLS = {
    "autotuned_softmax": "softmax(x=f32[16,200])",
    "block_ptr_copy": "scale_tiles(x=f32[48,80], scale=2.0)",
    "sized_for_gpu": "ScaleShift.apply(X=f32[2,16,256], W=f32[256], B=f32[256])",
    "hardcoded_gelu": "gelu(x=f32[1000])",
    "heuristics_add": "scaled_add(x=f32[1000], y=f32[1000], alpha=0.5)",
    "inplace_clamp": "clamp_(x=f32[700], low=-0.5, high=0.5)",
    "module_method": "bias_add_kernel[(8,)](x_ptr=f32[8,40], b_ptr=f32[40], out_ptr=f32[8,40], n_cols=40, BLOCK=64)",
    "nested_kernel": "square(x=f32[300])",
    "rms_norm": "RMSNormFunction.apply(x=f32[4,6,96], w=f32[96], eps=1e-06)",
    "self_tested": "axpy(a=2.0, x=f32[3000], y=f32[3000])",
    "tuned_method": "scale_kernel[(4,)](x_ptr=f32[1000], out_ptr=f32[1000], factor=3.0, n=1000)",
}
KERNELS = {
    "autotuned_softmax": "softmax_kernel",
    "block_ptr_copy": "scale_tiles_kernel",
    "sized_for_gpu": "_scale_shift_forward",
    "hardcoded_gelu": "gelu_kernel",
    "heuristics_add": "scaled_add_kernel",
    "inplace_clamp": "clamp_kernel",
    "module_method": "bias_add_kernel",
    "nested_kernel": "_KERNEL",
    "rms_norm": "_rms_fwd",
    "self_tested": "axpy_kernel",
    "tuned_method": "scale_kernel",
}
OWN_TESTS = ("self_tested", "sized_for_gpu")  # the project's tests do not import them: they carry their own
CAPTURED = [m for m in CALLS if m not in OWN_TESTS]


@pytest.fixture(scope="module")
def fresh_project(tmp_path_factory):
    """The project with nothing captured: inputs from --call, or from a module's own tests."""
    project = tmp_path_factory.mktemp("fresh") / "project"
    shutil.copytree(MODULE_PROJECT, project)
    return project


def _source(project, module, how):
    path = str(project / "kernels" / f"{module}.py")
    return [path] if how == "captured" else [path, "--call", CALLS[module]]


# Every idiom from its captured launches; from a --call spec, the three ways a call is replayed (an
# autograd function's apply, a kernel launched directly, a host function writing in place) and the file
# that carries its own test (the rest run slow).
CHECKS = [(m, "captured") for m in CALLS] + [
    pytest.param(
        m, "call", marks=() if m in ("rms_norm", "module_method", "inplace_clamp", "self_tested") else pytest.mark.slow
    )
    for m in CALLS
]


@pytest.mark.slow
@pytest.mark.parametrize("module, how", CHECKS)
def test_check_passes_against_the_modules_own_code(captured_project, fresh_project, module, how):
    if how == "captured" and module not in CAPTURED:
        how_args, project = [str(fresh_project / "kernels" / f"{module}.py")], fresh_project  # its own test
    else:
        project = captured_project[0] if how == "captured" else fresh_project
        how_args = _source(project, module, how)
    done = run_cli_here(
        "check", *how_args, "--seeds", "2", "--json", "-q", env={"DIAGNOSE_CACHE_DIR": str(project / ".cache")}
    )
    assert done.returncode == 0, done.stderr[-2000:]
    verdict = json.loads(done.stdout)["candidates"][0]["verdict"]
    assert verdict["passed"]
    checks = {c["name"]: c["passed"] for c in verdict["checks"]}
    assert checks["launches_triton"] and checks["ghost_replay"] and checks["input_mutation"]


INSPECTS = [(m, "captured") for m in CAPTURED] + [
    pytest.param(m, "call", marks=() if m in ("rms_norm", "module_method") else pytest.mark.slow) for m in CAPTURED
]


@pytest.mark.slow
@pytest.mark.parametrize("module, how", INSPECTS)
def test_inspect_compiles_at_the_replayed_shapes(captured_project, fresh_project, module, how):
    project = captured_project[0] if how == "captured" else fresh_project
    done = run_cli_here(
        "inspect", *_source(project, module, how), "--json", env={"DIAGNOSE_CACHE_DIR": str(project / ".cache")}
    )
    assert done.returncode == 0, done.stderr[-2000:]
    kernels = json.loads(done.stdout)["kernels"]
    assert kernels and all("error" not in k for k in kernels)
    assert {k["kernel"] for k in kernels} == {KERNELS[module]}


def test_inspect_reports_the_captured_shape_not_a_test_shape(captured_project):
    project, _ = captured_project
    done = run_cli_here(
        "inspect",
        str(project / "kernels" / "rms_norm.py"),
        "--json",
        env={"DIAGNOSE_CACHE_DIR": str(project / ".cache")},
    )
    (kernel,) = json.loads(done.stdout)["kernels"]
    assert kernel["grid"] == [24, 1, 1] or kernel["grid"][:1] == [24]


@pytest.mark.slow
@pytest.mark.parametrize("module", CAPTURED)
def test_optimize_runs_on_each_idiom_and_never_touches_the_module(captured_project, module):
    project, _ = captured_project
    path = project / "kernels" / f"{module}.py"
    before = path.read_text()
    done = run_cli_here(
        "optimize",
        str(path),
        "--max-candidates",
        "1",
        "--seeds",
        "2",
        "--max-wall",
        "300",
        "-q",
        env={"DIAGNOSE_CACHE_DIR": str(project / ".cache")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert path.read_text() == before
    patch = project / "kernels" / f"{module}.diagnose.patch"
    if "patch:" in done.stdout:
        assert patch.exists() and f"a/{path}" in patch.read_text() or "a/" in patch.read_text()


@pytest.mark.slow
def test_a_rewritten_copy_of_a_module_is_checked_against_the_original(tmp_path):
    """`check MODULE --candidate EDITED --call ...`: the rows-per-program rewrite of a kernel that moves
    its pointers to the row (each iteration must start from the unmoved pointers) still matches."""
    from tests.conftest import FIXTURES

    folder = FIXTURES / "rewrite" / "rows-per-program"
    module = tmp_path / "row_scale.py"
    module.write_text((folder / "before_bumped.py").read_text())
    done = run_cli_here(
        "check",
        str(module),
        "--candidate",
        str(folder / "after_bumped.py"),
        "--call",
        "row_scale(x=f32[37,100], scale=0.5)",
        "--seeds",
        "2",
        "-q",
        env={"DIAGNOSE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "PASSED" in done.stdout


@pytest.mark.slow
def test_a_module_that_fails_to_import_names_the_users_own_line(tmp_path):
    (tmp_path / "cluster_setup.py").write_text(
        "def setup():\n    raise RuntimeError('no cluster config')\n\n\nCONFIG = setup()\n"
    )
    (tmp_path / "ops.py").write_text(
        "import triton\nimport triton.language as tl\nimport cluster_setup\n\n\n@triton.jit\n"
        "def k(x_ptr, n, B: tl.constexpr):\n    o = tl.arange(0, B)\n    tl.store(x_ptr + o, o, mask=o < n)\n\n\n"
        "def run(x):\n    k[(1,)](x, x.numel(), B=128)\n"
    )
    env = {"DIAGNOSE_CACHE_DIR": str(tmp_path / "cache")}
    for command in (["inspect"], ["check", "--call", "run(x=f32[100])", "-q"]):
        done = run_cli(
            *command[:1], str(tmp_path / "ops.py"), *command[1:], env=env
        )  # one line and the code, as a user sees them
        assert done.returncode == 2, done.stderr
        (line,) = [text for text in done.stderr.splitlines() if text.startswith("diagnose: error:")]
        assert f"{tmp_path / 'ops.py'}:" in line and "RuntimeError: no cluster config" in line
        assert "cluster_setup.py:2 in setup" in line and "cache" not in line.split("(at")[0]


@pytest.mark.slow
def test_a_pytorch_reference_replaces_the_original_code(fresh_project, tmp_path):
    reference = tmp_path / "ref.py"
    reference.write_text(
        "import torch\n\n\ndef gelu(x):\n    return torch.nn.functional.gelu(x, approximate='tanh')\n\n\n"
        "def wrong(x):\n    return x\n"
    )
    module = str(fresh_project / "kernels" / "hardcoded_gelu.py")
    env = {"DIAGNOSE_CACHE_DIR": str(tmp_path / "cache")}
    good = run_cli_here(
        "check",
        module,
        "--call",
        "gelu(x=f32[1000])",
        "--reference",
        f"{reference}:gelu",
        "--seeds",
        "2",
        "-q",
        env=env,
    )
    assert good.returncode == 0, good.stdout[-1500:] + good.stderr[-1500:]
    bad = run_cli_here(
        "check",
        module,
        "--call",
        "gelu(x=f32[1000])",
        "--reference",
        f"{reference}:wrong",
        "--seeds",
        "2",
        "-q",
        env=env,
    )
    assert bad.returncode == 1 and "FAILED" in bad.stdout


# The agent from a --call spec on the three ways a call is replayed and on a file with its own test: every
# idiom's call replay is checked above, and the agent runs on every idiom from its captured launches.
@pytest.mark.slow
@pytest.mark.parametrize("module", ["rms_norm", "module_method", "inplace_clamp", "self_tested"])
def test_optimize_from_a_call_spec(fresh_project, tmp_path, module):
    path = fresh_project / "kernels" / f"{module}.py"
    before = path.read_text()
    done = run_cli_here(
        "optimize",
        str(path),
        "--call",
        CALLS[module],
        "--max-candidates",
        "1",
        "--seeds",
        "2",
        "--max-wall",
        "300",
        "-q",
        env={"DIAGNOSE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert path.read_text() == before
    assert "run " in done.stdout and "report" in done.stdout


@pytest.mark.slow
def test_a_test_that_draws_its_own_random_inputs_agrees_with_itself(tmp_path):
    """TritonBench-G's tests take no arguments and call torch.randn (or np.random): the reference and the
    candidate replay them from the same generator states."""
    from tests.conftest import FIXTURES

    module = tmp_path / "noisy_scale.py"
    module.write_text((FIXTURES / "modules" / "self_drawing" / "noisy_scale.py").read_text())
    done = run_cli_here(
        "check",
        str(module),
        "--call",
        "test_noisy_scale()",
        "--seeds",
        "2",
        "-q",
        env={"DIAGNOSE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "PASSED" in done.stdout


@pytest.mark.slow
def test_a_test_that_runs_its_backward_pass_runs_with_autograd(tmp_path):
    """TritonBench-G's chunk_retention and diag_ssm tests call `loss.backward()`: under the harness's
    no-grad forwards the reference failed ("element 0 of tensors does not require grad")."""
    from tests.conftest import FIXTURES

    module = tmp_path / "square_with_backward.py"
    module.write_text((FIXTURES / "modules" / "self_drawing" / "square_with_backward.py").read_text())
    done = run_cli_here(
        "check",
        str(module),
        "--call",
        "test_square_backward()",
        "--seeds",
        "2",
        "--json",
        "-q",
        env={"DIAGNOSE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    verdict = json.loads(done.stdout)["candidates"][0]["verdict"]
    checks = {c["name"]: c for c in verdict["checks"]}
    assert verdict["passed"] and checks["launches_triton"]["detail"].startswith("4 launches")


@pytest.mark.slow
def test_a_test_of_its_own_at_a_gpus_sizes_is_recorded_not_run_and_checked_cut_down(fresh_project, tmp_path):
    """The module's own test launches at 8 x 2048 x 512: on the CPU its launches are recorded, not run (the
    interpreter would take minutes), the host call kept is the module's function the test calls, not the
    test, and the CPU's group is that call with its batch and sequence cut to a size the interpreter runs."""
    from diagnose.capture.prepare import prepare
    from diagnose.knobs import scope

    path = fresh_project / "kernels" / "sized_for_gpu.py"
    with scope(cache_dir=tmp_path / "cache"):
        task = prepare(path)
    text = task.reference_path.read_text()
    assert "'launch_0': 'scale_shift(X=f32[8,2048,512]" in text
    assert "'test_0': 'scale_shift(X=f32[1,256,512]" in text
    assert "test_scale_shift(" not in text.split("diagnose task harness")[1]


REGISTRY = '''"""Ops register themselves by name when their module is imported, and a name registers once."""

OPS = {}


def register(name):
    def decorator(cls):
        assert name not in OPS, f"Duplicate op name: {name}"
        OPS[name] = cls
        return cls

    return decorator
'''

REGISTERED_SCALE = '''"""A scale kernel whose module registers an op class at import, as inference libraries do."""

import triton
import triton.language as tl

from ops.registry import register


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


def scale(x, out, factor):
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 256),)](x, out, n, factor, BLOCK=256)


@register("scale")
class Scale:
    def forward(self, x, out, factor):
        scale(x, out, factor)
'''


@pytest.mark.slow
def test_a_module_that_registers_at_import_is_imported_once_per_job(tmp_path):
    """A candidate's job draws its inputs through its own harness where it replays the same module as the
    reference: importing the reference beside it ran the module's registrations twice (vLLM's
    `CustomOp.register` asserts "Duplicate op name")."""
    package = tmp_path / "ops"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "registry.py").write_text(REGISTRY)
    (package / "registered_scale.py").write_text(REGISTERED_SCALE)
    done = run_cli(
        "check",
        str(package / "registered_scale.py"),
        "--call",
        "scale(x=f32[1000], out=f32[1000], factor=0.5)",
        "--seeds",
        "2",
        "-q",
        env={"DIAGNOSE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": f"{tmp_path}:{ROOT}"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "PASSED" in done.stdout
