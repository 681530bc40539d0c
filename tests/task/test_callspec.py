"""Call specs: text in, records out, and back to the same text; every mistake is one line."""

import pytest

from diagnose.errors import UsageError
from diagnose.task.callspec import parse_call
from diagnose.task.specs import CallSpec, DtypeValue, Same, TensorSpec

ROUND_TRIPS = [
    "rms_norm(x=f16[4096,8192], w=f16[8192], eps=1e-06, mode='llama', row=None, inplace=True)",
    "add_kernel[(4,)](x_ptr=f32[4096], y_ptr=f32[4096], out=f32[4096], n=4096, BLOCK=1024, num_warps=4)",
    "mm[(8, 16)](a=bf16[128,64], b=bf16[64,256](stride=(1, 64)))",
    "gather(src=f32[1000,64], index=i64[4096](range=(0, 1000)))",
    "loss(labels=i64[512](range=(0, 32000), values=(-100,)), logits=f32[512,32000])",
    "tail(x=f32[64](offset=32, base=buf), buf=f32[96])",
    "add_(x=f16[4096], y=same(x))",
    "cast(x=f32[8,8], dtype=torch.float16, tl_dtype=tl.float32)",
    "Fn.apply(x=f32[()], sizes=(1, 2, 3), parts=[f32[3], f32[4]], low=-inf, p=0.5)",
    "scale(x=f32[16](range=(0.1, 1.0)))",
]


@pytest.mark.parametrize("text", ROUND_TRIPS)
def test_text_round_trips(text):
    call = parse_call(text)
    assert call.text() == text
    assert parse_call(call.text()) == call


def test_records_read_as_written():
    call = parse_call("k[(2,)](x=f16[4,8](stride=(16,1), offset=2), n=8, dt=torch.bfloat16, y=same(x))")
    assert call.target == "k" and call.grid == (2,) and call.is_launch
    x = call.named()["x"]
    assert x == TensorSpec("f16", (4, 8), (16, 1), 2)
    assert x.span() == 2 + 3 * 16 + 7 + 1
    assert call.named()["dt"] == DtypeValue("torch.bfloat16")
    assert call.named()["y"] == Same("x")
    assert call.nbytes == 4 * 8 * 2


def test_long_dtype_names_are_understood():
    assert parse_call("f(x=float16[2], y=int64[3], z=bool[4])").named()["z"].dtype == "b8"


@pytest.mark.parametrize(
    "text, says",
    [
        ("f(x=f16[4", "does not parse"),
        ("f(x=q16[4])", "unknown dtype 'q16'"),
        ("f(x=f16[4](strides=(1,)))", "unknown tensor option 'strides'"),
        ("f(x=f16[4,4](stride=(1,)))", "stride needs one integer per dimension"),
        ("f(x=f16[-1])", "negative dimension"),
        ("f(x=os.system('ls'))", "cannot read"),
        ("f(**kw)", "`**` arguments are not allowed"),
        ("x + 1", "expected `function(arg=..., ...)`"),
        ("k[(1, 2, 3, 4)](x=f32[1])", "a grid has 1 to 3"),
        ("f(x=i32[4](range=(5, 5)))", "is empty"),
    ],
)
def test_mistakes_are_one_line(text, says):
    with pytest.raises(UsageError) as error:
        parse_call(text)
    assert says in str(error.value)
    assert "\n" not in str(error.value)


def test_nothing_in_a_spec_is_evaluated(tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(UsageError):
        parse_call(f"f(x=open({str(marker)!r}, 'w'))")
    assert not marker.exists()


def test_an_opaque_value_makes_a_call_unreplayable():
    from diagnose.task.specs import Opaque

    call = CallSpec("f", (), (("group", Opaque("ProcessGroup")),))
    assert not call.replayable
    assert call.text() == "f(group=<ProcessGroup>)"
    # read back from a capture file as it was written, still not replayable
    again = parse_call("k[(4,)](x=f32[8], FN=<JITFunction>, d=<Tensor[torch.float8_e4m3fn]>)")
    assert again.named()["FN"] == Opaque("JITFunction") and not again.replayable
    assert again.text() == "k[(4,)](x=f32[8], FN=<JITFunction>, d=<Tensor[torch.float8_e4m3fn]>)"
