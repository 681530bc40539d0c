"""A user's Triton kernel for one subgraph is verified on its own on the CPU interpreter: a correct one
is chosen (`--prefer triton`) and the composite verifies end to end against the whole `Model`; a
wrong one is rejected and Swap keeps torch. The composite's `CHOICES` swaps an implementation."""

import re

import pytest
import torch

from diagnose.decompose.command import MARKER, decompose
from diagnose.decompose.report import Split
from diagnose.errors import UsageError
from diagnose.task import import_task_file
from diagnose.verify.harness import CheckOptions
from diagnose.verify.jobs import build_model
from tests.decompose.conftest import MODELS

OPTIONS = CheckOptions(seeds=(0, 1), baselines=("eager",), unseen_shapes=False)


def test_a_correct_kernel_is_chosen_and_the_composite_verifies_end_to_end(tmp_path):
    report = decompose(
        MODELS / "mlp.py", MODELS / "kernels_good", OPTIONS, tmp_path / "out", "triton", with_inductor=False
    )
    first, second = report.subgraphs
    assert [(c.name, c.status) for c in first.candidates] == [("torch", "reference"), ("triton", "passed")]
    assert first.choice.name == "triton" and second.choice.name == "torch"
    assert all(c.time_ms is None for c in first.candidates), "nothing is timed on CPU"
    assert report.fusions == (), "nor is any pair fused: nothing could win"
    assert report.end_to_end.passed is True
    source = report.composite.read_text()
    assert '"sg0_linear": "triton"' in source and '"sg1_linear": "torch"' in source
    assert (tmp_path / "out" / "triton_sg0_linear.py").exists() and (tmp_path / "out" / "report.md").exists()


def test_a_wrong_kernel_is_rejected_and_torch_swapped_back(tmp_path):
    report = decompose(
        MODELS / "mlp.py", MODELS / "kernels_bad", OPTIONS, tmp_path / "out", "triton", with_inductor=False
    )
    first = report.subgraphs[0]
    assert first.candidates[1].status == "failed" and "wrong output" in first.candidates[1].note
    assert first.choice.name == "torch" and first.choice.why.startswith("Swap")
    assert report.end_to_end.passed is None and "torch" in report.end_to_end.detail
    # cut after its linear, the GELU alone had no candidate either: the cut is not kept
    assert report.splits == (Split("sg0_linear", "sg0a_linear", "sg0b_gelu", "torch", False),)
    assert [sg.name for sg in report.subgraphs] == ["sg0_linear", "sg1_linear"]


def test_a_subgraph_whose_kernel_fails_is_cut_after_its_anchor_and_the_epilogue_kernel_chosen(tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    for path in (MODELS / "kernels_bad" / "sg0_linear.py", MODELS / "kernels_split" / "sg0b_gelu.py"):
        (kernels / path.name).write_text(path.read_text())
    report = decompose(MODELS / "mlp.py", kernels, OPTIONS, tmp_path / "out", "triton", with_inductor=False)
    assert report.splits == (Split("sg0_linear", "sg0a_linear", "sg0b_gelu", "triton", True),)
    assert [(sg.name, sg.choice.name) for sg in report.subgraphs] == [
        ("sg0a_linear", "torch"),
        ("sg0b_gelu", "triton"),
        ("sg1_linear", "torch"),
    ]
    assert report.end_to_end.passed is True, report.end_to_end.detail
    source = report.composite.read_text()
    assert '"sg0a_linear": "torch"' in source and '"sg0b_gelu": "triton"' in source
    assert "sg0_linear -> sg0a_linear + sg0b_gelu" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize("name", ["attention", "causal_attention", "image_self_attention"])
def test_the_all_torch_composite_computes_the_model_s_forward(tmp_path, name):
    # The composite with every CHOICES entry torch, run here (no Triton: nothing for the harness to check).
    # causal_attention: symbolic tracing fails on it; the graph traced at the input's shapes must hold.
    # image_self_attention: nn.MultiheadAttention re-created from its attributes; the sizes read from
    # `x.shape` computed again by each part that reads them.
    report = decompose(MODELS / f"{name}.py", None, OPTIONS, tmp_path / "out", with_inductor=False)
    source = report.composite.read_text()
    assert re.findall(r'"(sg\d+_\w+)": "torch"', source) == [sg.name for sg in report.subgraphs]
    composite, original = import_task_file(report.composite), import_task_file(MODELS / f"{name}.py")
    model = build_model(original.Model, list(original.get_init_inputs()), "cpu")
    x = original.get_inputs()
    with torch.no_grad():
        torch.testing.assert_close(composite.ModelNew(*original.get_init_inputs())(*x), model(*x))


def test_kernel_files_named_for_no_subgraph_are_reported_unused_and_one_that_does_not_load_fails_alone(tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "sg9_nothing.py").write_text("")
    (kernels / "sg0_linear.py").write_text("class ModelNew(:\n")  # a syntax error: that candidate fails, no more
    report = decompose(MODELS / "mlp.py", kernels, OPTIONS, tmp_path / "out", with_inductor=False)
    assert report.unused_kernels == ("sg9_nothing.py",)
    (torch_op, broken), (only,) = (sg.candidates for sg in report.subgraphs)
    assert broken.status == "failed" and broken.note.startswith("not loaded: ") and "syntax" in broken.note
    assert report.subgraphs[0].choice.name == "torch" and only.name == "torch"
    assert "named for no subgraph (not used): sg9_nothing.py" in (tmp_path / "out" / "report.md").read_text()


def test_a_folder_not_made_by_decompose_is_never_written(tmp_path):
    (tmp_path / "mine.txt").write_text("keep")
    with pytest.raises(UsageError, match="not made by `diagnose decompose`"):
        decompose(MODELS / "mlp.py", None, OPTIONS, tmp_path, with_inductor=False)
    assert not (tmp_path / MARKER).exists()


def test_a_forward_that_writes_into_the_model_s_state_is_refused_in_one_line(tmp_path):
    # Each subgraph task holds its own copy of `self.hidden`: a later one would read it as it was when cut.
    with pytest.raises(UsageError, match=r"writes into the model's state in place \(hidden.copy_"):
        decompose(MODELS / "stateful_cell.py", None, OPTIONS, tmp_path / "out", with_inductor=False)
