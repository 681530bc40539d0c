from __future__ import annotations

import ast

from diagnose.triage.rule import Rule
from diagnose.triage.rules.common import keyword


class AutotuneEmptyKey(Rule):
    """## What it finds
    `@triton.autotune(configs=[...], key=[])` with more than one config.

    ## Why it is slow
    The autotuner benchmarks once per distinct value of the key arguments. With an empty key it tunes
    on the first call's shapes and reuses that config for every later shape: a config picked for a
    64x64 problem runs a 8192x8192 one, or the other way round.

    ## Example
    ```python
    @triton.autotune(configs=configs, key=[])
    ```

    ## Use instead
    ```python
    @triton.autotune(configs=configs, key=["M", "N", "K"])
    ```

    ## Known false positives
    None known in 2 findings on TritonBench (chunked cumsum kernels tuned over the chunk size with
    `key=[]`: the sequence length `T` is a constexpr, which recompiles the kernel per length but is
    not part of the autotuner's cache key, so the first length's config serves every later one).

    ## Targets
    cuda, hip, ascend.

    ## References
    `triton.autotune` documentation (`key`).
    """

    code = "TRI024"
    name = "autotune-empty-key"
    message = "autotune with `key=[]` tunes once and reuses that config for every shape"
    fix_title = "List the size arguments in key=[...]"

    def check(self, ctx):
        for kernel in ctx.kernels.values():
            if kernel.autotune is None:
                continue
            key = keyword(kernel.autotune, "key", 1)
            if isinstance(key, (ast.List, ast.Tuple)) and not key.elts and len(kernel.configs or ()) != 1:
                yield self.hit(key)
