"""Replaying a call from its spec: storages, views, shared buffers, value ranges, and the outputs a call
writes into its arguments."""

import pytest
import torch

from diagnose.task.callspec import parse_call
from diagnose.task.replay import Harness, Layout, decided_by, recording


def test_views_and_shared_storages_are_rebuilt():
    layout = Layout(parse_call("f(x=f32[4,8](stride=(1,4)), y=f32[8](base=x, offset=8), z=same(x), n=3)"))
    assert layout.sizes == [32]  # one storage: y is a view into x's, z is x itself
    torch.manual_seed(0)
    storages = layout.draw()
    args, kwargs = layout.arguments(storages)
    x, y, z = kwargs["x"], kwargs["y"], kwargs["z"]
    assert x.shape == (4, 8) and x.stride() == (1, 4)
    assert z is x and kwargs["n"] == 3
    assert y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() and y.storage_offset() == 8


def test_value_ranges_and_sentinels_are_drawn_inside_them():
    torch.manual_seed(1)
    labels, probs, flags = Layout(
        parse_call(
            "f(labels=i64[4096](range=(0, 10), values=(-100,)), probs=f32[4096](range=(0.25, 0.5)), flags=b8[64])"
        )
    ).draw()
    assert set(labels.unique().tolist()) <= set(range(10)) | {-100}
    assert (labels == -100).any() and (labels >= 0).float().mean() > 0.7
    assert probs.min() >= 0.25 and probs.max() <= 0.5
    assert flags.dtype == torch.bool and 0 < flags.sum() < 64


def _namespace():
    def scale(x, factor, out=None):
        y = x * factor
        if out is not None:
            out.copy_(y)
            return None
        return y, 7  # a number handed back beside the result is not an output

    return {"scale": scale}


def test_outputs_are_returned_tensors_then_written_storages():
    harness = Harness(
        _namespace(),
        {"groups": {"a": "scale(x=f32[16], factor=2.0)", "b": "scale(x=f32[16], factor=2.0, out=f32[16])"}},
    )
    model = harness.ModelNew()
    inputs = harness.get_input_groups()["a"]()
    outputs = model(*inputs)
    assert len(outputs) == 1 and torch.equal(outputs[0], inputs[0] * 2)
    written = harness.get_input_groups()["b"]()
    outputs = model(*written)
    assert len(outputs) == 1 and outputs[0] is written[1]  # the out= storage, written in place


def test_a_test_functions_numpy_arrays_and_numbers_are_its_outputs():
    """TritonBench-G's tests return `out.cpu().numpy()` (and numbers): the whole result of a call with no
    tensor of ours. Dropped, the check compared nothing and any candidate passed."""

    def test_double():
        x = torch.randn(8)
        return {"test_case_1": (x * 2).numpy(), "test_case_2": float(x.sum()), "note": "done"}

    harness = Harness({"test_double": test_double}, {"groups": {"t": "test_double()"}})
    outputs = harness.ModelNew()(*harness.get_input_groups()["t"]())
    assert [tuple(o.shape) for o in outputs] == [(8,), ()]
    assert outputs[0].dtype == torch.float32 and torch.allclose(outputs[0].sum() / 2, outputs[1].float())


def test_a_test_that_checks_itself_outputs_that_it_ran_to_its_end():
    def test_checked():
        x = torch.randn(8)
        torch.testing.assert_close(x * 2, x + x)

    harness = Harness({"test_checked": test_checked}, {"groups": {"t": "test_checked()"}})
    assert harness.ModelNew()(*harness.get_input_groups()["t"]()) == (torch.tensor(True),)


def test_groups_with_storages_of_one_size_are_told_apart_by_their_index():
    harness = Harness({"t": lambda x: x.t().contiguous()}, {"groups": {"a": "t(x=f32[4,8])", "b": "t(x=f32[8,4])"}})
    model = harness.Model()
    a, b = harness.get_input_groups()["a"](), harness.get_input_groups()["b"]()
    assert model(*a)[0].shape == (8, 4)
    assert model(*b)[0].shape == (4, 8)


def test_autograd_apply_takes_its_arguments_in_forward_order():
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor=2.0):
            return x * factor

    harness = Harness({"Double": Double}, {"groups": {"g": "Double.apply(factor=3.0, x=f32[5])"}})
    x, which = harness.get_input_groups()["g"]()
    assert torch.equal(harness.Model()(x, which)[0], x * 3.0)


def test_get_inputs_gives_uninitialised_storages_of_the_largest_call():
    harness = Harness(
        _namespace(), {"groups": {"small": "scale(x=f32[4], factor=1.0)", "large": "scale(x=f32[4096], factor=1.0)"}}
    )
    storages = harness.get_inputs()
    assert storages[0].shape == (4096,) and int(storages[-1]) == 1


@pytest.mark.slow
def test_roofline_counts_the_storages_launches_touch_without_running_them():
    import triton
    import triton.language as tl

    @triton.jit
    def double(x_ptr, out_ptr, n, B: tl.constexpr):
        o = tl.arange(0, B)
        tl.store(out_ptr + o, tl.load(x_ptr + o) * 2, mask=o < n)

    def host(x):
        out = torch.empty_like(x)
        double[(1,)](x, out, x.numel(), B=1024)
        return out

    # two calls whose storages have one size: the call index picks the layout (on meta: the sizes)
    harness = Harness(
        {"double": double, "host": host}, {"groups": {"a": "host(x=f32[8,100])", "b": "host(x=f32[100,8])"}}
    )
    roofline = harness.roofline
    inputs = harness.get_input_groups()["b"]()
    assert roofline["bytes"](inputs) == 2 * 800 * 4 and roofline["flops"](inputs) == 0.0
    with torch.device("meta"):
        meta = harness.get_input_groups()["a"]()
    assert roofline["bytes"](meta) == 2 * 800 * 4


def test_roofline_runs_host_checks_on_the_drawn_values():
    """Host code may check its inputs' values before launching (`assert target.max() < V`): the work is
    counted on copies of the drawn inputs, never on uninitialised memory (seen on the H200)."""

    def host(target, logits):
        assert int(target.max()) < logits.shape[1], "target out of bounds"
        return logits * 1.0

    harness = Harness({"host": host}, {"groups": {"g": "host(target=i64[4096](range=(0, 10)), logits=f32[4096,10])"}})
    inputs = harness.get_input_groups()["g"]()
    before = [t.clone() for t in inputs]
    assert harness.roofline["bytes"](inputs) == 0.0  # no Triton launch: nothing counted, nothing raised
    assert all(torch.equal(a, b) for a, b in zip(before, inputs))


def test_a_launch_passing_tuned_values_leaves_them_to_the_autotuner_and_heuristics():
    """A guessed launch names every parameter; Triton refuses a meta-parameter that a config also sets,
    so the replay drops what the kernel's wrappers decide and the config's value is the one launched."""
    import triton
    import triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
    @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @triton.jit
    def tuned(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + o, tl.load(x_ptr + o) * 2)

    def host(x):
        pass

    assert {"BLOCK", "EVEN", "num_warps", "num_stages"} <= decided_by(tuned)
    assert decided_by(tuned.fn.fn) == set()
    harness = Harness(
        {"tuned": tuned, "host": host}, {"groups": {"g": "tuned[(1,)](x_ptr=f32[256], n=256, BLOCK=64, EVEN=False)"}}
    )
    launched = []
    with recording(lambda kernel, args, kwargs: launched.append(kwargs)):
        harness.ModelNew()(*harness.get_input_groups()["g"]())
    assert launched and launched[0]["BLOCK"] == 128 and launched[0]["EVEN"] is True


def test_a_kernel_launched_through_code_of_its_own_is_named_in_the_error():
    """FlagGems' `pointwise_dynamic` turns a scalar `@triton.jit` function into an object that generates
    and launches its own kernel; it cannot be launched on a grid."""

    class Generated:
        def __call__(self, *args):
            return args

    harness = Harness({"abs_func": Generated()}, {"groups": {"g": "abs_func[(1,)](x=f32[8])"}})
    with pytest.raises(TypeError, match="abs_func is a Generated, not a Triton kernel"):
        harness.ModelNew()(*harness.get_input_groups()["g"]())
