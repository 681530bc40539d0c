"""The device's core count, asked at run time by a helper function a rewrite adds before the launching
function (or its class).

A rewrite that sizes a grid by the device (persistent-grid, split-k) cannot know the count when it
edits the source: the helper asks torch on CUDA and triton-ascend's driver on Ascend, and falls back
to the target's count where there is no device to ask (the CPU interpreter, meta tensors).
"""

from __future__ import annotations

import libcst as cst

from diagnose.rewrite.edit import statements, unique_name
from diagnose.rewrite.rewrite import RewriteContext
from diagnose.rewrite.source import module_names

HELPER = '''
def {name}(device, fallback={fallback}):
    """The device's cores: SMs on CUDA, {npu_unit} cores on Ascend."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    if device.type == "npu":
        from triton.runtime import driver

        return driver.active.utils.get_device_properties(device.index or 0)["{npu_key}"]
    return fallback  # the target's count, where the device cannot be asked (the interpreter, meta tensors)
'''


def core_count_helper(ctx: RewriteContext, dot: bool) -> tuple[str, list[cst.BaseStatement]]:
    """The helper's name (unique in the module) and its definition: SMs on CUDA; on Ascend AI cores
    for a `tl.dot` kernel (the cube units), else vector cores."""
    name = unique_name(module_names(ctx.module), "_core_count")
    fallback = ctx.target.sm_count if dot or not ctx.target.vector_cores else ctx.target.vector_cores
    text = HELPER.format(
        name=name,
        fallback=fallback,
        npu_unit="AI" if dot else "vector",
        npu_key="num_aicore" if dot else "num_vectorcore",
    )
    return name, statements(text)
