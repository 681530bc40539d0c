"""What each toolchain is: the packages its environment needs and how to ask it what it can do.

A `ToolchainSpec` is static knowledge; what was actually made on this machine is a
`ToolchainRecord` (`config.py`). The table is the registry, in the order `toolchain list` shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.errors import UsageError


@dataclass(frozen=True)
class ToolchainSpec:
    """One toolchain: its interpreter version, pip requirements and probe.

    `python_version` is the only version the compiler's wheels are built for (triton-ascend 3.2.0
    ships cp311 wheels only). `requirements` go to one `pip install`; `npu_requirements` are added
    when the CANN toolkit is present (`ASCEND_HOME_PATH`), since torch_npu cannot import without it.
    `owns_package` is the import name the main distribution provides, and `foreign_distributions`
    those that must not provide it too (a CUDA torch wheel pulls upstream `triton`, which would
    overwrite triton-ascend's files). `probe` is the worker entry that reports what the environment
    can do; `targets` the target names it compiles for; `worker_env` what every worker of the
    environment gets in its environment.
    """

    name: str
    description: str
    python_version: tuple[int, int]
    requirements: tuple[str, ...]
    main_distribution: str
    owns_package: str
    foreign_distributions: tuple[str, ...]
    probe: str
    targets: tuple[str, ...]
    npu_requirements: tuple[str, ...] = ()
    worker_env: tuple[tuple[str, str], ...] = ()


ASCEND = ToolchainSpec(
    name="ascend",
    description="triton-ascend (Huawei Ascend NPUs): TTIR and the Ascend-adapted MLIR on any machine, "
    "binaries where the CANN toolkit is installed",
    python_version=(3, 11),
    requirements=(
        "triton-ascend==3.2.0",
        # Imported by triton/backends/ascend/utils.py at import time, but not declared by the wheel.
        "pybind11",
        # The CPU build lies on the project's machines; triton-ascend 3.2.0 compiles and interprets with it.
        "torch==2.13.0",
        # numpy 2.4 breaks the Triton interpreter on loops with a runtime bound (triton-lang/triton#9171).
        "numpy<2.4",
    ),
    main_distribution="triton-ascend",
    owns_package="triton",
    foreign_distributions=("triton",),
    probe="diagnose.ascend.probe:probe",
    targets=("ascend:910b", "ascend:950"),
    # torch_npu pins the torch release it was built for (torch-npu 2.13.0 -> torch 2.13.0.*).
    npu_requirements=("torch-npu==2.13.0",),
    # torch auto-loads torch_npu on import; without CANN that load fails and takes `import torch`
    # down with it. Workers that need the NPU import torch_npu themselves.
    worker_env=(("TORCH_DEVICE_BACKEND_AUTOLOAD", "0"),),
)

TOOLCHAINS: dict[str, ToolchainSpec] = {spec.name: spec for spec in (ASCEND,)}


def spec_for(name: str) -> ToolchainSpec:
    """The spec called `name`; `UsageError` naming the known ones otherwise."""
    spec = TOOLCHAINS.get(name.strip().lower())
    if spec is None:
        raise UsageError(f"unknown toolchain {name!r}; known toolchains: {', '.join(TOOLCHAINS)}")
    return spec
