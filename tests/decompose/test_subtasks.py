"""Each subgraph's task file is a task in the task format whose `Model` (the `torch` candidate)
reproduces, on the values it reads in the whole model's forward, the value it produces there; its
`get_inputs()` draws at the shapes that forward had."""

import pytest
import torch

from diagnose.task import import_task_file, parse_file, top_level_names
from diagnose.task.kernelbench import REFERENCE_NAMES
from tests.decompose.conftest import MODELS, node_values


@pytest.mark.parametrize("name", ["l2_chain", "mlp", "attention", "sequential"])
def test_each_subtask_reproduces_its_part_of_the_whole_forward(decomposed, name):
    found = decomposed[name]
    values = node_values(MODELS / f"{name}.py")
    assert len(found.files) == len(found.subgraphs)
    for sg, path in zip(found.subgraphs, found.files):
        assert path.name == f"{sg.name}.py"
        assert set(REFERENCE_NAMES) <= set(top_level_names(parse_file(path)))
        task = import_task_file(path)
        assert task.FIXED_SHAPES is True and task.get_init_inputs() == []
        drawn = task.get_inputs()
        assert [tuple(v.shape) for v in drawn] == [tuple(values[i].shape) for i in sg.inputs]
        with torch.no_grad():
            out = task.Model()(*[values[i] for i in sg.inputs])
        torch.testing.assert_close(out, values[sg.output], rtol=0, atol=0)


def test_a_subtask_re_creates_its_layers_and_the_model_s_parameters(decomposed):
    path = decomposed["l2_chain"].files[1]
    source = path.read_text()
    assert "self.norm = nn.GroupNorm(2, 4" in source and "self.bias = nn.Parameter(" in source
    assert (path.parent / "sg1_groupnorm.pt").exists()
    assert "relu = torch.relu(add)" in source and "= None" not in source


def test_layers_with_numbered_names_and_buffers_are_re_created(decomposed):
    assert [(sg.name, sg.nodes) for sg in decomposed["sequential"].subgraphs] == [
        ("sg0_linear", ("block_0", "block_1")),
        ("sg1_linear", ("block_2", "sub")),
    ]
    source = decomposed["sequential"].files[1].read_text()
    assert "self.block.add_module('2', nn.Linear(" in source
    assert "self.register_buffer('shift'" in source
