"""pointer-subscript: a pointer indexed like an array is read with `tl.load` and written with `tl.store`:
`output_ptr[idx] = tl.cos(input_ptr[idx])` becomes `tl.store(output_ptr + idx, tl.cos(tl.load(input_ptr + idx)))`."""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from diagnose import syntax
from diagnose.pointer_subscripts import element_index, pointer_subscripts
from diagnose.rewrite.edit import expression, is_operand, replace
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.source import Kernel, code, kernels, language_resolver, triton_language, walk

# Operators that bind tighter than `+`: an offset written with them needs no parentheses after `p + `.
TIGHTER = (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power, cst.MatrixMultiply)


@dataclass(frozen=True)
class PointerPlan:
    """The reads to load, the assignments to store and the augmented assignments to load and store, and
    how the module spells triton.language."""

    reads: tuple[cst.Subscript, ...]
    writes: tuple[cst.Assign, ...]
    updates: tuple[cst.AugAssign, ...]
    language: str


class PointerSubscript(Rewrite):
    """## What it changes
    In every `@triton.jit` function of the module, a pointer parameter indexed like an array with one
    index (`diagnose.pointer_subscripts`: not a constexpr, named `..._ptr` or addressed by a load or
    store elsewhere, or written through) becomes a pointer offset by that index: a read `p[i]` becomes
    `tl.load(p + i)`, a write `p[i] = v` becomes `tl.store(p + i, v)` and an augmented write
    `p[i] += v` becomes `tl.store(p + i, tl.load(p + i) + v)`. An index looser than
    `+` is parenthesised (`p[a + b]` becomes `tl.load(p + (a + b))`, `p[row * n + col]` too;
    `p[row * n]` becomes `tl.load(p + row * n)`, `p[0]` becomes `tl.load(p)`). The module's spelling
    of triton.language is kept; nothing else changes.

    ## When it is valid
    Every such subscript of the module has exactly one index that is neither a slice nor a tuple, and
    every write is the only target of its assignment. `input_ptr[n, c, :, :]` is declined (the strides
    of the axes are unknown), as is `a_ptr[i], a_ptr[j] = a_ptr[j], a_ptr[i]` (a swap needs an order of
    stores); a constexpr parameter (a tuple may be indexed) and a local name are not read as pointers.

    ## Why it is faster
    It is needed, not faster: a pointer argument is a scalar and Triton indexes nothing but blocks, so
    a read does not compile on Triton 3.6 ("Did you forget to add @triton.jit ? (`_semantic` argument
    must be provided outside of JIT functions.)"), nor does a write ("NotImplementedError('__setitem__
    is not supported in triton')"), and the interpreter rejects both ("'int' object is not iterable",
    "'tensor' object does not support item assignment"). LLM-written first versions write it when they
    think of a kernel as a C loop (30 of 801 TritonBench files; 11 repaired, most of the others index
    with several indices). The repaired kernel still moves one element at a time: block-per-program
    and the other rewrites take it from there.

    ## Safety
    Safe: `p + i` is the address of `p[i]`, the element the subscript was written to read or write.

    ## Answers
    TRI032 (pointer-subscript). A repair: early in the table, since the other rewrites' candidates
    compile the kernel.

    ## References
    `triton.language.load` and `triton.language.store` documentation; Triton's `tensor.__getitem__`
    (only `None` and `:` slices).
    """

    id = "pointer-subscript"
    title = "Read and write a pointer indexed like an array with `tl.load` / `tl.store`"
    codes = ("TRI032",)

    def precondition(self, ctx: RewriteContext) -> Precondition:
        tree, _ = syntax.parse_any(ctx.source)
        language = triton_language(tree)
        resolve = language_resolver(language)
        reads: list[cst.Subscript] = []
        writes: list[cst.Assign] = []
        updates: list[cst.AugAssign] = []
        found: dict[str, int] = {}
        for name, kernel in kernels(ctx.module).items():
            subscripts = _pointer_subscripts(kernel, resolve)
            if subscripts is None:
                return Precondition.no(f"cannot pair the subscripts of {name} (unparsed)")
            assigned = {n.targets[0].target: n for n in walk(kernel.node) if isinstance(n, cst.Assign)}
            augmented = {n.target: n for n in walk(kernel.node) if isinstance(n, cst.AugAssign)}
            for written, node in subscripts:
                if element_index(written) is None:
                    return Precondition.no(
                        f"`{ast.unparse(written)}` in {name} indexes a pointer with several indices or a slice:"
                        " the strides are unknown"
                    )
                if isinstance(written.ctx, ast.Load):
                    reads.append(node)
                elif node in augmented:
                    updates.append(augmented[node])
                elif node in assigned and len(assigned[node].targets) == 1:
                    writes.append(assigned[node])
                else:
                    return Precondition.no(
                        f"`{ast.unparse(written)}` in {name} is written in a tuple, a chain, a loop target"
                        " or a del: no single store"
                    )
                found[name] = found.get(name, 0) + 1
        if not found:
            return Precondition.no("no pointer parameter indexed like an array (a constexpr may be indexed)")
        shown = "; ".join(f"{name} ({n})" for name, n in found.items())
        plan = PointerPlan(tuple(reads), tuple(writes), tuple(updates), language)
        return Precondition.yes(f"loads and stores through pointers in {shown}", tuple(found), plan)

    def transform(self, ctx: RewriteContext, plan: PointerPlan) -> str:
        # Functions of the node with its children already rewritten: an index or a value may read too.
        load, store = plan.language + ".load", plan.language + ".store"

        def read(new: cst.Subscript) -> cst.BaseExpression:
            return expression(f"{load}({_address(new)})")

        def write(new: cst.Assign) -> cst.Expr:
            value = new.value
            text = f"({code(value)})" if isinstance(value, cst.Tuple) and not value.lpar else code(value)
            return cst.Expr(expression(f"{store}({_address(new.targets[0].target)}, {text})"))

        def update(new: cst.AugAssign) -> cst.Expr:
            address = _address(new.target)
            operator = code(new.operator).strip()[:-1]  # `+=` is `+`
            value = (
                code(new.value) if is_operand(new.value) or isinstance(new.value, cst.Float) else f"({code(new.value)})"
            )
            return cst.Expr(expression(f"{store}({address}, {load}({address}) {operator} {value})"))

        mapping = {
            **{node: read for node in plan.reads},
            **{node: write for node in plan.writes},
            **{node: update for node in plan.updates},
        }
        return replace(ctx.module, mapping).code


def _pointer_subscripts(kernel: Kernel, resolve) -> list[tuple[ast.Subscript, cst.Subscript]] | None:
    """The kernel's pointer subscripts as Python's parser reads them (the reading TRI032 has too), each
    with its libcst node: both trees list every subscript in source order, an outer one first."""
    fn = syntax.parse(code(kernel.node)).body[0]
    every = sorted(
        (n for n in ast.walk(fn) if isinstance(n, ast.Subscript)),
        key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset),
    )
    nodes = [n for n in walk(kernel.node) if isinstance(n, cst.Subscript)]
    if len(every) != len(nodes):
        return None
    pointer = {id(n) for n in pointer_subscripts(fn, resolve)}
    return [(a, c) for a, c in zip(every, nodes) if id(a) in pointer]


def _address(subscript: cst.Subscript) -> str:
    """`p + i` for `p[i]`, the offset parenthesised where it binds looser than `+`; `p` for `p[0]`."""
    index = subscript.slice[0].slice.value
    if isinstance(index, cst.Integer) and index.evaluated_value == 0:
        return code(subscript.value)
    tight = isinstance(index, cst.UnaryOperation) or (
        isinstance(index, cst.BinaryOperation) and isinstance(index.operator, TIGHTER)
    )
    offset = code(index) if is_operand(index) or tight else f"({code(index)})"
    return f"{code(subscript.value)} + {offset}"
