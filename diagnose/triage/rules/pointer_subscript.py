from __future__ import annotations

import ast

from diagnose.pointer_subscripts import pointer_subscripts
from diagnose.triage.rule import Rule


class PointerSubscript(Rule):
    """## What it finds
    A pointer parameter indexed like a C array: `x = x_ptr[pid]`, `output_ptr[idx] = tl.cos(input_ptr[idx])`,
    `normalized *= weight_ptr[c]`, `input_ptr[n, c, :, :]`. A subscript of a parameter that is not a
    `tl.constexpr` counts when it writes, reads with several indices other than `None` and `:`, or reads
    one element of a pointer (a parameter named `..._ptr`, or one a load, store or atomic addresses).

    ## Why it is slow
    It does not compile: a pointer argument is a scalar, and Triton indexes nothing but blocks (with
    `None` and `:`). A read fails with "Did you forget to add @triton.jit ? (`_semantic` argument must
    be provided outside of JIT functions.)", a write with "NotImplementedError('__setitem__ is not
    supported in triton')", and the interpreter rejects both ("'int' object is not iterable", "'tensor'
    object does not support item assignment"). LLM-written first versions write it when they think of
    a kernel as a C loop (145 subscripts in 30 of the LLM-written TritonBench files).

    ## Example
    ```python
    @triton.jit
    def cos_kernel(input_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(0)
        for i in range(BLOCK_SIZE):
            idx = pid * BLOCK_SIZE + i
            if idx < n_elements:
                output_ptr[idx] = tl.cos(input_ptr[idx])
    ```

    ## Use instead
    ```python
                tl.store(output_ptr + idx, tl.cos(tl.load(input_ptr + idx)))
    ```
    (and then a block of elements per program: `tl.arange` and a mask, not a loop over scalars).

    ## Known false positives
    None known. A tuple parameter indexed with one element (`strides[0]`, `shape[d]`) compiles where the
    index is a constant and is not reported unless it is named `..._ptr` or addressed as a pointer; a
    block indexed with `None` and `:` (`x[:, None]`) and a constexpr tuple (`SHAPE[0]`) are never
    reported. Zero findings on FlagGems, Liger-Kernel, TritonBench-G, vLLM and unsloth.

    ## Targets
    cuda, hip, ascend.

    ## References
    `triton.language.load` and `triton.language.store` documentation; Triton's `tensor.__getitem__`
    (only `None` and `:` slices).
    """

    code = "TRI032"
    name = "pointer-subscript"
    message = "`{subscript}` indexes the pointer `{param}` like an array; compilation fails"
    fix_title = "Read with tl.load(p + i) and write with tl.store(p + i, v)"
    severity = "error"
    confidence = "high"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            for subscript in pointer_subscripts(kernel.node, kernel.qualname):
                yield self.hit(subscript, subscript=ast.unparse(subscript), param=subscript.value.id)
