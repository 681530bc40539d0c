"""elementwise-max: the spellings of LLM-written first versions (`tl.max(x, 0.0)`, `tl.max(0, x)`, a clamp of
two, another alias of triton.language), the reductions it leaves alone, its agreement with TRI031, and the
point of it: the rewritten kernels run on the interpreter and compile for sm_90, where the originals fail
on both."""

from __future__ import annotations

import json

import pytest

from diagnose.rewrite.rewrite import NotApplicable, RewriteContext
from diagnose.rewrite.table import REWRITES
from tests.rewrite.goldens import FIXTURES, real_code_pairs
from tests.rewrite.repairs import assert_only_the_repaired_module_compiles, assert_only_the_repaired_module_runs

FOLDER = FIXTURES / "elementwise-max"
REWRITE = REWRITES["elementwise-max"]
STYLES = [before.stem.removeprefix("before_") for before, _ in real_code_pairs() if before.parent == FOLDER]
HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
LAUNCH = "\n\ndef op(x):\n    y = torch.empty_like(x)\n    k[(1,)](x, y, x.numel(), BLOCK=256)\n    return y\n"


def kernel(value: str) -> str:
    """A kernel module whose kernel stores `value` (an expression of the loaded block `x`)."""
    body = (
        "    offs = tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n"
        f"    tl.store(y_ptr + offs, {value}, mask=offs < n)\n"
    )
    return f"{HEADER}@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n{body}{LAUNCH}"


def stored(source: str) -> str:
    return source.split("tl.store(y_ptr + offs, ", 1)[1].rsplit(", mask=offs < n)", 1)[0]


def rewritten(source: str) -> str:
    return REWRITE.apply(RewriteContext(source, "k.py"))


def test_a_repair_right_after_constexpr_block_size_answers_tri031():
    from diagnose.rewrite.table import rewrites_for

    assert list(REWRITES)[:2] == ["constexpr-block-size", "elementwise-max"], "repairs come first"
    assert rewrites_for("TRI031") == ("elementwise-max",)


@pytest.mark.parametrize(
    ("written", "becomes"),
    [
        ("tl.max(x, 0.0)", "tl.maximum(x, 0.0)"),
        ("tl.max(0, x)", "tl.maximum(0, x)"),
        ("tl.min(x * 2.0, -128.0)", "tl.minimum(x * 2.0, -128.0)"),
        ("tl.max(-1, x - 1.0)", "tl.maximum(-1, x - 1.0)"),
        ('tl.min(x, float("inf"))', 'tl.minimum(x, float("inf"))'),
        ("tl.min(tl.max(x, 0.0), 127.0)", "tl.minimum(tl.maximum(x, 0.0), 127.0)"),
        ("tl.max(x, 0.0) + tl.sum(tl.max(x, 0), axis=0)", "tl.maximum(x, 0.0) + tl.sum(tl.max(x, 0), axis=0)"),
        ("triton.language.max(x, 1e-6)", "triton.language.maximum(x, 1e-6)"),
        ("tl.max(\n        x,\n        0.0,\n    )", "tl.maximum(\n        x,\n        0.0,\n    )"),
    ],
    ids=[
        "relu",
        "number-first",
        "negative-float",
        "negative-int-first",
        "float-call",
        "clamp",
        "beside-a-sum",
        "full-name",
        "multiline",
    ],
)
def test_the_call_is_renamed_with_its_arguments_as_they_were(written, becomes):
    assert stored(rewritten(kernel(written))) == becomes


def test_the_module_spelling_of_triton_language_is_kept():
    source = kernel("tl.min(tl.max(x, 0.0), 6.0)").replace("tl", "lang")
    assert "lang.minimum(lang.maximum(x, 0.0), 6.0)" in rewritten(source)


def test_a_device_helper_is_repaired_too():
    helper = "@triton.jit\ndef relu(v):\n    return tl.max(v, 0.0)\n\n\n"
    source = kernel("relu(x)").replace("@triton.jit\ndef k(", helper + "@triton.jit\ndef k(", 1)
    pre = REWRITE.check(RewriteContext(source, "k.py"))
    assert pre.holds and pre.kernels == ("relu",), pre.reason
    assert "return tl.maximum(v, 0.0)" in rewritten(source)


@pytest.mark.parametrize(
    "value",
    [
        "tl.max(x, 0)",
        "tl.max(x, axis=0)",
        "tl.min(x, -1)",
        "tl.max(x, 0.0, propagate_nan=True)",
        "tl.max(x)",
        "tl.maximum(x, 0.0)",
    ],
    ids=["literal-axis", "keyword-axis", "negative-axis", "keyword", "one-argument", "already-elementwise"],
)
def test_reductions_and_other_calls_are_left_alone(value):
    with pytest.raises(NotApplicable, match="no tl.max/tl.min called with two values"):
        rewritten(kernel(value))


def test_a_host_function_is_not_a_kernel():
    source = kernel("x") + "\n\ndef clip(t):\n    return tl.max(t, 0.0)\n"
    pre = REWRITE.check(RewriteContext(source, "k.py"))
    assert not pre.holds and "no tl.max/tl.min called with two values" in pre.reason


@pytest.mark.parametrize("name", ["before.py", *(f"before_{s}.py" for s in STYLES)])
def test_it_repairs_what_tri031_reports(name):
    """TRI031 and the rewrite read the same calls (`diagnose.extrema`): every call triage reports is
    rewritten, and after the rewrite triage reports none."""
    from diagnose.triage import triage_source

    source = (FOLDER / name).read_text()
    reported = [f for f in triage_source(source, name, target="cuda:sm90") if f.code == "TRI031"]
    plan = REWRITE.check(RewriteContext(source, name)).plan
    assert reported and len(reported) == len(plan.calls)
    assert all(f.rewrites == ("elementwise-max",) for f in reported)
    after = REWRITE.apply(RewriteContext(source, name))
    assert not [f for f in triage_source(after, name, target="cuda:sm90") if f.code == "TRI031"]


# The kernel modules' rewritten forms, checked against PyTorch on the interpreter: their originals cannot
# be the reference (the interpreter rejects `tl.max(x, 0.0)` too), so each style runs in a task file whose
# `Model` is PyTorch and whose `ModelNew` calls the module.
AGAINST_PYTORCH = {
    "module": ("torch.clamp(args[0] * (1.0 / 0.01), 0.0, 127.0)", "relu_clamp(args[0], 0.01)", "torch.randn(3000)"),
    "autograd": (
        "torch.relu(0.5 - (args[0].amax(-1, keepdim=True) - args[0]))",
        "RowHingeFunction.apply(args[0], 0.5)",
        "torch.randn(6, 50)",
    ),
}
# What the interpreter says of the originals: `tl.max(x, 0.0)` asks for a float axis, `tl.max(0.0, x)`
# reduces a number.
INTERPRETER_ERRORS = {
    "module": "cannot be interpreted as an integer",
    "autograd": "object has no attribute",
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
    reduction, the rewritten one compiles."""
    assert_only_the_repaired_module_compiles(FOLDER, tmp_path, cli, style, "CompilationError")
