"""L1 of diagnose: how far a kernel is from the hardware's limit, and what kind of bottleneck holds it.

Library entry points (importing this package imports neither torch nor triton):

- `profile_command(path, device, ncu, target, plot_dir, fmt)` (`cli.py`), over
  `profile_task(path, ProfileOptions) -> ProfileResult` (`profile.py`)
- `ceilings_for(device)` / `nominal(target)` / `Ceilings` (`ceilings.py`): the measured, cached roof
- `Work`, `position`, `roof_for` (`roofline.py`); `count_work` (`work.py`, worker side)
- `classify(GroupView) -> [Finding]` (`classify.py`), codes in `codes.py`
- `estimate(KernelFeatures, Hardware)` (`static/estimate.py`), `extract` (`static/features.py`)
- Nsight Compute: `run_ncu` (`nvidia/ncu_run.py`), `parse_raw_page` (`nvidia/csv_pages.py`),
  `counters` / `evidence` (`nvidia/counters.py`), `parse_source_page` / `join` (`nvidia/source_page.py`)
- Ascend: `parse_kernel_details`, `parse_op_statistic`, `parse_msprof_op` and `diagnose_npu`
  (`ascend/`)
- `plot_roofline` (`plot.py`)

Layout: `jobs.py` holds every worker entry (user code runs only there); `profile.py` drives them;
`render.py` prints; `cli.py` is the command.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "profile_command": "diagnose.profiling.cli",
    "profile_task": "diagnose.profiling.profile",
    "ProfileOptions": "diagnose.profiling.profile",
    "ProfileResult": "diagnose.profiling.profile",
    "Ceilings": "diagnose.profiling.ceilings",
    "ceilings_for": "diagnose.profiling.ceilings",
    "nominal": "diagnose.profiling.ceilings",
    "Work": "diagnose.profiling.roofline",
    "position": "diagnose.profiling.roofline",
    "roof_for": "diagnose.profiling.roofline",
    "classify": "diagnose.profiling.classify",
    "GroupView": "diagnose.profiling.classify",
    "estimate": "diagnose.profiling.static.estimate",
    "plot_roofline": "diagnose.profiling.plot",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(name)
