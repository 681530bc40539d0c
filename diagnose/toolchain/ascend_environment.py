"""What this machine lacks for the Ascend stages that need more than the triton-ascend wheel.

The wheel alone reaches TTIR and the Ascend-adapted MLIR (`ttadapter`). The binary (`npubin`) needs
the CANN toolkit's `bishengir-compile` (found on `PATH`, else `$TRITON_NPU_COMPILER_PATH/npuc`, as
triton-ascend's `_get_npucompiler_path` looks for it) and `ASCEND_HOME_PATH` (set by CANN's
`set_env.sh`); running and timing need torch_npu and a visible NPU. Each function returns None when
the thing is possible here, else one line saying why not. Standard library only: both the main
environment and the toolchain's workers call these.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

# Exported by CANN's set_env.sh; triton-ascend's npubin stage refuses to run without it.
CANN_ENV = "ASCEND_HOME_PATH"


def bishengir_path() -> str | None:
    found = shutil.which("bishengir-compile")
    if found:
        return found
    root = os.environ.get("TRITON_NPU_COMPILER_PATH")
    if root and os.path.exists(os.path.join(root, "npuc")):
        return os.path.join(root, "npuc")
    return None


def npubin_blocker() -> str | None:
    """Why the npubin stage cannot run here, or None."""
    missing = []
    if bishengir_path() is None:
        missing.append("bishengir-compile not found")
    if not os.environ.get(CANN_ENV):
        missing.append(f"{CANN_ENV} not set")
    if not missing:
        return None
    return f"needs the CANN toolkit ({', '.join(missing)})"


def npu_blocker() -> str | None:
    """Why kernels cannot run on an NPU from this process, or None (imports torch_npu: workers only)."""
    if importlib.util.find_spec("torch_npu") is None:
        return "torch_npu is not installed in the Ascend toolchain"
    if not os.environ.get(CANN_ENV):
        return f"torch_npu needs the CANN runtime ({CANN_ENV} not set)"
    try:
        import torch  # deferred: torch is heavy; torch_npu is in the Ascend toolchain's environment only
        import torch_npu  # noqa: F401 - registers torch.npu
    except Exception as e:  # noqa: BLE001 - a missing CANN library shows up as any of several errors
        return f"torch_npu does not import: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if not torch.npu.is_available() or torch.npu.device_count() == 0:
        return "torch_npu sees no NPU device"
    return None
