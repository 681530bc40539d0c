"""The static estimate: a kernel's time on a target from its IR facts alone, when nothing can be timed.

It is an **estimate**, labelled so everywhere it is shown, and exists to *rank* candidates on a
machine with no device. The model is deliberately small, and monotone by construction: a wider
access or fewer passes over memory never estimates slower.

For one launch with features `f` (`features.py`) on hardware `hw` (`Hardware`, from measured
ceilings or a target's datasheet):

    memory   = [U / BW + max(0, M - U) / BW_L2] / (width_eff * latency_eff)
    compute  = dot_flops / (rate(engine, dtype) * sm_fill)
    overhead = programs / SMs * PROGRAM_S + launch_s
    time     = max(memory, compute) + overhead

- `U` is the unique footprint (every tensor argument once) and `M` the bytes the kernel's memory ops
  move over all programs and loop trips: extra passes and re-read tiles show as `M - U`, served from
  L2 at `L2_OVER_DRAM` times the DRAM bandwidth.
- `width_eff` is the byte-weighted harmonic mean of `features.WIDTH_EFFICIENCY` over the accesses (128-bit
  accesses 1.0, narrower ones less; an uncoalesced access is multiplied by `UNCOALESCED`).
- `latency_eff = min(1, bytes in flight / (BW * LATENCY_S))` (Little's law): the programs resident
  at once (`min(programs, SMs * resident per SM)`) times each one's in-flight bytes must cover the
  bandwidth-latency product, or the memory system idles.

Known limitation: tile bytes count masked-off lanes (a block wider than the row), in `M` and in the
bytes in flight alike, so on a problem smaller than its tiles a larger block estimates a little faster
than it runs (TritonBench's swiglu at 32 x 4096: BLOCK_N 4096 over 1024 read 1.03x). Capping the bytes
in flight at `U` alone was tried and undone: it left the masked lanes in `M - U`, read as re-reads at
near-zero latency efficiency (FlagGems' count_nonzero over 2-column rows estimated 0.23x). Counting
masked lanes needs each access's extent, which the features do not carry yet.
- `rate` is the matmul ceiling of the dot's dtype for wgmma/tcgen05/MFMA, `MMA_V2` of it for
  mma.sync, and the fp32 rate for FMA dots; `sm_fill` is the fraction of SMs the grid can occupy.
- `PROGRAM_S` is a per-program scheduling cost (a grid of millions of tiny programs pays for it).

The constants are round numbers chosen against the four examples timed on an H200
(`benchmarks/results/2026-12-02-h200-foundation/`); their rank agreement with measured times over
the launch-configuration variants is reported in `benchmarks/results/2026-12-02-h200-profiling/`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from diagnose.profiling.ceilings import Ceilings
from diagnose.profiling.static.features import KernelFeatures
from diagnose.records import Record

L2_OVER_DRAM = 2.0
LATENCY_S = 0.4e-6
PROGRAM_S = 25e-9
LAUNCH_S = 4e-6
MMA_V2 = 0.5
LABEL = "estimate"


@dataclass(frozen=True)
class Hardware(Record):
    """What the model needs of a device; `measured` when it came from measured ceilings."""

    name: str
    sm_count: int
    bytes_per_s: float
    l2_bytes_per_s: float
    matmul_flops_per_s: tuple[tuple[str, float], ...]
    launch_s: float
    measured: bool

    def rate(self, engine: str | None, dtype: str | None) -> float:
        table = dict(self.matmul_flops_per_s)
        label = {"f16": "fp16", "bf16": "bf16", "f32": "tf32", "f8E4M3FN": "bf16", "f8E5M2": "bf16"}.get(
            dtype or "", "fp16"
        )
        tensor = table.get(label) or table.get("fp16") or table.get("bf16") or 1e12
        if engine in ("wgmma", "tcgen05", "mfma", "wmma"):
            return tensor
        if engine == "mma_v2":
            return MMA_V2 * tensor
        return table.get("fp32") or tensor / 16


def hardware(ceilings: Ceilings, sm_count: int) -> Hardware:
    if not ceilings.copy_bytes_per_s:
        raise ValueError(f"{ceilings.device}: no memory bandwidth to estimate with")
    return Hardware(
        name=ceilings.device,
        sm_count=sm_count,
        bytes_per_s=ceilings.copy_bytes_per_s,
        l2_bytes_per_s=L2_OVER_DRAM * ceilings.copy_bytes_per_s,
        matmul_flops_per_s=ceilings.matmul_flops_per_s,
        launch_s=ceilings.launch_overhead_s or LAUNCH_S,
        measured=ceilings.measured,
    )


@dataclass(frozen=True)
class Estimate(Record):
    """The estimated time of one launch and its terms; `bottleneck` names the term that dominates."""

    kernel: str
    time_s: float
    memory_s: float
    compute_s: float
    overhead_s: float
    width_efficiency: float
    latency_efficiency: float
    bottleneck: str
    label: str = LABEL


def latency_efficiency(f: KernelFeatures, hw: Hardware) -> float:
    resident = min(f.programs, hw.sm_count * f.resident_programs_per_sm)
    needed = hw.bytes_per_s * LATENCY_S
    return min(1.0, resident * f.inflight_bytes_per_program / needed) if f.inflight_bytes_per_program else 1.0


def estimate(f: KernelFeatures, hw: Hardware) -> Estimate:
    """The estimated time of one launch (see the module docstring for the model)."""
    lat = max(latency_efficiency(f, hw), 1e-3)
    width = max(f.width_efficiency, 1e-3)
    dram = f.unique_bytes / hw.bytes_per_s
    reread = max(0.0, f.moved_bytes - f.unique_bytes) / hw.l2_bytes_per_s
    memory = (dram + reread) / (width * lat)
    sm_fill = min(1.0, f.programs / hw.sm_count)
    compute = f.dot_flops / (hw.rate(f.dot_engine, f.dot_dtype) * sm_fill) if f.dot_flops else 0.0
    overhead = f.programs / hw.sm_count * PROGRAM_S + hw.launch_s
    time = max(memory, compute) + overhead
    if overhead > max(memory, compute):
        bottleneck = "launch-bound"
    elif compute > memory:
        bottleneck = "compute-bound"
    elif lat < 0.5:
        bottleneck = "latency-bound"
    else:
        bottleneck = "memory-bound"
    return Estimate(f.kernel, time, memory, compute, overhead, f.width_efficiency, lat, bottleneck)


def total_time(estimates: list[Estimate]) -> float:
    """One forward's estimated time: its launches run one after another."""
    return math.fsum(e.time_s for e in estimates)
