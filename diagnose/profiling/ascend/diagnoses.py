"""Ascend diagnoses from the NPU profilers' evidence (triton-ascend `docs/en/debug_guide/profiling.md`).

- **Scalar fallback** (PRF201): a vector kernel whose scalar pipe is busy (`aiv_scalar_ratio >=
  SCALAR_HIGH`) while its vector pipe is not (`aiv_vec_ratio < VECTOR_LOW`): the compiler lowered
  the work element by element (discrete or unaligned access, per-element branches).
- **Tiles too small** (PRF202): MTE2 (GM -> UB) time over `MTE2_SLOW` times what the bytes need at the
  target's bandwidth (`bytes / bandwidth`): many small transfers, or redundant ones.
- **More blocks than cores** (PRF203): `block_dim` above the cores that run it (vector kernels: two
  vector cores per AI core) costs `ceil(blocks / cores)` scheduling rounds; launch one block per core
  and loop inside.
- **Bank conflicts** (PRF204): `aiv_vec_bank_cflt_ratio` (or the total) at `BANK_CONFLICT_HIGH` or more.

Every finding carries the evidence it was read from; the longest pipe (`PipeUtilization`) is quoted.
"""

from __future__ import annotations

import math

from diagnose.profiling.codes import CODES
from diagnose.records import Evidence, Finding, Location
from diagnose.targets import Target

SCALAR_HIGH = 0.3
VECTOR_LOW = 0.2
MTE2_SLOW = 2.0
BANK_CONFLICT_HIGH = 0.1


def _finding(
    code: str, message: str, location: Location, evidence: list[Evidence], confidence: str = "high"
) -> Finding:
    spec = CODES[code]
    return Finding(code, f"{spec.title}: {message}", spec.severity, confidence, location, tuple(evidence))


def _first(evidence: list[Evidence], key: str, names: tuple[str, ...]) -> tuple[float | None, Evidence | None]:
    for e in evidence:
        if e.name in names and e.arg(key) is not None:
            return float(e.arg(key)), e
    return None, None


def cores_for(core: str | None, target: Target) -> int:
    """Cores that run one block of a kernel on this core type."""
    if core and "VECTOR" in core.upper() and target.vector_cores:
        return target.vector_cores
    return target.sm_count


def diagnose_npu(
    evidence: list[Evidence], target: Target, location: Location, bytes_moved: float | None = None
) -> list[Finding]:
    """Findings from NpuKernel / PipeUtilization / NpuOpBasicInfo / BankConflicts evidence."""
    out = []
    pipes = ("PipeUtilization", "NpuKernel")
    scalar, s_ev = _first(evidence, "aiv_scalar_ratio", pipes)
    vector, v_ev = _first(evidence, "aiv_vec_ratio", pipes)
    if scalar is not None and vector is not None and scalar >= SCALAR_HIGH and vector < VECTOR_LOW:
        out.append(
            _finding(
                "PRF201",
                f"scalar pipe {scalar:.0%} busy, vector pipe {vector:.0%}",
                location,
                [e for e in (s_ev, v_ev) if e is not None][:1],
            )
        )
    mte2_us, m_ev = _first(evidence, "aiv_mte2_time_us", pipes)
    if mte2_us is not None and bytes_moved and target.peaks.hbm_bytes_per_s:
        need_us = bytes_moved / target.peaks.hbm_bytes_per_s * 1e6
        if mte2_us > MTE2_SLOW * need_us:
            out.append(
                _finding(
                    "PRF202",
                    f"MTE2 takes {mte2_us:.1f} us for {bytes_moved / 1e6:.3g} MB, "
                    f"{mte2_us / need_us:.1f}x the {need_us:.1f} us at {target.peaks.hbm_bytes_per_s / 1e12:.2g} TB/s",
                    location,
                    [m_ev],
                    "medium",
                )
            )
    blocks, b_ev = _first(evidence, "block_dim", ("NpuKernel", "NpuOpBasicInfo"))
    if blocks:
        core = b_ev.arg("core")
        cores = cores_for(core, target)
        if blocks > cores:
            rounds = math.ceil(blocks / cores)
            out.append(
                _finding(
                    "PRF203",
                    f"{int(blocks)} blocks on {cores} {('vector ' if cores != target.sm_count else '')}cores: "
                    f"{rounds} scheduling rounds",
                    location,
                    [b_ev],
                )
            )
    conflicts, c_ev = _first(evidence, "aiv_vec_bank_cflt_ratio", ("BankConflicts",))
    if conflicts is None:
        conflicts, c_ev = _first(evidence, "aiv_vec_total_cflt_ratio", ("BankConflicts",))
    if conflicts is not None and conflicts >= BANK_CONFLICT_HIGH:
        out.append(_finding("PRF204", f"{conflicts:.0%} of vector cycles in bank conflicts", location, [c_ev]))
    longest = next((e for e in evidence if e.name == "PipeUtilization" and e.arg("longest_pipe")), None)
    if longest is not None:
        out = [
            f
            if longest in f.evidence
            else Finding(f.code, f.message, f.severity, f.confidence, f.location, f.evidence + (longest,))
            for f in out
        ]
    return out
