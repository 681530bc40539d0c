"""The torch.compile baseline is compiled per input group for that group's shapes alone
(`timing_jobs.static_compile`): no group's kernels are the symbolic-size ones dynamo makes on a recompile."""

import torch

from diagnose.verify.timing_jobs import static_compile


class Scale(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x * 2.0, dim=-1)


def symbolic_inputs(graphs: list) -> list[bool]:
    """Per captured graph, whether any of its inputs has a symbolic size."""
    return [
        any(isinstance(node.meta.get("example_value"), torch.SymInt) for node in graph.graph.nodes)
        or any(
            isinstance(size, torch.SymInt)
            for node in graph.graph.nodes
            if isinstance(node.meta.get("example_value"), torch.Tensor)
            for size in node.meta["example_value"].shape
        )
        for graph in graphs
    ]


def recording(graphs: list):
    def backend(graph, example_inputs):
        graphs.append(graph)
        return graph.forward

    return backend


def test_each_groups_compile_is_static():
    model = Scale()
    graphs: list = []
    for rows in (8, 12, 20):  # three groups, three shapes
        x = torch.randn(rows, 16)
        compiled = static_compile(model, backend=recording(graphs))
        assert torch.allclose(compiled(x), model(x))
    assert len(graphs) == 3 and symbolic_inputs(graphs) == [False, False, False]


def test_one_compile_for_every_group_turns_symbolic():
    """What `static_compile` replaces: one compiled module called with a second shape recompiles with
    symbolic sizes (the test above would catch a return to it)."""
    torch._dynamo.reset()
    model, graphs = Scale(), []
    compiled = torch.compile(model, backend=recording(graphs))
    for rows in (8, 12):
        compiled(torch.randn(rows, 16))
    assert symbolic_inputs(graphs) == [False, True]
