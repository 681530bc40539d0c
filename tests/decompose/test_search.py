"""The search over the decomposition: neighbours fused only where the fused candidate verifies and beats
the two it replaces, best gain first, within the budget; nothing tried where nothing was timed."""

import dataclasses

import torch

from diagnose.decompose import compose
from diagnose.decompose.choose import Candidate, Choice
from diagnose.decompose.graph import NodeRecord
from diagnose.decompose.jobs import capture, write_subtasks
from diagnose.decompose.partition import partition
from diagnose.decompose.recut import fuse, split_head
from diagnose.decompose.report import SubgraphReport
from diagnose.decompose.search import search, split_swapped
from diagnose.task import import_task_file
from diagnose.verify.jobs import build_model
from tests.decompose.conftest import MODELS


def node(name, op, opname, *inputs):
    return NodeRecord(name, op, opname, tuple(inputs), (2, 2), "float32")


# conv -> norm -> softmax -> linear: four anchors, four subgraphs in a chain.
CHAIN = (
    node("x", "placeholder", "placeholder"),
    node("c", "call_module", "conv2d", "x"),
    node("n", "call_module", "groupnorm", "c"),
    node("s", "call_function", "softmax", "n"),
    node("l", "call_module", "linear", "s"),
    node("out", "output", "output", "l"),
)


def row(name, chosen, torch_ms, triton_ms=None):
    tried = [Candidate("torch", "", "reference", torch_ms)]
    if triton_ms is not None:
        tried.append(Candidate("inductor", "", "passed", triton_ms))
    return SubgraphReport(name, "", "", "", tuple(tried), Choice(chosen, ""))


def test_a_pair_fuses_only_where_the_first_output_is_read_by_the_second_alone():
    a, b, c, d = partition(CHAIN)
    assert fuse(a, b, CHAIN).name == "fused_sg0_sg1" and fuse(a, b, CHAIN).nodes == ("c", "n")
    assert fuse(a, c, CHAIN) is None  # c's subgraph does not read a's output
    # the conv's value also read by the softmax's subgraph: fused with the norm it would have two outputs
    shared = CHAIN[:3] + (
        node("s", "call_function", "softmax", "n"),
        node("a", "call_function", "add", "s", "c"),
        node("out", "output", "output", "a"),
    )
    first, second, *_ = partition(shared)
    assert fuse(first, second, shared) is None


def test_the_pair_with_the_largest_gain_is_fused_first_and_fused_pairs_fuse_again():
    subgraphs = list(partition(CHAIN))
    rows = [
        row("sg0_conv2d", "torch", 1.0),
        row("sg1_groupnorm", "torch", 1.0),
        row("sg2_softmax", "torch", 2.0),
        row("sg3_linear", "torch", 3.0),
    ]
    # (torch, inductor) of each fused task: its torch time is both parts in torch, measured with it
    fused_ms = {
        "fused_sg0_sg1": (2.0, 1.5),
        "fused_sg1_sg2": (3.0, 2.0),
        "fused_sg2_sg3": (5.0, 5.5),
        "fused_sg1_sg3": (6.0, 4.0),
    }
    asked = []

    def evaluate(fused):
        asked.append([f.name for f in fused])
        return [row(f.name, "inductor", *fused_ms[f.name]) for f in fused]

    subgraphs, rows, tried = search(subgraphs, rows, CHAIN, evaluate, budget=4)
    # round 1: sg2+sg3 gains -0.5, sg1+sg2 1.0, sg0+sg1 0.5 (shares sg1: not taken); round 2, one pair left
    # in the budget, the heavier: the fused pair with sg3, which replaces the pair's inductor kernels and sg3
    # in torch: 6.0 - 3.0 + 2.0 = 5.0 ms as chosen, 4.0 fused
    assert asked == [["fused_sg2_sg3", "fused_sg1_sg2", "fused_sg0_sg1"], ["fused_sg1_sg3"]]
    assert [s.name for s in subgraphs] == ["sg0_conv2d", "fused_sg1_sg3"]
    assert subgraphs[1].nodes == ("n", "s", "l") and rows[1].name == "fused_sg1_sg3"
    assert [(f.name, f.before_ms, f.taken) for f in tried] == [
        ("fused_sg2_sg3", 5.0, False),
        ("fused_sg1_sg2", 3.0, True),
        ("fused_sg0_sg1", 2.0, False),
        ("fused_sg1_sg3", 5.0, True),
    ]


def test_a_part_nothing_timed_alone_still_fuses_with_its_neighbour():
    """A lone conv gets no Inductor kernel, so nothing times it alone; the fused task's torch time holds it."""
    subgraphs = list(partition(CHAIN))
    rows = [row(s.name, "torch", None) for s in subgraphs]
    evaluate = lambda fused: [row(f.name, "inductor", 2.0, 1.0) for f in fused]  # noqa: E731
    kept, _, tried = search(subgraphs, rows, CHAIN, evaluate, budget=1)
    assert [s.name for s in kept] == ["fused_sg0_sg1", "sg2_softmax", "sg3_linear"]
    assert [(f.before_ms, f.after_ms, f.taken) for f in tried] == [(2.0, 1.0, True)]


def test_the_budget_bounds_the_pairs_tried_and_a_torch_choice_never_wins():
    subgraphs = list(partition(CHAIN))
    rows = [row(s.name, "torch", 1.0) for s in subgraphs]
    evaluate = lambda fused: [row(f.name, "torch", 0.1) for f in fused]  # noqa: E731 - torch fused: the same ops
    kept, _, tried = search(subgraphs, rows, CHAIN, evaluate, budget=2)
    assert [f.name for f in tried] == ["fused_sg0_sg1", "fused_sg1_sg2"] and not any(f.taken for f in tried)
    assert kept == subgraphs


def test_an_untimed_fused_candidate_never_wins():
    subgraphs = list(partition(CHAIN))
    rows = [row(s.name, "torch", None) for s in subgraphs]
    evaluate = lambda fused: [row(f.name, "inductor", None, None) for f in fused]  # noqa: E731 - the interpreter
    kept, _, tried = search(subgraphs, rows, CHAIN, evaluate, budget=4)
    assert kept == subgraphs and len(tried) == 3 and not any(f.taken for f in tried)


def test_a_fused_pair_gets_a_task_file_and_the_composite_runs_it(tmp_path):
    """The fused subgraph's task file, written by a worker that traces the model again, computes the two
    it replaces; the composite calling it computes the model's forward."""
    found = capture(MODELS / "l2_chain.py", tmp_path)
    fused = fuse(*found.subgraphs[:2], found.records)
    (path,) = write_subtasks(found, [fused], tmp_path)
    assert path == tmp_path / "fused_sg0_sg1.py"
    found = dataclasses.replace(found, subgraphs=(fused, *found.subgraphs[2:]))
    composite = compose.write(found, tmp_path, {s.name: "torch" for s in found.subgraphs}, {}, {})
    original = import_task_file(MODELS / "l2_chain.py")
    model = build_model(original.Model, list(original.get_init_inputs()), "cpu")
    x = original.get_inputs()
    with torch.no_grad():
        torch.testing.assert_close(import_task_file(composite).ModelNew()(*x), model(*x))


def test_under_a_small_budget_the_heaviest_pair_is_tried_first():
    subgraphs = list(partition(CHAIN))
    rows = [row(s.name, "torch", t) for s, t in zip(subgraphs, (0.1, 0.1, 3.0, 4.0))]
    tried = search(subgraphs, rows, CHAIN, lambda fused: [row(f.name, "torch", 1.0) for f in fused], budget=1)[2]
    assert [f.name for f in tried] == ["fused_sg2_sg3"]


def test_the_composite_hands_a_triton_choice_contiguous_inputs_and_torch_its_own(decomposed, tmp_path):
    """A subgraph's Triton candidate was verified on the contiguous inputs its task draws; in the whole
    forward it may get a transposed view (attention's k.T), which Inductor's kernels, compiled for fixed
    strides, would read wrongly (ReLUSelfAttention's composite: max abs error 254 on the interpreter)."""
    found = decomposed["attention"]
    choices = {sg.name: "torch" for sg in found.subgraphs} | {"sg3_matmul": "inductor"}
    path = tmp_path / "composite.py"
    path.write_text(compose.composite_source(found, choices, {}))
    composite = import_task_file(path)
    view = torch.randn(4, 3).t()
    (given,) = composite.as_verified("sg3_matmul", view)
    assert given.is_contiguous() and torch.equal(given, view)
    assert composite.as_verified("sg0_linear", view)[0] is view
    assert 'return self.sg3_matmul(*as_verified("sg3_matmul", ' in path.read_text()


# conv -> relu -> add bias: one subgraph, the anchor and its epilogue.
EPILOGUE = (
    node("x", "placeholder", "placeholder"),
    node("w", "get_attr", "get_attr"),
    node("c", "call_module", "conv2d", "x"),
    node("r", "call_function", "relu", "c"),
    node("a", "call_function", "add", "r", "w"),
    node("out", "output", "output", "a"),
)


def test_a_subgraph_is_cut_after_its_anchor_into_the_anchor_and_its_epilogue():
    (whole,) = partition(EPILOGUE)
    head, tail = split_head(whole, EPILOGUE)
    assert (head.name, head.nodes, head.inputs, head.output) == ("sg0a_conv2d", ("c",), ("x",), "c")
    assert (tail.name, tail.nodes, tail.inputs, tail.params, tail.output) == (
        "sg0b_relu",
        ("r", "a"),
        ("c",),
        ("w",),
        "a",
    )
    assert split_head(head, EPILOGUE) is None, "a lone anchor has nothing to cut off"
    assert split_head(tail, EPILOGUE) is None, "an epilogue has no anchor"
    assert split_head(dataclasses.replace(whole, name="fused_sg0_sg1"), EPILOGUE) is None


def test_only_a_subgraph_whose_triton_candidates_failed_or_trailed_is_cut():
    (whole,) = partition(EPILOGUE)
    asked: list[list[str]] = []

    def evaluate(parts):
        asked.append([p.name for p in parts])
        return [row("sg0a_conv2d", "torch", 1.0), row("sg0b_relu", "inductor", 0.3, 0.2)]

    slower = row("sg0_conv2d", "torch", 1.0, 1.5)
    subgraphs, rows, splits = split_swapped([whole], [slower], EPILOGUE, evaluate)
    assert [sg.name for sg in subgraphs] == ["sg0a_conv2d", "sg0b_relu"] and asked == [["sg0a_conv2d", "sg0b_relu"]]
    assert [r.choice.name for r in rows] == ["torch", "inductor"] and splits[0].taken
    for kept in (row("sg0_conv2d", "torch", 1.0), row("sg0_conv2d", "inductor", 1.0, 0.5)):
        assert split_swapped([whole], [kept], EPILOGUE, evaluate)[2] == [], "no candidate, or one chosen: no cut"
    asked.clear()
    still_torch = lambda parts: [row("sg0a_conv2d", "torch", 1.0), row("sg0b_relu", "torch", 0.3, 0.4)]  # noqa: E731
    subgraphs, rows, splits = split_swapped([whole], [slower], EPILOGUE, still_torch)
    assert subgraphs == [whole] and rows == [slower] and not splits[0].taken
