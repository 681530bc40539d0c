"""Launches in any host function: module-level functions, methods of any class (autograd `Function`
static methods, `nn.Module.forward`), nested functions, at any block depth; the real-code fixture pairs
(`before_<style>.py` / `after_<style>.py`) of every rewrite."""

from __future__ import annotations

import libcst as cst
import pytest

from diagnose.rewrite.rewrite import NotApplicable, RewriteContext
from diagnose.rewrite.launches import grid_shared, launch_sites, resolve_grid
from diagnose.rewrite.source import code
from diagnose.rewrite.table import REWRITES
from tests.rewrite.goldens import FIXTURES, context, folders, real_code_pairs, rewritten

PAIRS = real_code_pairs()
HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
KERNEL = """@triton.jit
def _k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


"""


def sites(source: str):
    return launch_sites(cst.parse_module(HEADER + KERNEL + source))


def test_launches_are_found_in_every_host_function_in_source_order():
    found = sites("""def op(x):
    _k[(1,)](x, 1, BLOCK=16)

    def inner(y):
        h = _k[(2,)](y, 2, BLOCK=16)
        return h

    run = _k
    run[(3,)](x, 3, BLOCK=16)
    return inner(x)


class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with torch.cuda.device(x.device):
            if x.numel():
                _k[(4,)](x, 4, BLOCK=16)
        return x

    @staticmethod
    def backward(ctx, dy):
        for _ in range(2):
            _k[(5,)](dy, 5, BLOCK=16)
        return dy


class Block(torch.nn.Module):
    def forward(self, x):
        _k[(6,)](x, 6, BLOCK=16)
        return x
""")
    assert [(s.host_name, code(s.grid), s.indent, s.assigns) for s in found] == [
        ("op", "(1,)", 4, False),
        ("op.<locals>.inner", "(2,)", 8, True),  # kept in a variable, found all the same
        ("op", "(3,)", 4, False),  # through `run = _k`, a local name bound once to the kernel
        ("Fn.forward", "(4,)", 16, False),
        ("Fn.backward", "(5,)", 12, False),
        ("Block.forward", "(6,)", 8, False),
    ]
    assert all(s.host.name.value == s.host_name.rsplit(".", 1)[-1] for s in found)


def test_a_star_args_launch_maps_no_position_past_it():
    (site,) = sites("def op(x, extra):\n    _k[(1,)](x, *extra, BLOCK=16)\n")
    from diagnose.rewrite.source import kernels

    kernel = kernels(cst.parse_module(HEADER + KERNEL))["_k"]
    assert code(site.value(kernel, "x_ptr")) == "x"
    assert site.value(kernel, "n") is None
    assert code(site.value(kernel, "BLOCK")) == "16"


@pytest.mark.parametrize(
    ("setup", "may_set_warps"),
    [
        ("    options = {}\n    if x.is_cuda:\n        options['grf_mode'] = 'large'\n", False),
        ("    options = {'num_warps': 4}\n", True),
        ("    options = launch_options(x)\n", True),
        ("    options = {}\n    options.update(extra)\n", True),
    ],
)
def test_what_a_kwargs_launch_may_pass(setup, may_set_warps):
    (site,) = sites(f"def op(x, extra):\n{setup}    _k[(1,)](x, 1, BLOCK=16, **options)\n")
    assert site.passes_unpacked("num_warps") is may_set_warps


def test_a_grid_name_is_shared_only_within_its_host():
    source = (
        HEADER
        + KERNEL
        + """def a(x):
    grid = (1,)
    _k[grid](x, 1, BLOCK=16)


def b(x):
    grid = (2,)
    _k[grid](x, 2, BLOCK=16)
    _k[grid](x, 2, BLOCK=32)
"""
    )
    module = cst.parse_module(source)
    assert [grid_shared(module, s) for s in launch_sites(module)] == [False, True, True]


def test_the_grid_binding_that_reaches_a_launch():
    """Each branch binding a grid of its own (an LLM's dispatch on ranks) gives each launch its own; a
    branch or a loop between the binding and the launch leaves it unknown."""
    source = (
        HEADER
        + KERNEL
        + """def dispatch(x):
    if x.dim() == 1:
        grid = (1,)
        _k[grid](x, 1, BLOCK=16)
    elif x.dim() == 2:
        grid = (2,)
        _k[grid](x, 2, BLOCK=16)
    else:
        grid = (3,)
        _k[grid](x, 3, BLOCK=16)


def rebound(x):
    grid = (3,)
    if x.numel() > 4:
        grid = (4,)
    _k[grid](x, 3, BLOCK=16)


def mixed(x):
    grid = (7,)
    _k[grid](x, 7, BLOCK=16)
    if x.numel() > 4:
        grid = (8,)
    _k[grid](x, 8, BLOCK=16)


def looped(x):
    grid = (5,)
    for _ in range(2):
        _k[grid](x, 5, BLOCK=16)
        grid = (6,)
"""
    )
    module = cst.parse_module(source)
    found = launch_sites(module)
    assert [code(resolve_grid(s)[0]) for s in found] == ["(1,)", "(2,)", "(3,)", "grid", "(7,)", "grid", "grid"]
    # the second launch of `mixed` may read the first's grid: both keep it
    assert [grid_shared(module, s) for s in found] == [False, False, False, False, True, True, False]


def test_a_launch_kept_in_a_variable_stays_one_in_both_branches():
    """int32-index's host switch in a nested function, the launch's result assigned."""
    source = (
        HEADER
        + """@triton.jit
def _k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


def make():
    def fill(x):
        handle = _k[(triton.cdiv(x.numel(), 128),)](x, x.numel(), BLOCK=128)
        return handle

    return fill
"""
    )
    new = REWRITES["int32-index"].apply(RewriteContext(source))
    assert "    if _offsets_fit_int32(x):\n            handle = _k_i32[" in new
    assert "        else:\n            handle = _k[" in new
    assert new.index("def _offsets_fit_int32") < new.index("def make")


def test_every_rewrite_has_real_code_pairs():
    """Every rewrite in at least three styles: its task file (`before.py`), a plain kernel module and
    one more (an autograd Function, an autotuned kernel, a nested launch, ...); an autograd Function
    for a third of them, some launching inside `with torch.cuda.device(...)`; none of them a
    KernelBench task."""
    styles = {f.name: {p.stem.removeprefix("before_") for p in f.glob("before_*.py")} for f in folders()}
    assert set(styles) == set(REWRITES), set(styles) ^ set(REWRITES)
    assert all((FIXTURES / r / "before.py").exists() for r in styles)
    assert all("module" in found for found in styles.values()), [r for r, s in styles.items() if "module" not in s]
    assert all(len(found - {"module"}) >= 1 for found in styles.values()), [
        r for r, s in styles.items() if not s - {"module"}
    ]
    autograd = [r for r, found in styles.items() if "autograd" in found]
    assert 3 * len(autograd) >= len(REWRITES), autograd
    assert any("with torch.cuda.device(" in (FIXTURES / r / "before_autograd.py").read_text() for r in autograd)
    for before, after in PAIRS:
        text = before.read_text()
        assert "class Model" not in text and "class ModelNew" not in text and "get_inputs" not in text, before
        assert after.exists(), f"{after.name} missing: python -m tests.rewrite.goldens"


@pytest.mark.parametrize(("before", "after"), PAIRS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_real_code_golden_after(before, after):
    assert rewritten(before.parent, before.name) == after.read_text(), (
        f"{before.parent.name}: output differs from {after.name} (regenerate with `python -m tests.rewrite.goldens`)"
    )


@pytest.mark.parametrize(("before", "after"), PAIRS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_real_code_not_applied_twice(before, after):
    with pytest.raises(NotApplicable):
        REWRITES[before.parent.name].apply(context(before.parent, after.name))


def test_a_module_constant_is_a_launch_value_unless_a_host_parameter_shadows_it():
    module = "BLOCK = 256\n\n\n"
    (mine,) = sites(module + "def op(x):\n    _k[(1,)](x, 1, BLOCK=BLOCK)\n")
    assert mine.constant("BLOCK") == 256
    (shadowed,) = sites(module + "def op(x, BLOCK):\n    _k[(1,)](x, 1, BLOCK=BLOCK)\n")
    assert shadowed.constant("BLOCK") is None
