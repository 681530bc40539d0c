from __future__ import annotations

import ast

from diagnose.triage.rule import Rule


class LaunchInPythonLoop(Rule):
    """## What it finds
    A kernel launched inside a Python `for`/`while` loop on the host.

    ## Why it is slow
    Every iteration pays a launch (several microseconds of Python and driver work) and the kernels
    run one after another, each with a grid too small to fill the device. One launch whose grid has
    an extra axis for the loop index does the same work in parallel.

    ## Example
    ```python
    for b in range(batch):
        softmax_kernel[(n_rows,)](x[b], out[b], n_cols, BLOCK=BLOCK)
    ```

    ## Use instead
    ```python
    softmax_kernel[(n_rows, batch)](x, out, n_cols, x.stride(0), BLOCK=BLOCK)  # b = tl.program_id(1)
    ```

    ## Known false positives
    Measured on 20 findings (FlagGems, Liger-Kernel, TritonBench); one was a batch loop around a
    1-D launch. Now accepted: passes that feed each other (radix-sort passes that swap or alternate
    their input and output buffers: `src, dst = dst, src`, `x if p % 2 == 0 else y`), sweeps over a
    written-out list of settings (a benchmark looping over configs), and loops around a launch
    whose grid already has two or more axes, where the loop walks passes, memory-bounding chunks
    of batch-heads, or groups of four tensors per launch (cat/stack), not a batch one more axis
    would absorb. Still misread: a true batch loop around a launch that already has a 2-D grid is
    no longer flagged (lost recall), and a multi-pass loop whose passes hand data over through a
    buffer that is not re-bound (an in-place update) is still flagged.

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton `kernel[grid]` launch documentation; CUDA launch-overhead guidance.
    """

    code = "TRI012"
    name = "launch-in-python-loop"
    message = "`{kernel}` is launched once per iteration of a Python loop; move the loop into the grid"
    fix_title = "Add a grid axis for the loop index and launch once"

    def check(self, ctx):
        for launch in ctx.launches:
            if launch.loop is None or launch.function is None:
                continue
            if _literal_sweep(launch.loop) or _multi_axis_grid(launch) or _ping_pong(ctx, launch):
                continue
            yield self.hit(launch.node, secondary=(launch.loop,), kernel=launch.kernel)


def _literal_sweep(loop) -> bool:
    """`for config in [{...}, {...}]`: a sweep over written-out settings (benchmarking, tuning),
    not a batch the grid could cover."""
    return isinstance(loop, ast.For) and isinstance(loop.iter, (ast.List, ast.Tuple, ast.Set, ast.Dict))


def _grid_expr(launch) -> ast.AST | None:
    grid = launch.grid
    if isinstance(grid, ast.Name) and launch.function is not None:
        found = [
            n.value
            for n in ast.walk(launch.function)
            if isinstance(n, ast.Assign)
            and n.lineno <= launch.node.lineno
            and any(isinstance(t, ast.Name) and t.id == grid.id for t in n.targets)
        ]
        grid = found[-1] if found else grid
    if isinstance(grid, ast.Lambda):
        grid = grid.body
    return grid


def _multi_axis_grid(launch) -> bool:
    """The launch already spreads its work over two or more grid axes: the loop around it walks
    passes, chunks or groups, not a batch that one more axis would absorb."""
    grid = _grid_expr(launch)
    return (
        isinstance(grid, (ast.Tuple, ast.List))
        and len(grid.elts) >= 2
        and not (len(grid.elts) == 3 and all(isinstance(e, ast.Constant) and e.value == 1 for e in grid.elts[1:]))
    )


def _ping_pong(ctx, launch) -> bool:
    """Passes that feed each other: a tensor passed to the launch is re-bound in the loop to another
    launch argument or chosen by the iteration (`src, dst = dst, src`; `x if p % 2 else y`)."""
    args = {
        n.id
        for a in (*launch.node.args, *(k.value for k in launch.node.keywords))
        for n in ast.walk(a)
        if isinstance(n, ast.Name)
    }
    for node in ast.walk(launch.loop):
        if not isinstance(node, ast.Assign):
            continue
        bound = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        if bound & args and (
            isinstance(node.value, ast.IfExp)
            or (used & args) - bound
            or isinstance(node.value, ast.Tuple)
            and used & bound
        ):
            return True
    return False
