"""pointer-subscript: the spellings of LLM-written first versions (`x = x_ptr[pid]`, `out_ptr[idx] = v`,
`out_ptr[row] += v`, an offset of several terms, another alias of triton.language), the subscripts it
declines or leaves alone, its agreement with TRI032, and the point of it: the rewritten kernels run on the
interpreter and compile for sm_90, where the originals fail on both."""

from __future__ import annotations

import json

import pytest

from diagnose.rewrite.rewrite import NotApplicable, RewriteContext
from diagnose.rewrite.table import REWRITES
from tests.rewrite.goldens import FIXTURES, real_code_pairs
from tests.rewrite.repairs import assert_only_the_repaired_module_compiles, assert_only_the_repaired_module_runs

FOLDER = FIXTURES / "pointer-subscript"
REWRITE = REWRITES["pointer-subscript"]
STYLES = [before.stem.removeprefix("before_") for before, _ in real_code_pairs() if before.parent == FOLDER]
HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
LAUNCH = "\n\ndef op(x):\n    y = torch.empty_like(x)\n    k[(x.numel(),)](x, y, x.shape[-1])\n    return y\n"


def kernel(statement: str) -> str:
    """A kernel module whose kernel runs `statement` (over `x_ptr`, `y_ptr`, `n`, `pid`, `row`, `col`)."""
    body = "    pid = tl.program_id(0)\n    row = pid // n\n    col = pid % n\n" + f"    {statement}\n"
    return f"{HEADER}@triton.jit\ndef k(x_ptr, y_ptr, n):\n{body}{LAUNCH}"


def statement(source: str) -> str:
    return source.split("col = pid % n\n    ", 1)[1].split("\n", 1)[0]


def rewritten(source: str) -> str:
    return REWRITE.apply(RewriteContext(source, "k.py"))


def test_a_repair_right_after_elementwise_max_answers_tri032():
    from diagnose.rewrite.table import rewrites_for

    assert list(REWRITES)[:3] == ["constexpr-block-size", "elementwise-max", "pointer-subscript"], "repairs first"
    assert rewrites_for("TRI032") == ("pointer-subscript",)


@pytest.mark.parametrize(
    ("written", "becomes"),
    [
        ("x = x_ptr[pid]", "x = tl.load(x_ptr + pid)"),
        ("y_ptr[pid] = x_ptr[pid]", "tl.store(y_ptr + pid, tl.load(x_ptr + pid))"),
        ("y_ptr[pid] = tl.cos(x_ptr[pid])", "tl.store(y_ptr + pid, tl.cos(tl.load(x_ptr + pid)))"),
        ("y_ptr[row * n + col] = 1.0", "tl.store(y_ptr + (row * n + col), 1.0)"),
        ("y_ptr[row * n] = 1.0", "tl.store(y_ptr + row * n, 1.0)"),
        (
            "y_ptr[row] += x_ptr[pid] * 2.0",
            "tl.store(y_ptr + row, tl.load(y_ptr + row) + (tl.load(x_ptr + pid) * 2.0))",
        ),
        (
            "y_ptr[row] -= x_ptr[pid] - 1.0",
            "tl.store(y_ptr + row, tl.load(y_ptr + row) - (tl.load(x_ptr + pid) - 1.0))",
        ),
        ("y_ptr[row] *= 2.0", "tl.store(y_ptr + row, tl.load(y_ptr + row) * 2.0)"),
        ("y_ptr[x_ptr[pid]] = 0.0", "tl.store(y_ptr + tl.load(x_ptr + pid), 0.0)"),
        ("y_ptr[-row] = 0.0", "tl.store(y_ptr + -row, 0.0)"),
        (
            "y_ptr[pid] = x_ptr[pid] if n > 1 else x_ptr[0]",
            "tl.store(y_ptr + pid, tl.load(x_ptr + pid) if n > 1 else tl.load(x_ptr))",
        ),
    ],
    ids=[
        "read",
        "copy",
        "write-of-a-read",
        "sum-offset",
        "product-offset",
        "update",
        "update-of-a-difference",
        "update-of-a-number",
        "gather",
        "negative-offset",
        "conditional",
    ],
)
def test_a_subscript_becomes_a_load_or_a_store_of_the_same_element(written, becomes):
    assert statement(rewritten(kernel(written))) == becomes


def test_the_module_spelling_of_triton_language_is_kept():
    source = kernel("y_ptr[pid] = x_ptr[pid]").replace("tl", "lang")
    assert "lang.store(y_ptr + pid, lang.load(x_ptr + pid))" in rewritten(source)


def test_a_device_helper_is_repaired_too():
    helper = "@triton.jit\ndef first(p_ptr):\n    return p_ptr[0]\n\n\n"
    source = kernel("y_ptr[pid] = first(x_ptr)").replace("@triton.jit\ndef k(", helper + "@triton.jit\ndef k(", 1)
    pre = REWRITE.check(RewriteContext(source, "k.py"))
    assert pre.holds and pre.kernels == ("first", "k"), pre.reason
    assert "return tl.load(p_ptr)" in rewritten(source)


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        ("x = x_ptr[row, col]", "several indices or a slice"),
        ("y_ptr[:] = 0.0", "several indices or a slice"),
        ("y_ptr[row], y_ptr[col] = y_ptr[col], y_ptr[row]", "no single store"),
        ("y_ptr[row] = y_ptr[col] = 0.0", "no single store"),
        ("x = y_ptr[:, None] + x_ptr[None]", "no pointer parameter indexed like an array"),
        ("t = (x_ptr, y_ptr)\n    u = t[0]", "no pointer parameter indexed like an array"),
    ],
    ids=["multi-index", "slice", "swap", "chain", "block-indices", "local-tuple"],
)
def test_what_it_declines_or_leaves_alone(written, reason):
    with pytest.raises(NotApplicable, match=reason):
        rewritten(kernel(written))


def test_a_constexpr_tuple_may_be_indexed():
    source = kernel("x = SHAPE[0]").replace("def k(x_ptr, y_ptr, n)", "def k(x_ptr, y_ptr, n, SHAPE: tl.constexpr)")
    pre = REWRITE.check(RewriteContext(source, "k.py"))
    assert not pre.holds and "a constexpr may be indexed" in pre.reason


def test_a_tuple_parameter_may_be_indexed_and_a_pointer_is_known_by_its_loads():
    source = kernel("x = strides[0] + w[row]\n    tl.store(w + col, x)").replace(
        "def k(x_ptr, y_ptr, n)", "def k(x_ptr, y_ptr, n, strides, w)"
    )
    assert "x = strides[0] + tl.load(w + row)" in rewritten(source)


def test_a_host_function_is_not_a_kernel():
    source = kernel("x = tl.load(x_ptr + pid)") + "\n\ndef first(t):\n    return t[0]\n"
    pre = REWRITE.check(RewriteContext(source, "k.py"))
    assert not pre.holds and "no pointer parameter indexed like an array" in pre.reason


@pytest.mark.parametrize("name", ["before.py", *(f"before_{s}.py" for s in STYLES)])
def test_it_repairs_what_tri032_reports(name):
    """TRI032 and the rewrite read the same subscripts (`diagnose.pointer_subscripts`): every subscript
    triage reports is rewritten, and after the rewrite triage reports none."""
    from diagnose.triage import triage_source

    source = (FOLDER / name).read_text()
    reported = [f for f in triage_source(source, name, target="cuda:sm90") if f.code == "TRI032"]
    plan = REWRITE.check(RewriteContext(source, name)).plan
    assert reported and len(reported) == len(plan.reads) + len(plan.writes) + len(plan.updates)
    assert all(f.rewrites == ("pointer-subscript",) for f in reported)
    after = REWRITE.apply(RewriteContext(source, name))
    assert not [f for f in triage_source(after, name, target="cuda:sm90") if f.code == "TRI032"]


# The kernel modules' rewritten forms, checked against PyTorch on the interpreter: their originals cannot
# be the reference (the interpreter rejects `x_ptr[i]` too), so each style runs in a task file whose
# `Model` is PyTorch and whose `ModelNew` calls the module.
AGAINST_PYTORCH = {
    "module": (
        "args[0] * args[1][:3, None] + args[1][3:, None]",
        "channel_affine(args[0], args[1])",
        "torch.randn(2, 3, 64), torch.randn(6)",
    ),
    "autograd": ("(args[0] * args[0]).mean(-1)", "RowMeanSquareFunction.apply(args[0])", "torch.randn(6, 50)"),
}
# What the interpreter says of the originals: a read of a pointer, a write into one.
INTERPRETER_ERRORS = {
    "module": "'int' object is not iterable",
    "autograd": "does not support item assignment",
}


def test_every_style_is_checked_against_pytorch():
    assert sorted(AGAINST_PYTORCH) == sorted(INTERPRETER_ERRORS) == sorted(STYLES)
    assert sorted(json.loads((FOLDER / "calls.json").read_text())) == sorted(STYLES)


@pytest.mark.slow
@pytest.mark.parametrize(("style", "version"), [(s, v) for s in sorted(AGAINST_PYTORCH) for v in ("before", "after")])
def test_the_rewritten_module_runs_on_the_interpreter_and_the_original_does_not(tmp_path, style, version):
    assert_only_the_repaired_module_runs(
        FOLDER, tmp_path, style, version, AGAINST_PYTORCH[style], INTERPRETER_ERRORS[style]
    )


@pytest.mark.slow
@pytest.mark.parametrize("style", ["task", *STYLES])
def test_the_rewritten_kernels_compile_for_sm90_where_the_originals_do_not(tmp_path, cli, style):
    """Compiled offline for cuda:sm90 (`diagnose inspect`) at the fixture's call: the original fails on the
    subscript, the rewritten one compiles."""
    assert_only_the_repaired_module_compiles(FOLDER, tmp_path, cli, style, "CompilationError")
