"""A kernel module becomes a task: where its calls come from, the task file it gets, and one-line errors
when it has nothing to replay."""

import shutil

import pytest

from diagnose.errors import UsageError
from diagnose.task import Inputs, load_task
from diagnose.task.harness import header, user_part
from diagnose.task.kernel_module import NoLaunches
from diagnose.task.launches import LaunchRecord, listing, merge, records_for
from tests.conftest import FIXTURES

PROJECT = FIXTURES / "modules" / "project"


@pytest.fixture
def project(tmp_path):
    shutil.copytree(PROJECT, tmp_path / "project")
    return tmp_path / "project"


def test_a_call_spec_makes_a_task_whose_source_is_the_module_line_for_line(project, tmp_path):
    module = project / "kernels" / "rms_norm.py"
    task = load_task(
        module, inputs=Inputs(calls=("RMSNormFunction.apply(x=f32[8,200], w=f32[200])",)), cache=tmp_path / "cache"
    )
    text = task.reference_path.read_text()
    assert task.origin == module.resolve() and task.reference_path.name == "rms_norm.py"
    assert user_part(text) == module.read_text()
    found = header(text)
    assert (found.module, found.root) == ("kernels.rms_norm", project.resolve())
    assert task.kernels == ("_rms_fwd",) and task.has_input_groups
    # the generated file is itself a task: loading it again gives the same task
    assert load_task(task.reference_path) == task


def test_a_host_call_is_listed_before_a_larger_bare_launch():
    # an autograd backward cannot be called again, so its kernel is replayed bare: a task of it has no host
    # code to rewrite, so the forward's host call, though it moves fewer bytes, comes first
    bare = LaunchRecord("m.py", "bwd_kernel", 30, "bwd_kernel[(64,)](dx=f32[64,4096], dy=f32[64,4096], x=f32[64,4096])")
    host = LaunchRecord(
        "m.py", "fwd_kernel", 10, "fwd_kernel[(64,)](x=f32[64,1024])", call="Norm.apply(x=f32[64,1024], w=f32[1024])"
    )
    small_host = LaunchRecord(
        "m.py", "fwd_kernel", 10, "fwd_kernel[(8,)](x=f32[8,1024])", call="Norm.apply(x=f32[8,1024], w=f32[1024])"
    )
    assert [r.kernel for r in listing([bare, small_host, host])] == ["fwd_kernel", "fwd_kernel", "bwd_kernel"]
    assert listing([bare, small_host, host])[0] is host


def test_captured_launches_make_input_groups_small_for_the_cpu_large_for_a_device(project, tmp_path):
    module = (project / "kernels" / "heuristics_add.py").resolve()
    sizes = [64, 1000, 1 << 20, 1 << 22]
    merge(
        project,
        [
            LaunchRecord(
                str(module),
                "scaled_add_kernel",
                27,
                f"scaled_add_kernel[(1,)](n={n})",
                call=f"scaled_add(x=f32[{n}], y=f32[{n}], alpha=0.5)",
            )
            for n in sizes
        ],
    )
    assert [r.call.split("[")[1] for r in listing(records_for(module))][:2] == ["4194304], y=f32", "1048576], y=f32"]
    task = load_task(module, cache=tmp_path / "cache")
    groups = task.reference_path.read_text().split("'groups': ")[1]
    assert "'test_0': 'scaled_add(x=f32[64]" in groups and "'test_1': 'scaled_add(x=f32[1000]" in groups
    assert "'launch_0': 'scaled_add(x=f32[4194304]" in groups and "'primary': 'launch_0'" in groups
    chosen = load_task(module, inputs=Inputs(launch=1), cache=tmp_path / "cache").reference_path.read_text()
    assert "'launch_0': 'scaled_add(x=f32[1048576]" in chosen


def test_a_module_with_nothing_to_replay_says_how_to_get_launches(project, tmp_path):
    with pytest.raises(NoLaunches) as error:
        load_task(project / "kernels" / "hardcoded_gelu.py", cache=tmp_path / "cache")
    message = str(error.value)
    assert "diagnose capture -- pytest" in message and "--call" in message and "\n" not in message


@pytest.mark.parametrize(
    "inputs, says",
    [
        (Inputs(calls=("nothing_here(x=f32[4])",)), "defines no 'nothing_here' at module level"),
        (Inputs(calls=("gelu(x=f32[4]",)), "does not parse"),
        (Inputs(launch=3), "--launch 3: 1 launches were captured"),
        (Inputs(calls=("gelu(x=f32[4])",), reference="nowhere.py"), "write it as path/to/file.py:function"),
    ],
)
def test_bad_inputs_are_one_line(project, tmp_path, inputs, says):
    module = (project / "kernels" / "hardcoded_gelu.py").resolve()
    merge(
        project, [LaunchRecord(str(module), "gelu_kernel", 21, "gelu_kernel[(8,)](n=1000)", call="gelu(x=f32[1000])")]
    )
    with pytest.raises(UsageError) as error:
        load_task(module, inputs=inputs, cache=tmp_path / "cache")
    assert says in str(error.value) and "\n" not in str(error.value)


def test_task_format_options_are_refused_on_task_files(tmp_path):
    with pytest.raises(UsageError, match="are for kernel modules"):
        load_task(FIXTURES.parent.parent / "examples" / "softmax.py", inputs=Inputs(calls=("f(x=f32[2])",)))


def test_a_file_without_kernels_or_task_names_is_refused(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("x = 1\n")
    with pytest.raises(UsageError, match="no @triton.jit kernels"):
        load_task(plain, cache=tmp_path / "cache")


def test_an_edited_copy_of_the_module_is_the_candidate(project, tmp_path):
    module = project / "kernels" / "hardcoded_gelu.py"
    edited = tmp_path / "gelu_edit.py"
    edited.write_text(module.read_text().replace("num_warps=4", "num_warps=2"))
    task = load_task(module, edited, Inputs(calls=("gelu(x=f32[1000])",)), cache=tmp_path / "cache")
    assert task.two_files
    assert "num_warps=2" in user_part(task.candidate_path.read_text())
    assert header(task.candidate_path.read_text()) == header(task.reference_path.read_text())


TUTORIAL_STYLE = """import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out


KERNELS = {"add": add_kernel}
x = torch.rand(1000, device=DEVICE)
y = torch.rand(1000, device=DEVICE)
output = add(x,
             y)
print(f"max difference {(output - (x + y)).abs().max()}")


def benchmark(size):
    return size


benchmark(3)
if __name__ == "__main__":
    add(x, y)
"""


def test_code_that_runs_at_import_is_left_out_line_for_line(tmp_path):
    from diagnose.task.module import import_time_work

    module = tmp_path / "tutorial.py"
    module.write_text(TUTORIAL_STYLE)
    assert import_time_work(__import__("ast").parse(TUTORIAL_STYLE)) == [(24, 25), (26, 26), (33, 33)]
    task = load_task(module, inputs=Inputs(calls=("add(x=f32[1000], y=f32[1000])",)), cache=tmp_path / "cache")
    lines = user_part(task.reference_path.read_text()).splitlines()
    original = TUTORIAL_STYLE.splitlines()
    assert len(lines) == len(original)
    assert lines[23].startswith("pass  # diagnose: runs at import") and lines[24].startswith("# (diagnose")
    assert lines[21] == original[21]  # `x = torch.rand(...)`: calls nothing of the module: kept
    assert [i for i, (a, b) in enumerate(zip(lines, original)) if a != b] == [23, 24, 25, 32]


def test_checks_of_left_out_results_and_locals_of_the_same_name_are_left_out_too():
    """The tutorials check their demo's result at the top level (`assert torch.allclose(y_triton, ...)`),
    and name the demo's result as the host function names its own local (`output`)."""
    import ast

    from diagnose.task.module import import_time_work

    source = (
        "import torch\n"  # 1
        "\n"  # 2
        "def dropout(x, p):\n"  # 3
        "    output = torch.empty_like(x)\n"  # 4
        "    return output\n"  # 5
        "\n"  # 6
        "CACHE = {}\n"  # 7
        "def cached(x):\n"  # 8
        "    return CACHE.get(x)\n"  # 9
        "x = torch.randn(10)\n"  # 10
        "output = dropout(x, p=0.5)\n"  # 11
        "y_ref = x * 2\n"  # 12
        "assert torch.allclose(output, y_ref)\n"  # 13
        "for row in output:\n"  # 14
        "    pass\n"  # 15
        "CACHE = dict(CACHE)\n"  # 16
    )
    assert import_time_work(ast.parse(source)) == [(11, 11), (13, 13), (14, 15)]
