"""One answer to "is this function a Triton kernel", whichever layer asks (task loading, triage,
the rewrites): `diagnose.jit.is_triton_jit` over the decorator's dotted name."""

from __future__ import annotations

import ast
import doctest

import libcst as cst

from diagnose import jit
from diagnose.rewrite.source import kernels as rewrite_kernels
from diagnose.targets import lookup
from diagnose.task.kernelbench import jit_kernels
from diagnose.task.module import jit_functions
from diagnose.triage.context import build_context

SOURCE = """
import functools

import numba
import torch
import triton
import triton.language as tl
from triton import jit


@triton.jit
def plain(x_ptr):
    pass


@triton.jit(do_not_specialize=["n"])
def called(x_ptr, n):
    pass


@jit
def bare(x_ptr):
    pass


@triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % 64 == 0})
@triton.jit
def tuned(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pass


@numba.jit
def other_compiler(x):
    return x


@torch.jit.script
def scripted(x):
    return x


def assigned(x_ptr, n, SOFTCAP: tl.constexpr):
    pass


# made a kernel by assignment after its definition, as unsloth writes its cross entropy and RoPE kernels
assigned = triton.jit(assigned)
assigned = triton.heuristics({"SOFTCAP": lambda args: bool(args["SOFTCAP"])})(assigned)


def cached(x):
    return x


cached = functools.lru_cache(cached)


def host(x):
    plain[(1,)](x)
"""

KERNELS = {"plain", "called", "bare", "tuned", "assigned"}


def test_the_docstring_examples_hold():
    assert doctest.testmod(jit).failed == 0


def test_task_loading_triage_and_rewrites_find_the_same_kernels():
    tree = ast.parse(SOURCE)
    assert set(jit_functions(tree)) == KERNELS
    assert set(jit_kernels(tree)) == KERNELS
    assert set(rewrite_kernels(cst.parse_module(SOURCE))) == KERNELS
    assert set(build_context(SOURCE, "k.py", lookup("cuda:sm90")).kernels) == KERNELS


def test_wrappers_applied_by_assignment_count_as_decorators():
    assert build_context(SOURCE, "k.py", lookup("cuda:sm90")).kernels["assigned"].heuristics == {"SOFTCAP"}
    kernel = rewrite_kernels(cst.parse_module(SOURCE))["assigned"]
    assert kernel.autotuned and [d.split("(")[0] for d in kernel.decorators] == ["triton.heuristics", "triton.jit"]
    wrapped = jit.wrapped_by_assignment(ast.parse(SOURCE))
    assert [ast.unparse(w).split("(")[0] for w in wrapped["assigned"]] == ["triton.heuristics", "triton.jit"]
    assert [ast.unparse(w) for w in wrapped["cached"]] == ["functools.lru_cache"]
