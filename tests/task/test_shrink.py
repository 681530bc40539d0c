"""A large captured call cut to a size the CPU runs: which calls can be cut, and the cut call checked as an
unseen-shape case where the project's small calls decide nothing."""

import shutil

import pytest

from diagnose.task import load_task
from diagnose.task.callspec import parse_call
from diagnose.task.launches import LaunchRecord, merge
from diagnose.task.shrink import shrunk
from diagnose.verify.harness import verify
from diagnose.verify.options import CheckOptions
from tests.conftest import FIXTURES

LIMIT = 1 << 18


def test_the_rows_of_every_tensor_that_has_them_are_halved_until_the_call_fits():
    cut = shrunk(
        parse_call("loss(x=f32[2048,3200], y=f32[2048,3200], labels=i64[2048](range=(0, 3200)), w=f32[3200])"), LIMIT
    )
    assert (cut.rows, cut.cut_to) == (2048, 32)
    assert cut.call.text() == ("loss(x=f32[32,3200], y=f32[32,3200], labels=i64[32](range=(0, 3200)), w=f32[3200])")


@pytest.mark.parametrize(
    "call, why",
    [
        ("loss(x=f32[16,100], y=f32[16,100])", "already small"),
        ("kernel[(2048,)](x=f32[2048,3200], n=2048)", "a bare launch: its grid and sizes are numbers"),
        ("mm(a=f32[1024,1024], b=f32[1024,1024])", "square: which 1024 are rows is not known"),
        ("f(x=f32[2048,3200], n_rows=2048)", "an integer argument equal to the rows"),
        ("f(x=f32[2048,3200], idx=i64[4096](range=(0, 2048)))", "indices into the rows"),
        ("f(x=f32[2048,3200](stride=(6400, 1)))", "a strided view"),
    ],
)
def test_a_call_is_left_whole_where_cutting_it_is_ambiguous(call, why):
    assert shrunk(parse_call(call), LIMIT) is None, why


def test_a_degenerate_small_call_is_backed_by_the_large_one_cut_down(tmp_path):
    """The only small captured call ignores every row, so a kernel that writes nothing is right there; the
    large call with its rows cut is checked too, and catches it."""
    project = shutil.copytree(FIXTURES / "modules" / "project", tmp_path / "project")
    module = (project / "kernels" / "masked_row_loss.py").resolve()
    merge(
        project,
        [
            LaunchRecord(
                str(module),
                "_masked_row_loss",
                13,
                "_masked_row_loss[(4,)](n_cols=64)",
                call="masked_row_loss(x=f32[4,64], y=f32[4,64], labels=i64[4](values=(-100,)))",
            ),
            LaunchRecord(
                str(module),
                "_masked_row_loss",
                13,
                "_masked_row_loss[(4096,)](n_cols=512)",
                call="masked_row_loss(x=f32[4096,512], y=f32[4096,512], labels=i64[4096](range=(0, 512)))",
            ),
        ],
    )
    task = load_task(module, cache=tmp_path / "cache")
    assert "'launch_0@rows=128': 'masked_row_loss(x=f32[128,512]" in task.reference_path.read_text()
    options = CheckOptions(device="cpu", seeds=(0, 1), timeout_s=300, baselines=())
    honest = verify(task, options)
    assert honest.passed, honest.failure
    assert any("launch_0 also checked at rows=128" in note for note in honest.notes)
    assert {c.group for c in honest.cases} >= {"test_0", "launch_0@rows=128"}

    lazy = module.read_text().replace("    if label == -100:\n        return\n", "    return\n")
    candidate = tmp_path / "lazy.py"
    candidate.write_text(lazy)
    wrong = verify(load_task(module, cache=tmp_path / "cache", candidate=candidate), options)
    assert not wrong.passed
    assert [c.group for c in wrong.cases if not c.passed] == ["launch_0@rows=128"]


def test_where_one_row_is_still_too_large_the_next_dimension_is_cut_too():
    # a batch of sequences: one sequence of 3341 tokens is 3.4 M elements, so the tokens are cut as well
    cut = shrunk(parse_call("Norm.apply(X=f16[21,3341,1024], W=f32[1024], eps=1e-05, gemma=False)"), LIMIT)
    assert cut.call.text() == "Norm.apply(X=f16[1,208,1024], W=f32[1024], eps=1e-05, gemma=False)"
    assert (cut.rows, cut.cut_to) == (21 * 3341, 208)
    # the next dimension's size also where it is not a row: left whole
    assert shrunk(parse_call("f(x=f32[4,3341,3341])"), LIMIT) is None
    assert shrunk(parse_call("f(x=f32[4,3341,1024], n=3341)"), LIMIT) is None
