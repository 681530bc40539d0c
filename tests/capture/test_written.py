"""Which kernel arguments are outputs nobody has written yet at launch (no value range is read from them)."""

from diagnose.capture.written import written_only


def row_max(x_ptr, out_ptr, n, BLOCK):
    cols = tl.arange(0, BLOCK)  # noqa: F821 - never run, only read
    x = tl.load(x_ptr + cols, mask=cols < n)  # noqa: F821
    tl.store(out_ptr + tl.program_id(0), tl.max(x, 0).to(out_ptr.dtype.element_ty))  # noqa: F821


def clamp_(x_ptr, n, BLOCK):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # noqa: F821
    x = tl.load(x_ptr + offs, mask=offs < n)  # noqa: F821
    tl.store(x_ptr + offs, tl.minimum(x, 1.0), mask=offs < n)  # noqa: F821


def through_helper(x_ptr, out_ptr, n):
    ptrs = out_ptr + tl.arange(0, 16)  # noqa: F821
    _write(ptrs, tl.load(x_ptr))  # noqa: F821
    tl.atomic_add(out_ptr, 1.0)  # noqa: F821


def test_a_pure_output_is_written_only():
    assert written_only(row_max) == {"out_ptr"}


def test_an_in_place_argument_is_read_too():
    assert written_only(clamp_) == frozenset()


def test_a_pointer_handed_to_a_helper_may_be_read():
    assert written_only(through_helper) == frozenset()
