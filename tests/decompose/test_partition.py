"""The partition: anchors start groups, elementwise ops fuse into the group they read, each group has
one output."""

from diagnose.decompose.graph import NodeRecord
from diagnose.decompose.partition import partition


def node(name, op, opname, *inputs):
    return NodeRecord(name, op, opname, tuple(inputs), (2, 2), "float32")


def groups(decomposition):
    return [(sg.name, sg.nodes) for sg in decomposition.subgraphs]


def test_l2_chain_fuses_the_bias_add_and_relu_into_the_norm(decomposed):
    assert groups(decomposed["l2_chain"]) == [("sg0_conv2d", ("conv",)), ("sg1_groupnorm", ("norm", "add", "relu"))]
    norm = decomposed["l2_chain"].subgraphs[1]
    assert norm.inputs == ("conv",) and norm.params == ("bias",) and norm.output == "relu"


def test_mlp_fuses_gelu_as_the_first_linear_s_epilogue(decomposed):
    assert groups(decomposed["mlp"]) == [("sg0_linear", ("up", "act")), ("sg1_linear", ("down",))]


def test_attention_has_one_group_per_linear_matmul_and_softmax(decomposed):
    assert groups(decomposed["attention"]) == [
        ("sg0_linear", ("q",)),
        ("sg1_linear", ("k",)),
        ("sg2_linear", ("v",)),
        ("sg3_matmul", ("transpose", "matmul", "mul")),  # k's transpose viewed again where it is read
        ("sg4_softmax", ("softmax",)),
        ("sg5_matmul", ("matmul_1",)),
    ]
    assert decomposed["attention"].subgraphs[5].inputs == ("softmax", "v")


def test_an_elementwise_op_of_two_groups_starts_its_own_and_later_ones_join_it():
    records = (
        node("x", "placeholder", "placeholder"),
        node("a", "call_module", "linear", "x"),
        node("b", "call_module", "linear", "x"),
        node("s", "call_function", "add", "a", "b"),
        node("r", "call_function", "relu", "s"),
        node("out", "output", "output", "r"),
    )
    assert [(sg.name, sg.nodes) for sg in partition(records)] == [
        ("sg0_linear", ("a",)),
        ("sg1_linear", ("b",)),
        ("sg2_add", ("s", "r")),
    ]


def test_a_group_with_two_values_used_outside_is_split():
    # conv -> relu -> sigmoid, and the relu's value is also the model's output: two outputs.
    records = (
        node("x", "placeholder", "placeholder"),
        node("c", "call_module", "conv2d", "x"),
        node("r", "call_function", "relu", "c"),
        node("s", "call_function", "sigmoid", "r"),
        node("out", "output", "output", "r", "s"),
    )
    parts = partition(records)
    assert [(sg.name, sg.nodes, sg.output) for sg in parts] == [
        ("sg0_conv2d", ("c", "r"), "r"),
        ("sg1_sigmoid", ("s",), "s"),
    ]
    assert parts[1].inputs == ("r",)


def test_ops_reading_a_value_no_task_can_take_stay_with_the_group_that_makes_it():
    """KernelBench level 2's `torch.max(x, dim=1).values`: the (values, indices) pair is no tensor, so
    `.values` may not start a group of its own that would take the pair as its input."""
    records = (
        node("x", "placeholder", "placeholder"),
        node("g", "call_module", "linear", "x"),
        NodeRecord("m", "call_function", "max", ("g",)),  # the pair: neither tensor nor number
        node("v", "call_function", "getattr", "m"),
        node("s", "call_function", "sub", "v", "g"),
        node("out", "output", "output", "s"),
    )
    parts = partition(records)
    assert [(sg.name, sg.nodes) for sg in parts] == [
        ("sg0_linear", ("g",)),
        ("sg1_max", ("m", "v")),
        ("sg2_sub", ("s",)),
    ]
    assert all("m" not in sg.inputs for sg in parts)


def test_size_queries_make_no_subgraph_and_are_computed_again_where_read():
    """`B, C, H, W = x.shape` and `h * w`: numbers, each computed again by the parts that read them (from
    the tensor they ask about), never a part of their own and never a part's output; so is a view."""

    def number(name, opname, *inputs, value=2):
        return NodeRecord(name, "call_function", opname, tuple(inputs), literal=value)

    records = (
        node("x", "placeholder", "placeholder"),
        number("shape", "getattr", "x", value=(2, 4, 4)),
        number("b", "getitem", "shape"),
        number("h", "getitem", "shape", value=4),
        number("hh", "mul", "h", "h", value=16),
        node("v", "call_method", "view", "x", "b", "hh"),
        node("s", "call_function", "softmax", "v"),
        node("o", "call_method", "view", "s", "b", "h", "h"),
        node("out", "output", "output", "o"),
    )
    parts = partition(records)
    # the view of the input is no work either: the softmax views x again (the view the model returns stays)
    assert [(sg.name, sg.nodes, sg.output) for sg in parts] == [
        ("sg0_softmax", ("shape", "b", "h", "hh", "v", "s", "o"), "o"),
    ]
    assert parts[0].inputs == ("x",)


def test_a_residual_kept_with_clone_and_detach_stays_in_the_group_it_copies():
    """KernelBench level 2's `original_x = x.clone().detach(); x = x * s; x = x + original_x` after a
    matmul: the copies are no work of their own, so the matmul, both copies, the scaling and the residual
    add are one group (before: five subgraphs, two of which Inductor writes no code for)."""
    records = (
        node("x", "placeholder", "placeholder"),
        node("mm", "call_module", "linear", "x"),
        node("c", "call_method", "clone", "mm"),
        node("d", "call_method", "detach", "c"),
        node("m", "call_function", "mul", "mm"),
        node("a", "call_function", "add", "m", "d"),
        node("out", "output", "output", "a"),
    )
    assert [(sg.name, sg.nodes) for sg in partition(records)] == [("sg0_linear", ("mm", "c", "d", "m", "a"))]


def test_a_scale_computed_from_a_size_is_a_size_query_too():
    """GPT attention's `1.0 / math.sqrt(k.size(-1))`: a number from a size, computed again where read."""
    records = (
        node("x", "placeholder", "placeholder"),
        NodeRecord("d", "call_method", "size", ("x",), literal=64),
        NodeRecord("r", "call_function", "sqrt", ("d",), literal=8.0),
        node("m", "call_function", "matmul", "x", "x"),
        node("s", "call_function", "truediv", "m", "r"),
        node("out", "output", "output", "s"),
    )
    assert [(sg.name, sg.nodes) for sg in partition(records)] == [("sg0_matmul", ("d", "r", "m", "s"))]


def number(name, opname, *inputs, value=2):
    return NodeRecord(name, "call_function", opname, tuple(inputs), literal=value)


def test_an_attentions_split_and_head_views_belong_to_the_matmul_that_reads_them():
    """GPT's `q, k, v = c_attn(x).split(C, dim=2)` then `.view(B, T, nh, hs).transpose(1, 2)` (the sizes
    from the block's input): views alone are no work, so the matmul's part views `qkv` again itself (before:
    a part for each split piece and each view, none with work to speed up)."""
    records = (
        node("x", "placeholder", "placeholder"),
        number("shape", "size", "x", value=(2, 4, 6)),
        number("b", "getitem", "shape"),
        node("qkv", "call_module", "linear", "x"),
        NodeRecord("split", "call_method", "split", ("qkv",)),
        node("q", "call_function", "getitem", "split"),
        node("k", "call_function", "getitem", "split"),
        node("qh", "call_method", "view", "q", "b"),
        node("kh", "call_method", "view", "k", "b"),
        node("kt", "call_method", "transpose", "kh"),
        node("att", "call_function", "matmul", "qh", "kt"),
        node("s", "call_function", "softmax", "att"),
        node("out", "output", "output", "s"),
    )
    parts = partition(records)
    assert [sg.nodes for sg in parts] == [
        ("qkv",),
        ("shape", "b", "split", "q", "k", "qh", "kh", "kt", "att"),
        ("s",),
    ]
    assert parts[1].inputs == ("x", "qkv")  # x for its size only


def test_a_view_sized_from_the_tensor_it_was_made_from_stays_in_that_group():
    """ShuffleNet's channel shuffle: `b, c, h, w = x.size()` of the norm's output, then
    `x.view(b, g, c // g, h, w).transpose(1, 2).contiguous().view(b, c, h, w)`. The last view's sizes are
    the norm's: viewed again by the conv after it, it would need the norm's output for its size and split
    the group in two. It stays, as before."""
    records = (
        node("x", "placeholder", "placeholder"),
        node("bn", "call_module", "batchnorm2d", "x"),
        number("shape", "size", "bn", value=(2, 4, 2, 2)),
        number("b", "getitem", "shape"),
        node("v", "call_method", "view", "bn", "b"),
        node("t", "call_method", "transpose", "v"),
        node("c", "call_method", "contiguous", "t"),
        node("v2", "call_method", "view", "c", "b"),
        node("conv", "call_module", "conv2d", "v2"),
        node("out", "output", "output", "conv"),
    )
    assert [sg.nodes for sg in partition(records)] == [
        ("bn", "shape", "b", "v", "t", "c", "v2"),
        ("conv",),
    ]
