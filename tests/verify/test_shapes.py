"""Which of a task's size constants are checked at unseen values (`diagnose.verify.shapes`): those that
shape only the inputs, read directly or through the module's helpers, never the model's own."""

import types

from diagnose.verify import shapes


def module_of(source: str) -> types.ModuleType:
    module = types.ModuleType("task_under_test")
    exec(compile(source, "task_under_test.py", "exec"), vars(module))
    return module


KERNELBENCH_STYLE = """
import torch
batch_size = 16
dim = 4096
in_features = 64
kernel_size = 3
use_bias = True
scale = 2.0
class Model(torch.nn.Module):
    def __init__(self, in_features):
        super().__init__()
        self.k = kernel_size
    def forward(self, x):
        return x
def shape():
    return (batch_size, in_features)
def get_inputs():
    return [torch.randn(*shape()), torch.randn(dim) * scale if use_bias else None]
def get_init_inputs():
    return [in_features]
"""


def test_only_sizes_that_shape_the_inputs_alone_change():
    module = module_of(KERNELBENCH_STYLE)
    # in_features builds the model, kernel_size is read by Model, use_bias is a bool, scale a float
    assert shapes.perturbation(module, module.get_inputs) == {"batch_size": (16, 17), "dim": (4096, 4097)}


def test_sizes_become_odd_and_larger():
    assert [shapes.unseen(n) for n in (2, 3, 256, 1001)] == [3, 5, 257, 1003]


def test_a_task_that_declares_its_shapes_fixed_keeps_them():
    module = module_of(KERNELBENCH_STYLE + "\nFIXED_SHAPES = True\n")
    assert shapes.perturbation(module, module.get_inputs) == {}


def test_groups_given_as_tensors_are_not_perturbed():
    module = module_of(KERNELBENCH_STYLE)
    assert shapes.perturbation(module, [1, 2]) == {}


def test_sizes_are_set_only_while_drawing():
    module = module_of(KERNELBENCH_STYLE)
    changed = shapes.perturbation(module, module.get_inputs)
    with shapes.sizes_set(module, changed):
        assert tuple(module.get_inputs()[0].shape) == (17, 64)
    assert (module.batch_size, module.dim) == (16, 4096)
    assert shapes.label("default", changed) == "default@batch_size=17,dim=4097"
    assert shapes.base_group(shapes.label("default", changed)) == "default"
