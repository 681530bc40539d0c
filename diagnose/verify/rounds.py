"""A round of candidates of one task verified at once on one device, against one prepared reference.

An optimize round verifies a few candidates of one task. One after another on a device, each spent
most of its wall time off the device (on an H100, 16 s a candidate, of which the timing loops 2-3 s:
the rest a worker's imports and compiles, the ghost replay's, the parent's comparisons), so four
candidates took 64 s of a 110 s run. Here up to `PARALLEL` run at once: what runs kernels holds the
round's device lock shared and every timing loop holds it alone (`diagnose.runtime.device_lock`), so
no timing shares the device with another candidate's kernels, and the baselines are timed once for
the round (`time_baselines` under `Reference.baseline_lock`).

The reference is prepared, or the kept one taken, before any candidate starts; a candidate whose
verification wants another reference (inputs that did not reproduce from their seeds) prepares its own
and leaves the kept one alone. With `parallel` 1 candidates go one after another (the agent's choice off
a device: the interpreter's runs use every core already).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Callable

from diagnose.records import Verdict
from diagnose.runtime.devices import timed
from diagnose.task import Task
from diagnose.verify.harness import verify
from diagnose.verify.options import CheckOptions
from diagnose.verify.reference import KeptReference

# Candidates verified at once on one device: an optimize round's default budget; more would hold more
# cases' inputs on the device at once for little more overlap.
PARALLEL = 4


def verify_round(
    tasks: list[Task],
    options: CheckOptions,
    keep: KeptReference,
    lock_folder: str | Path,
    *,
    parallel: int = PARALLEL,
    before: Callable[[int], None] | None = None,
    deadline: float | None = None,
) -> list[Verdict | None]:
    """One verdict per task, in their order; None for a task not started because `deadline` (a
    `time.time()`) had passed or because `before(index)` (called as each starts) raised for another,
    which is raised again once the started ones are done. On a timed device the round's tasks share a
    device lock: `options.device_lock`, else a new one in `lock_folder`."""
    if parallel < 2 or len(tasks) < 2:
        verdicts: list[Verdict | None] = []
        for index, task in enumerate(tasks):
            if deadline is not None and time.time() > deadline:
                break
            if before:
                before(index)
            verdicts.append(verify(task, options, keep=keep))
        return verdicts + [None] * (len(tasks) - len(verdicts))

    if deadline is not None and time.time() > deadline:
        return [None] * len(tasks)
    if timed(options.device) and not options.device_lock:
        options = replace(options, device_lock=str(Path(lock_folder) / "device.lock"))
    reference = keep.serving(tasks[0], options) or keep.prepare(tasks[0], options)
    stop = threading.Event()

    def one(index: int, task: Task) -> Verdict | None:
        if stop.is_set() or (deadline is not None and time.time() > deadline):
            return None
        try:
            if before:
                before(index)
            return verify(task, options, reference=reference)
        except BaseException:
            stop.set()  # the rest do not start
            raise

    with ThreadPoolExecutor(min(parallel, len(tasks)), thread_name_prefix="diagnose-candidate") as pool:
        futures = [pool.submit(one, index, task) for index, task in enumerate(tasks)]
    return [f.result() for f in futures]  # the first error, if any, raised again here
