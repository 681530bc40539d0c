"""Timing variants of one task side by side: a ranking for the launch-config search, not a verdict.

Variants that compute the same thing by construction (one kernel module with other launch options)
need no correctness run to be ranked: `time_side_by_side` times their `ModelNew`s interleaved in one
worker (`timing_jobs.side_by_side_job`) on the inputs a prepared reference saved for its first seed, with the
harness's timing protocol (cold L2, stable medians), under the device lock. The variant chosen is then
verified in full like any candidate; the others never leave the search.
"""

from __future__ import annotations

from pathlib import Path

from diagnose.records import Timing
from diagnose.verify.options import CheckOptions, placement_for
from diagnose.verify.reference import Reference
from diagnose.verify.timing_jobs import baseline_files


def time_side_by_side(
    reference: Reference, variants: dict[str, Path], options: CheckOptions
) -> tuple[list[Timing], str | None]:
    """One `Timing` per variant and group (`variant` is the variant's name), and why there are none
    when the job failed (a variant that raises fails them all: the search then keeps what it has)."""
    selected = reference.value["selected"]
    inputs = reference.inputs_of(options.seeds[0])
    payload = {
        "device": options.device,
        "job_dir": reference.job_dir,
        "device_lock": options.device_lock,
        "variants": {name: str(path) for name, path in variants.items()},
        "groups": selected,
        "inputs": inputs,
    }
    result = reference.run_job("side_by_side_job", payload, baseline_files(inputs), options, placement_for(options))
    if not result.ok:
        lines = result.failure.message.strip().splitlines()
        return [], f"{result.failure.kind}: {lines[-1] if lines else 'no message'}"
    return [Timing(**t) for t in result.value["timings"]], None
