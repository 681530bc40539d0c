from __future__ import annotations

from diagnose.triage.rule import Rule

MIN_LAUNCHES = 3


class UnfusedElementwiseLaunches(Rule):
    """## What it finds
    Three or more elementwise kernels launched one after another from the same launcher or
    `ModelNew.forward`.

    ## Why it is slow
    Each elementwise kernel reads its inputs from memory and writes its output back, and the next
    one reads that output again. Fused into one kernel the intermediates stay in registers: for a
    chain of k memory-bound ops the traffic drops by roughly a factor of k, and k-1 launch latencies
    disappear.

    ## Example
    ```python
    scale_kernel[grid](x, t1, n, BLOCK=1024)
    bias_kernel[grid](t1, b, t2, n, BLOCK=1024)
    relu_kernel[grid](t2, out, n, BLOCK=1024)
    ```

    ## Use instead
    ```python
    scale_bias_relu_kernel[grid](x, b, out, n, BLOCK=1024)
    ```

    ## Targets
    cuda, hip, ascend.

    ## References
    Triton tutorial 01-vector-add; KernelBench level-2 fusion tasks.
    """

    code = "TRI011"
    name = "unfused-elementwise-launches"
    message = "{n} elementwise kernels launched in sequence in `{function}`; each round-trips its data through memory"
    fix_title = "Fuse the elementwise kernels into one"

    def check(self, ctx):
        for fn in ctx.hot_functions:
            chain = [launch for launch in fn.launches
                     if launch.loop is None and ctx.kernels[launch.kernel].is_elementwise]
            if len(chain) >= MIN_LAUNCHES:
                third = chain[MIN_LAUNCHES - 1]
                others = [launch.node for launch in chain if launch is not third]
                yield self.hit(third.node, secondary=others, n=len(chain), function=fn.node.name)
