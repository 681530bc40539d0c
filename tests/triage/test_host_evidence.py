"""Rules that read host evidence from the same file: the operand dtypes the file's own callers pass
(TRI004) and buffers the host pads to whole tiles (TRI017). Each fixture marks the flagged lines with
`# error: [CODE]`, as the rule fixtures do."""

from __future__ import annotations

import pytest

from .helpers import RULE_FIXTURES, expected_lines
from diagnose.targets import lookup
from diagnose.triage import triage_source
from diagnose.triage.context import build_context

FIXTURES = [
    ("TRI004_host_dtypes.py", "TRI004", "cuda:sm90"),
    ("TRI004_launched_elsewhere.py", "TRI004", "cuda:sm90"),
    ("TRI017_padded_buffer.py", "TRI017", "cuda:sm90"),
    ("TRI017_padded_buffer.py", "TRI017", "ascend:910b"),
]


@pytest.mark.parametrize("name,code,target", FIXTURES)
def test_fixture_flags_exactly_the_marked_lines(name, code, target):
    path = RULE_FIXTURES / name
    source = path.read_text()
    findings = triage_source(source, str(path), target, select=[code])
    expected = expected_lines(source, code)
    assert expected
    got = {f.location.line for f in findings}
    assert got == expected, f"missing {sorted(expected - got)}, unexpected {sorted(got - expected)}"


def _context(source: str):
    return build_context(source, "t.py", lookup("cuda:sm90"))


HEADER = """
import torch
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)

def wrapper(x):
    k[(1,)](x, x.numel(), BLOCK=32)
"""


def test_caller_records_carry_the_callers_tensors():
    ctx = _context(
        HEADER
        + """
def check():
    wrapper(torch.randn(32, dtype=torch.float16))

if __name__ == "__main__":
    wrapper(torch.zeros(64, dtype=torch.bfloat16))
"""
    )
    (launch,) = ctx.launches
    records = ctx.caller_records(launch)
    assert sorted((r.args[0].dtype, r.args[1]) for r in records) == [("bfloat16", 64), ("float16", 32)]
    assert all(r.args[0] is not None for r in launch.records)  # the per-launcher records are unchanged


def test_caller_records_unknown_without_a_caller():
    ctx = _context(HEADER)  # nothing in the file calls the wrapper: its arguments are unknown
    (launch,) = ctx.launches
    assert all(not hasattr(r.args[0], "dtype") for r in ctx.caller_records(launch) or [])


@pytest.mark.parametrize(
    "callers",
    [
        "class M:\n    def run(self, x):\n        return wrapper(x)\n",  # a method calls it: not followed
        "table = {'k': wrapper}\n",  # passed around as a value
    ],
)
def test_caller_records_unknown_when_a_caller_is_not_followed(callers):
    ctx = _context(HEADER + callers + "\ndef check():\n    wrapper(torch.randn(32, dtype=torch.float16))\n")
    (launch,) = ctx.launches
    records = ctx.caller_records(launch)
    assert records is None or any(not hasattr(r.args[0], "dtype") for r in records)


def test_caller_records_give_up_on_calls_too_deep_to_follow():
    ctx = _context(
        HEADER
        + """
def a(x): wrapper(x)
def b(x): a(x)
def c(x): b(x)
def d(x): c(x)
def check():
    d(torch.randn(32, dtype=torch.float16))
"""
    )
    assert ctx.caller_records(ctx.launches[0]) is None


def test_caller_evaluation_is_bounded_on_many_entry_points():
    import time

    body = (
        "def check():\n"
        + "".join(f"    x{i} = torch.randn(32, dtype=torch.float16)\n" for i in range(200))
        + "    wrapper(x0)\n"
    )
    ctx = _context(HEADER + body + "check()\n" * 3000)
    start = time.perf_counter()
    records = ctx.caller_records(ctx.launches[0])
    assert time.perf_counter() - start < 1.0
    assert records is None  # stopped before the end: nothing is known


def test_caller_records_do_not_keep_a_dtype_through_an_unknown_cast():
    ctx = _context(
        HEADER
        + """
def check(dtype, device):
    x = torch.randn(32, dtype=torch.float16).to(device)
    wrapper(x.to(device=device))
    wrapper(x.to(dtype))
    wrapper(torch.empty_like(x, dtype=dtype))
    wrapper(torch.randn(32, dtype=dtype))
"""
    )
    records = ctx.caller_records(ctx.launches[0])
    assert [r.args[0].dtype for r in records] == ["float16", "unknown", "unknown", "unknown"]


MODEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, BS: tl.constexpr):
    r = tl.arange(0, BS)
    a = tl.load(a_ptr + r[:, None] * BS + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BS + r[None, :])
    tl.store(c_ptr + r[:, None] * BS + r[None, :], tl.dot(a, b, allow_tf32=False))

class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.empty(a.shape, dtype=torch.float32, device=a.device)
        mm[(1,)](a, b, c, BS=32)
        return c

def get_inputs():
    return [torch.randn(32, 32, DTYPE), torch.randn(32, 32, DTYPE)]
"""


@pytest.mark.parametrize(
    "dtype,flagged", [("dtype=torch.bfloat16", False), ("dtype=torch.float32", True), ("device='cuda'", True)]
)
def test_tri004_reads_model_inputs(dtype, flagged):
    source = MODEL.replace("DTYPE", dtype)
    findings = triage_source(source, "model.py", "cuda:sm90", select=["TRI004"])
    assert bool(findings) == flagged


@pytest.mark.parametrize(
    "dtype,confidence", [("dtype=torch.float32", "high"), ("device='cuda'", "high"), ("dtype=CONFIG.dtype", "low")]
)
def test_tri004_is_sure_only_where_an_operand_is_known_fp32(dtype, confidence):
    """fp32 tensors from the model's own inputs (`randn`'s default too): high; a dtype nothing in the file
    gives (a dtype-generic kernel, as a library's are): low, still reported."""
    findings = triage_source(MODEL.replace("DTYPE", dtype), "model.py", "cuda:sm90", select=["TRI004"])
    assert findings and {f.confidence for f in findings} == {confidence}


def test_tri004_on_a_kernel_that_casts_its_operand_to_fp32_is_high():
    source = (RULE_FIXTURES / "TRI004_host_dtypes.py").read_text()
    findings = triage_source(source, "TRI004_host_dtypes.py", "cuda:sm90", select=["TRI004"])
    by_line = {f.location.line: f.confidence for f in findings}
    cast_line = next(i for i, line in enumerate(source.splitlines(), 1) if "tl.dot(bk32, bk32.T" in line)
    loop_line = next(
        i for i, line in enumerate(source.splitlines(), 1) if "tl.dot(a, a, allow_tf32=False))  # error" in line
    )
    assert by_line[cast_line] == "high" and by_line[loop_line] == "low"
