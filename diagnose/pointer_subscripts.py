"""Which subscripts of a `@triton.jit` function index a pointer parameter like a C array.

LLM-written first versions read and write a pointer as an array: `x = x_ptr[pid]`,
`output_ptr[idx] = tl.cos(input_ptr[idx])`, `normalized *= weight_ptr[c]`. Triton compiles neither: a
read fails with "Did you forget to add @triton.jit ? (`_semantic` argument must be provided outside of
JIT functions.)" and a write with "NotImplementedError('__setitem__ is not supported in triton')"; the
interpreter (`TRITON_INTERPRET=1`) rejects them too ("'int' object is not iterable", "'tensor' object
does not support item assignment"). A subscript of a parameter that is not a `tl.constexpr` counts
when it writes (nothing in Triton takes an item assignment), reads with several indices other than `None`
and `:` (a block takes only those, `x[:, None]`; a tuple takes one index), or reads one element of a
pointer: a parameter named `..._ptr` or one a load, store or atomic addresses (`tl.load(x + offs)`). A
tuple parameter indexed with one element (`strides[0]`, `shape[d]`) compiles where the index is a
constant, and is not read as a pointer. Triage's TRI032 (pointer-subscript) reports such subscripts and
the `pointer-subscript` rewrite makes them loads and stores; both read them here (`resolve`: a name to
its dotted name, `tl.constexpr` to `triton.language.constexpr`).

    >>> import ast
    >>> from diagnose.syntax import parse
    >>> resolve = lambda f: ast.unparse(f).replace("tl.", "triton.language.")
    >>> source = "def k(x_ptr, y_ptr, v, S: tl.constexpr):\\n    y_ptr[v[0]] = x_ptr[S[0]] + v[:, None] + v[1, 2]"
    >>> [ast.unparse(s) for s in pointer_subscripts(parse(source).body[0], resolve)]
    ['y_ptr[v[0]]', 'x_ptr[S[0]]', 'v[1, 2]']
"""

from __future__ import annotations

import ast

from diagnose.blocks import LANGUAGE, Resolve, constexpr_params


def pointer_subscripts(fn: ast.FunctionDef, resolve: Resolve) -> list[ast.Subscript]:
    """The subscripts of `fn` that index a parameter like an array, in source order (an outer one before
    those in its index)."""
    args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    params = {a.arg for a in args} - constexpr_params(fn, resolve)
    pointers = {p for p in params if p.lower().endswith("ptr")} | (_addressed(fn, resolve) & params)
    found = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Subscript)
        and isinstance(n.value, ast.Name)
        and n.value.id in params
        and (not isinstance(n.ctx, ast.Load) or _element_of(n, pointers))
    ]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def element_index(subscript: ast.Subscript) -> ast.expr | None:
    """The index of a subscript written with one index that is neither a slice nor a tuple (`p[i]`,
    `p[row * n + col]`): an element's offset from the pointer. None for `p[n, c]` or `p[:]`, whose
    strides are unknown."""
    index = subscript.slice
    return None if isinstance(index, (ast.Slice, ast.Tuple)) else index


def _element_of(subscript: ast.Subscript, pointers: set[str]) -> bool:
    """Whether a read indexes what neither a block nor a tuple can take: several indices other than
    `None` and `:`, or one index into a pointer (a tuple parameter, `strides[0]`, may be indexed)."""
    if _block_index(subscript.slice):
        return False
    return isinstance(subscript.slice, ast.Tuple) or subscript.value.id in pointers


def _addressed(fn: ast.FunctionDef, resolve: Resolve) -> set[str]:
    """Names a load, store or atomic of `fn` addresses through: the base of `x + offsets`."""
    out = set()
    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
        name = resolve(call.func) or ""
        if name.removeprefix(LANGUAGE) in ("load", "store") or name.startswith(LANGUAGE + "atomic_"):
            address = next((k.value for k in call.keywords if k.arg == "pointer"), call.args[0] if call.args else None)
            while isinstance(address, ast.BinOp) and isinstance(address.op, ast.Add):
                address = address.left
            if isinstance(address, ast.Name):
                out.add(address.id)
    return out


def _block_index(index: ast.expr) -> bool:
    """`None`, `:` or a tuple of them: how a block is indexed (a new axis, a whole axis)."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(_whole_axis(p) or (isinstance(p, ast.Constant) and p.value is None) for p in parts)


def _whole_axis(index: ast.expr) -> bool:
    return isinstance(index, ast.Slice) and index.lower is None and index.upper is None and index.step is None
