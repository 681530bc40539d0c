"""What a capture keeps of live arguments: specs with views, aliases and value ranges, never data."""

import torch

from diagnose.capture.describe import describe_call
from diagnose.task.specs import DtypeValue, Opaque, Same, TensorSpec


def test_tensors_views_and_aliases():
    base = torch.randn(10, 16)
    view = base[2:, :8]
    named = describe_call([("x", base), ("v", view), ("again", base), ("t", base.t())], ranges=False)
    x, v, again, t = (spec for _, spec in named)
    assert x == TensorSpec("f32", (10, 16), (16, 1), 0, 160)
    assert (v.shape, v.stride, v.offset, v.base) == ((8, 8), (16, 1), 32, "x")
    assert again == Same("x")
    assert t.base == "x" and t.stride == (1, 16)


def test_integer_ranges_few_values_and_sentinels():
    index = torch.randint(0, 1000, (4096,))
    labels = index.clone()
    labels[::7] = -100
    named = dict(describe_call([("index", index), ("labels", labels), ("mask_ids", torch.tensor([0, 2, 2, 5]))]))
    assert (named["index"].low, named["index"].high) == (int(index.min()), int(index.max()) + 1)
    assert named["labels"].values == (-100,) and named["labels"].low >= 0
    assert named["mask_ids"].values == (0, 2, 5) and named["mask_ids"].low is None


def test_float_ranges_only_for_values_that_are_never_negative():
    named = dict(describe_call([("p", torch.rand(100) * 0.5 + 0.25), ("x", torch.randn(100))]))
    assert 0.25 <= named["p"].low < named["p"].high <= 0.75
    assert named["x"].low is None
    # an output buffer from torch.empty often holds denormal garbage: not a range of real values
    garbage = torch.tensor([0.0, 1e-44, 2.3e-43])
    assert dict(describe_call([("out", garbage)]))["out"].low is None


def test_scalars_dtypes_and_objects():
    import triton.language as tl

    named = dict(
        describe_call(
            [
                ("eps", 1e-6),
                ("n", 7),
                ("mode", "llama"),
                ("none", None),
                ("dt", torch.float16),
                ("tl_dt", tl.float32),
                ("c", tl.constexpr(64)),
                ("obj", object()),
                ("parts", [torch.zeros(3), 2]),
            ]
        )
    )
    assert named["eps"] == 1e-6 and named["n"] == 7 and named["mode"] == "llama" and named["none"] is None
    assert named["dt"] == DtypeValue("torch.float16") and named["tl_dt"] == DtypeValue("tl.float32")
    assert named["c"] == 64 and named["obj"] == Opaque("object")
    assert isinstance(named["parts"], list) and named["parts"][1] == 2
