"""New memory read as NaN (integers as their maximum) while a case is judged: torch's own switch.

A kernel that leaves part of its output unwritten must fail however large the output is, instead of
passing on fresh zeroed pages or an earlier call's result; inputs a task draws with `torch.empty` must
come out the same in every process that draws them (`diagnose.verify.recipes`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def fill_uninitialized(out: Path) -> None:
    """Every `torch.empty` of this process filled with NaN (integers with their maximum): an output a
    kernel only partly writes fails, however large, instead of passing on fresh zeroed pages (torch's
    own switch; `warn_only` keeps nondeterministic ops running). Check cases only: not in timing.

    `torch.use_deterministic_algorithms` also sets inductor's `deterministic` option, which imports
    inductor and dynamo: 1.1 s of every candidate job, for an option no check case uses, and a cache
    folder made at import. The C switch underneath is set directly where torch has it; otherwise the
    public call runs, its cache folder the job's (deleted with it) unless the user chose one."""
    import torch.utils.deterministic  # deferred: torch is heavy; the submodule holds the fill switch

    _deterministic(True, True, out)
    torch.utils.deterministic.fill_uninitialized_memory = True  # on by default, set for clarity


def _deterministic(on: bool, warn_only: bool, out: Path) -> None:
    """torch's deterministic-algorithms switch, set as `fill_uninitialized` says why."""
    import torch  # deferred: torch is heavy

    switch = getattr(torch._C, "_set_deterministic_algorithms", None)
    if switch is not None:
        switch(on, warn_only=warn_only)
    else:
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(out / "torchinductor"))
        torch.use_deterministic_algorithms(on, warn_only=warn_only)


@contextlib.contextmanager
def uninitialized_filled(out: Path):
    """`fill_uninitialized` for the block only, torch's switches as they were again after it: for a worker
    that also times the same code, where filling every allocation would be counted."""
    import torch.utils.deterministic  # deferred: torch is heavy; the submodule holds the fill switch

    was = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    filled = torch.utils.deterministic.fill_uninitialized_memory
    fill_uninitialized(out)
    try:
        yield
    finally:
        _deterministic(*was, out)
        torch.utils.deterministic.fill_uninitialized_memory = filled
