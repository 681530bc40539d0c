"""A launch through a local name bound to one of two kernels (`fx = _offset_forward if offset else
_plain_forward; fx[grid](...)`, unsloth's RMS norm): the statement is a launch site of both kernels, each
naming the other; a rewrite may change only what is the launch's own (its warps), because only the
kernel the checked call takes is ever verified."""

from __future__ import annotations

import pytest

from diagnose.rewrite.rewrite import NotApplicable
from diagnose.rewrite.launches import launch_sites
from diagnose.rewrite.table import REWRITES
from tests.rewrite.goldens import FIXTURES, context

FOLDER = FIXTURES / "launch-options"


def test_the_statement_is_a_launch_of_each_kernel_the_name_may_hold():
    sites = launch_sites(context(FOLDER, "before_alias.py").module)
    assert [(s.kernel, s.shares) for s in sites] == [
        ("_offset_forward", ("_plain_forward",)),
        ("_plain_forward", ("_offset_forward",)),
    ]
    assert sites[0].statement is sites[1].statement


def test_the_launch_options_may_change_and_what_the_kernels_are_given_may_not():
    changed = REWRITES["launch-options"].apply(context(FOLDER, "before_alias.py"))
    assert "num_warps=min(num_warps * 2, 32)" in changed
    with pytest.raises(NotApplicable, match="may launch _plain_forward too"):
        REWRITES["rows-per-program"].apply(context(FOLDER, "before_alias.py"))


def test_a_name_bound_to_one_kernel_is_that_kernel():
    source = context(FOLDER, "before_alias.py").source.replace(
        "fx = _offset_forward if offset else _plain_forward", "fx = _plain_forward"
    )
    from diagnose.rewrite.rewrite import RewriteContext

    sites = launch_sites(RewriteContext(source).module)
    assert [(s.kernel, s.shares) for s in sites] == [("_plain_forward", ())]
