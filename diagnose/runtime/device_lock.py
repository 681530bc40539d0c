"""One device shared by several workers: timing holds it alone, everything else holds it together.

A sweep with `--jobs N` on a timed device runs N entries at once, so that one entry's process
starts, imports, input drawing, compiles and comparisons (CPU work, most of a verification's wall
time) overlap another's timing. What runs kernels on the device takes the lock shared (inputs to the
device, a forward, outputs back); a timing loop, or the measurement of the device's ceilings, takes
it exclusive, so that no other worker's kernels or copies run on the device while events are
recorded. The lock is `flock(2)` on a file the parent names in the job payload (`device_lock`);
with no file named (a single `check`, an optimize run of its own) both are no-ops.

A worker never nests the two (flock locks of one process on two descriptors of one file would
wait on each other forever): each hold opens the file afresh and releases it on exit.
"""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def hold(path: str | None, exclusive: bool = False) -> Iterator[None]:
    """Hold the device lock at `path` (shared, or `exclusive`) for the block; nothing when `path` is None."""
    if not path:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def shared(path: str | None):
    """Run kernels on the device beside other workers' kernels (not beside anyone's timing)."""
    return hold(path, exclusive=False)


def exclusive(path: str | None):
    """Have the device alone: for timing."""
    return hold(path, exclusive=True)
