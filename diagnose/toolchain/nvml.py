"""How many GPUs the NVIDIA driver lists, asked through NVML without importing torch or starting CUDA.

`placement("cuda")` asked `torch.cuda.is_available()` in the command's own process before its first job:
an import of torch and the CUDA driver's start, 4-5 s of an H100 host's `check` before the reference job
(`benchmarks/phase_times.py`'s `before` column, against 0.7 s on the CPU, where nothing is asked). NVML is
the driver's management library (`libnvidia-ml.so.1`, installed with every NVIDIA driver); counting its
devices takes milliseconds. The workers still start CUDA through torch, and say so where torch cannot.

`gpus()` is None where NVML cannot be asked (no NVIDIA driver's library: a ROCm host, where torch's
`cuda` is HIP, or a host without a GPU), so that the caller falls back to torch's own answer; so is
`torch_cuda()` where torch's build cannot be read from its `version.py` without importing it (a CPU-only
build on a GPU host would otherwise pass here and fail in every job).
"""

from __future__ import annotations

import ast
import ctypes
import importlib.util
import os
from pathlib import Path

from diagnose.syntax import parse

LIBRARY = "libnvidia-ml.so.1"
# CUDA_VISIBLE_DEVICES values that hide every GPU from CUDA (and so from torch).
HIDDEN = ("", "-1", "none", "NoDevFiles")


def gpus(library: str = LIBRARY) -> int | None:
    """GPUs CUDA would see here: the driver's count (NVML), 0 where CUDA_VISIBLE_DEVICES hides them all,
    None where NVML cannot be loaded or answer."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in HIDDEN:
        return 0
    try:
        nvml = ctypes.CDLL(library)
    except OSError:
        return None
    count = ctypes.c_uint(0)
    try:
        if nvml.nvmlInit_v2() != 0:
            return None
        try:
            if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
                return None
        finally:
            nvml.nvmlShutdown()
    except AttributeError:  # a library by that name without these entry points
        return None
    return int(count.value)


def torch_cuda() -> bool | None:
    """Whether the installed torch was built with CUDA, read from its `version.py` (`cuda = '13.0'` or
    None) without importing torch; None where that file cannot be found or read."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        tree = parse((Path(list(spec.submodule_search_locations)[0]) / "version.py").read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "cuda" and node.value is not None:
            try:
                return bool(ast.literal_eval(node.value))
            except ValueError:
                return None
    return None
