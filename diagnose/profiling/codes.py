"""The central code table of the profiling level (L1): every finding it can make, by stable code.

Grep-able and reviewed in one place; nothing registers itself at import time. `PRF0xx` codes classify
the bottleneck, `PRF1xx` come from hardware counters (Nsight Compute), `PRF2xx` from the Ascend
profilers, `PRF3xx` from the static estimate. Each code's `title` is the terse message stem and
`fix_title` the imperative that usually answers it.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.records import Severity


@dataclass(frozen=True)
class ProfileCode:
    """One diagnosis the profiling level can make."""

    code: str
    name: str
    title: str
    fix_title: str
    severity: Severity


CODES: dict[str, ProfileCode] = {
    c.code: c
    for c in (
        ProfileCode(
            "PRF001",
            "memory-bound",
            "Memory-bound",
            "Move fewer bytes: fuse passes, widen accesses, keep rows in registers",
            "warning",
        ),
        ProfileCode(
            "PRF002", "compute-bound", "Compute-bound", "Use the matrix engine (wgmma/MFMA) and larger tiles", "warning"
        ),
        ProfileCode(
            "PRF003",
            "latency-bound",
            "Latency-bound",
            "Put more independent work in flight: larger blocks, more programs per SM, pipelining",
            "warning",
        ),
        ProfileCode(
            "PRF004",
            "tail-bound",
            "Too few programs for the device",
            "Split the work into more programs (at least one per SM, better several waves)",
            "warning",
        ),
        ProfileCode(
            "PRF005",
            "launch-bound",
            "Launch- or scheduling-bound",
            "Do more work per program and per launch (larger BLOCK, fused launches)",
            "warning",
        ),
        ProfileCode("PRF006", "near-roofline", "At the roofline", "Little left to gain from this kernel alone", "info"),
        ProfileCode(
            "PRF101",
            "uncoalesced-global-access",
            "Uncoalesced global accesses",
            "Make the fastest-varying offsets contiguous",
            "warning",
        ),
        ProfileCode(
            "PRF102",
            "occupancy-limited",
            "Occupancy limited by a resource",
            "Reduce registers or shared memory per program, or change num_warps",
            "info",
        ),
        ProfileCode("PRF103", "stall-hotspot", "Warp-stall hot spot", "Look at this line first", "info"),
        ProfileCode(
            "PRF104",
            "excess-dram-traffic",
            "More DRAM traffic than the minimum",
            "Read each input once: fuse the passes over memory",
            "warning",
        ),
        ProfileCode(
            "PRF201",
            "scalar-fallback",
            "Scalar fallback on the vector core",
            "Vectorize: contiguous, aligned tiles without per-element branches",
            "warning",
        ),
        ProfileCode(
            "PRF202",
            "tiles-too-small",
            "MTE2 transfers much slower than bytes over bandwidth",
            "Use larger tiles and fewer, bigger transfers",
            "warning",
        ),
        ProfileCode(
            "PRF203",
            "blocks-exceed-cores",
            "More blocks than AI cores",
            "Launch at most one block per core and loop inside the kernel",
            "warning",
        ),
        ProfileCode(
            "PRF204",
            "bank-conflicts",
            "Unified-buffer bank conflicts",
            "Pad or re-stride the tiles in the unified buffer",
            "info",
        ),
        ProfileCode("PRF301", "estimate", "Static estimate (no device)", "Time it on a device to confirm", "info"),
    )
}


def code(key: str) -> ProfileCode:
    return CODES[key]
