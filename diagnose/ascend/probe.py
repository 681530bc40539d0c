"""The Ascend toolchain's probe: a worker entry run by the toolchain's own Python.

`probe(payload)` answers what the environment can do on this machine, as JSON:

    {"ok": bool, "problems": [...], "python": "3.11.7",
     "versions": {"triton-ascend": "3.2.0", "torch": "2.13.0+cpu", "numpy": ..., "pybind11": ..., "torch-npu": None},
     "stages": {"ttir": true, "ttadapter": true, "npubin": false},
     "npubin": "needs the CANN toolkit (bishengir-compile not found, ASCEND_HOME_PATH not set)" | null,
     "interpreter": true, "npu": null | "why not", "npu_devices": 0}

`ok` means TTIR and ttadapter compiles work: triton imports as triton-ascend and the bundled
`triton-adapter-opt` runs.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess

from diagnose.toolchain.ascend_environment import npu_blocker, npubin_blocker

DISTRIBUTIONS = ("triton-ascend", "torch", "numpy", "pybind11", "torch-npu")


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def probe(payload: dict) -> dict:
    problems = []
    versions = {name: _version(name) for name in DISTRIBUTIONS}
    if versions["triton-ascend"] is None:
        problems.append("triton-ascend is not installed")
    adapter_opt = None
    try:
        import triton  # optional: triton-ascend (the probe reports a failure to import it)
        from triton.backends.ascend import compiler  # noqa: F401 - the backend must import

        adapter_opt = os.path.join(os.path.dirname(triton.__file__), "backends", "ascend", "triton-adapter-opt")
        proc = subprocess.run([adapter_opt, "--version"], capture_output=True, text=True, timeout=60, check=False)
        if proc.returncode != 0:
            problems.append(f"triton-adapter-opt --version exited {proc.returncode}")
    except Exception as e:  # noqa: BLE001 - any failure to import or run is what the probe reports
        problems.append(f"{type(e).__name__}: {e}")
    ok = not problems
    npu = npu_blocker() if ok else "the toolchain does not work"
    devices = 0
    if npu is None:
        import torch  # deferred: torch is heavy

        devices = torch.npu.device_count()
    npubin = npubin_blocker()
    return {
        "ok": ok,
        "problems": problems,
        "python": platform.python_version(),
        "versions": versions,
        "adapter_opt": adapter_opt,
        "stages": {"ttir": ok, "ttadapter": ok, "npubin": ok and npubin is None},
        "npubin": npubin,
        "interpreter": ok,
        "npu": npu,
        "npu_devices": devices,
    }
