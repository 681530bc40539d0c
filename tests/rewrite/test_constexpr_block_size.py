"""constexpr-block-size: the idioms of LLM-written first versions (a defaulted block, another annotation, a
helper that sizes the block, another alias of triton.language), its declines, its agreement with TRI028,
and the point of it: the rewritten kernels run on the interpreter and compile for sm_90, where the
originals fail on both ("arange's arguments must be of type tl.constexpr")."""

from __future__ import annotations

import json

import pytest

from diagnose.rewrite.rewrite import NotApplicable, RewriteContext
from diagnose.rewrite.table import REWRITES
from tests.rewrite.goldens import FIXTURES, real_code_pairs
from tests.rewrite.repairs import assert_only_the_repaired_module_compiles, assert_only_the_repaired_module_runs

FOLDER = FIXTURES / "constexpr-block-size"
REWRITE = REWRITES["constexpr-block-size"]
STYLES = [before.stem.removeprefix("before_") for before, _ in real_code_pairs() if before.parent == FOLDER]
HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
LAUNCH = "\n\ndef op(x):\n    y = torch.empty_like(x)\n    k[(1,)](x, y, x.numel(), {block})\n    return y\n"


def kernel(signature: str, body: str = "    offs = tl.arange(0, BLOCK)\n", block: str = "256") -> str:
    store = "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n"
    return f"{HEADER}@triton.jit\ndef k({signature}):\n{body}{store}{LAUNCH.format(block=block)}"


def rewritten(source: str) -> str:
    return REWRITE.apply(RewriteContext(source, "k.py"))


def signature(source: str, name: str = "k") -> str:
    return source.split(f"def {name}(", 1)[1].split("):", 1)[0]


def test_the_first_rewrite_of_the_table_answers_tri028():
    from diagnose.rewrite.table import rewrites_for

    assert next(iter(REWRITES)) == "constexpr-block-size", "a repair: the other rewrites compile the kernel"
    assert rewrites_for("TRI028") == ("constexpr-block-size",)


@pytest.mark.parametrize(
    ("written", "becomes"),
    [
        ("x_ptr, y_ptr, n, BLOCK", "x_ptr, y_ptr, n, BLOCK: tl.constexpr"),
        ("x_ptr, y_ptr, n, BLOCK=1024", "x_ptr, y_ptr, n, BLOCK: tl.constexpr = 1024"),
        ("x_ptr, y_ptr, n, BLOCK: int", "x_ptr, y_ptr, n, BLOCK: tl.constexpr"),
        ("x_ptr, y_ptr, n, BLOCK: int = 128", "x_ptr, y_ptr, n, BLOCK: tl.constexpr = 128"),
    ],
)
def test_the_parameter_is_annotated_whatever_it_had(written, becomes):
    assert signature(rewritten(kernel(written))) == becomes


@pytest.mark.parametrize("block", ["256", "BLOCK=256", "triton.next_power_of_2(x.numel())", "x.shape[0]"])
def test_any_host_value_will_do_positional_keyword_or_computed(block):
    assert signature(rewritten(kernel("x_ptr, y_ptr, n, BLOCK", block=block))).endswith("BLOCK: tl.constexpr")


def test_the_module_spelling_of_triton_language_is_kept():
    source = kernel("x_ptr, y_ptr, n, BLOCK").replace("import triton.language as tl", "import triton.language as lang")
    source = source.replace("tl.", "lang.")
    assert signature(rewritten(source)) == "x_ptr, y_ptr, n, BLOCK: lang.constexpr"


def test_a_shape_of_zeros_and_full_sizes_a_block_too():
    body = "    offs = tl.arange(0, 256)\n    acc = tl.zeros([ROWS, BLOCK], dtype=tl.float32) + tl.full((ROWS, 1), 1.0, tl.float32)\n"
    new = rewritten(kernel("x_ptr, y_ptr, n, ROWS, BLOCK", body))
    assert signature(new) == "x_ptr, y_ptr, n, ROWS: tl.constexpr, BLOCK: tl.constexpr"


def test_a_parameter_that_only_reaches_a_helper_s_block_is_annotated_with_the_helper_s():
    source = (FOLDER / "before_autograd.py").read_text()
    pre = REWRITE.check(RewriteContext(source, "rms.py"))
    assert pre.holds and pre.kernels == ("_rms_scale_forward", "_load_row"), pre.reason
    new = REWRITE.apply(RewriteContext(source, "rms.py"))
    assert signature(new, "_load_row").endswith("BLOCK_SIZE: tl.constexpr")
    # the kernel's own arange aside, it needs the annotation for the helper's
    only_helper = source.replace("    col_offsets = tl.arange(0, BLOCK_SIZE)\n    tl.store(", "    tl.store(")
    only_helper = only_helper.replace("+ col_offsets, x * rstd, mask=col_offsets < n_cols)", ", tl.sum(x * rstd, 0))")
    new = REWRITE.apply(RewriteContext(only_helper, "rms.py"))
    assert signature(new, "_rms_scale_forward").endswith("BLOCK_SIZE: tl.constexpr")


def test_a_string_annotation_already_counts():
    with pytest.raises(NotApplicable, match="no parameter sizes a block"):
        rewritten(kernel('x_ptr, y_ptr, n, BLOCK: "tl.constexpr"'))


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (
            kernel("x_ptr, y_ptr, n, BLOCK", "    BLOCK = BLOCK * 2\n    offs = tl.arange(0, BLOCK)\n"),
            "is assigned in k",
        ),
        (
            kernel(
                "x_ptr, y_ptr, n, BLOCK", "    for BLOCK in range(2):\n        pass\n    offs = tl.arange(0, BLOCK)\n"
            ),
            "is assigned",
        ),
        (kernel("x_ptr, y_ptr, n, BLOCK", block="torch.tensor(256)"), "passes a tensor for BLOCK"),
        (
            kernel("x_ptr, y_ptr, n, BLOCK").replace("@triton.jit", '@triton.jit(do_not_specialize=["BLOCK"])'),
            "do_not_specialize",
        ),
        (kernel("x_ptr, y_ptr, n, BLOCK").split("\n\ndef op")[0] + "\n", "not launched from any function"),
    ],
    ids=["assigned", "loop-target", "tensor", "do-not-specialize", "not-launched"],
)
def test_declines_with_a_reason(source, reason):
    pre = REWRITE.check(RewriteContext(source, "k.py"))
    assert not pre.holds and reason in pre.reason, pre.reason


@pytest.mark.parametrize("name", ["before.py", *(f"before_{s}.py" for s in STYLES)])
def test_it_annotates_what_tri028_reports(name):
    """TRI028 and the rewrite read the same parameters (`diagnose.blocks`): every parameter triage
    reports is annotated, and after the rewrite triage reports none."""
    from diagnose.triage import triage_source

    source = (FOLDER / name).read_text()
    reported = {f.message.split("`")[1] for f in triage_source(source, name, target="cuda:sm90") if f.code == "TRI028"}
    plan = REWRITE.check(RewriteContext(source, name)).plan
    assert reported and reported <= {p for _, p in plan.params}
    after = REWRITE.apply(RewriteContext(source, name))
    assert not [f for f in triage_source(after, name, target="cuda:sm90") if f.code == "TRI028"]


# The kernel modules' rewritten forms, checked against PyTorch on the interpreter: their originals cannot
# be the reference (the interpreter rejects a plain parameter in `tl.arange` too), so each style runs in
# a task file whose `Model` is PyTorch and whose `ModelNew` calls the module.
AGAINST_PYTORCH = {
    "module": ("args[0] + 0.5 * args[1]", "scaled_add(*args, 0.5)", "torch.randn(3000), torch.randn(3000)"),
    "autograd": (
        "args[0] * torch.rsqrt(args[0].pow(2).mean(-1, keepdim=True) + 1e-6)",
        "RMSScaleFunction.apply(args[0], 1e-6)",
        "torch.randn(6, 50)",
    ),
    "autotuned": ("torch.clamp(args[0], -0.5, 0.5)", "clamp(args[0], -0.5, 0.5)", "torch.randn(1000)"),
}


def test_every_style_is_checked_against_pytorch():
    assert sorted(AGAINST_PYTORCH) == sorted(STYLES)
    assert sorted(json.loads((FOLDER / "calls.json").read_text())) == sorted(STYLES)


@pytest.mark.slow
@pytest.mark.parametrize(("style", "version"), [(s, v) for s in sorted(AGAINST_PYTORCH) for v in ("before", "after")])
def test_the_rewritten_module_runs_on_the_interpreter_and_the_original_does_not(tmp_path, style, version):
    assert_only_the_repaired_module_runs(
        FOLDER, tmp_path, style, version, AGAINST_PYTORCH[style], "must be of type tl.constexpr"
    )


@pytest.mark.slow
@pytest.mark.parametrize("style", ["task", *STYLES])
def test_the_rewritten_kernels_compile_for_sm90_where_the_originals_do_not(tmp_path, cli, style):
    """Compiled offline for cuda:sm90 (`diagnose inspect`) at the fixture's call: the original fails on the
    constexpr, the rewritten one compiles."""
    assert_only_the_repaired_module_compiles(FOLDER, tmp_path, cli, style, "must be of type tl.constexpr")
