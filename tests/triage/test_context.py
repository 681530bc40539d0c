"""The shared context: kernel discovery, parameters, autotune configs, launch sites and the values
the host evaluator derives from input shapes."""

from __future__ import annotations

from diagnose.triage.context import build_context
from diagnose.targets import lookup

SOURCE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton import jit

ROWS = 2 ** 12
CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in [256, 1024] for w in [4, 8]]


@jit
def plain(x_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit(do_not_specialize=["n"])
def tuned(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


def not_a_kernel(x):
    return x


class ModelNew(nn.Module):
    def forward(self, x):
        rows, cols = x.shape
        BLOCK = triton.next_power_of_2(cols)
        plain[(triton.cdiv(x.numel(), BLOCK),)](x, x.numel(), BLOCK=BLOCK, num_warps=8)
        tuned[lambda meta: (triton.cdiv(rows * cols, meta["BLOCK"]),)](x, rows * cols)
        return x


def get_input_groups():
    return {"small": [torch.randn(ROWS, 1000)], "big": [torch.randn(ROWS, 4096, dtype=torch.float16)]}
"""


def ctx():
    return build_context(SOURCE, "k.py", lookup("cuda:sm90"))


def test_kernels_are_found_under_every_decorator_form():
    c = ctx()
    assert list(c.kernels) == ["plain", "tuned"]
    plain, tuned = c.kernels["plain"], c.kernels["tuned"]
    assert plain.params == ("x_ptr", "n", "BLOCK") and plain.constexprs == {"BLOCK"}
    assert plain.defaults["BLOCK"][0] == 128
    assert tuned.do_not_specialize == {"n"} and tuned.heuristics == {"EVEN"}
    assert [(cfg.kwargs["BLOCK"][0], cfg.num_warps[0]) for cfg in tuned.configs] == [
        (256, 4),
        (256, 8),
        (1024, 4),
        (1024, 8),
    ]


def test_module_constants_and_input_groups():
    c = ctx()
    assert c.constants["ROWS"] == 4096
    assert [(name, [t.shape for t in tensors]) for name, tensors in c.inputs] == [
        ("small", [(4096, 1000)]),
        ("big", [(4096, 4096)]),
    ]
    assert c.inputs[1][1][0].dtype == "float16"


def test_launch_sites_and_their_variants():
    c = ctx()
    assert [(launch.kernel, launch.cls, launch.function.name) for launch in c.launches] == [
        ("plain", "ModelNew", "forward"),
        ("tuned", "ModelNew", "forward"),
    ]
    assert [fn.node.name for fn in c.hot_functions] == ["forward"]
    plain = c.variants(c.kernels["plain"])
    assert [(v.group, v.int("BLOCK"), v.num_warps, v.grid) for v in plain] == [
        ("small", 1024, 8, (4000,)),
        ("big", 4096, 8, (4096,)),
    ]
    launch_line = SOURCE.splitlines().index(next(line for line in SOURCE.splitlines() if "plain[(" in line)) + 1
    assert plain[0].where("BLOCK").lineno == launch_line  # the launch keyword, not the assignment
    tuned = c.variants(c.kernels["tuned"])
    assert {(v.kind, v.int("BLOCK"), v.grid) for v in tuned} >= {
        ("autotune", 256, (16000,)),
        ("autotune", 1024, (16384,)),
    }


def test_kernel_index():
    k = ctx().kernels["plain"]
    assert [call.lineno for call in k.calls("arange")] == [14]
    assert "offs" in k.block_names and k.is_elementwise and not k.is_2d
    assert k.sources(k.calls("store")[0].args[0]) >= {"x_ptr", "offs", "BLOCK"}


def test_a_launch_through_wrap_triton_is_the_kernels():
    """`wrap_triton(kernel)[grid](...)` inside a `@triton_op` custom op launches `kernel` (torch.library's idiom)."""
    source = SOURCE.replace(
        "        plain[(triton.cdiv(x.numel(), BLOCK),)](",
        "        torch.library.wrap_triton(plain)[(triton.cdiv(x.numel(), BLOCK),)](",
    ).replace("        tuned[lambda meta", "        wrap_triton(tuned)[lambda meta")
    assert "wrap_triton(plain)" in source and "wrap_triton(tuned)" in source
    c = build_context(source, "k.py", lookup("cuda:sm90"))
    assert [launch.kernel for launch in c.launches] == ["plain", "tuned"]
    assert [(v.group, v.int("BLOCK"), v.num_warps, v.grid) for v in c.variants(c.kernels["plain"])] == [
        ("small", 1024, 8, (4000,)),
        ("big", 4096, 8, (4096,)),
    ]
