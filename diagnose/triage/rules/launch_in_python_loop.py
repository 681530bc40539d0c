from __future__ import annotations

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
            if launch.loop is not None and launch.function is not None:
                yield self.hit(launch.node, secondary=(launch.loop,), kernel=launch.kernel)
