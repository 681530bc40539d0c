"""The target a triage run is for, and the few hardware numbers the rules need.

A target is written `family:arch` (`cuda:sm90`, `hip:gfx942`, `ascend:910b`); rules select by family.
The numbers are upper bounds over the parts of a family (e.g. the 910B1 with 24 AI cores rather than the
910B3 with 20), so that a rule which compares against them errs on the quiet side. They duplicate a
small part of `diagnose/targets.py` on purpose: triage depends on nothing but `records`.
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.errors import UsageError

FAMILIES = ("cuda", "hip", "ascend")
DEFAULT_ARCH = {"cuda": "sm90", "hip": "gfx942", "ascend": "910b"}


@dataclass(frozen=True)
class Target:
    """A parsed target string plus the limits rules compare against."""

    family: str
    arch: str
    warp_size: int = 32
    default_num_stages: int = 3
    shared_memory_bytes: int = 0  # per block (NVIDIA shared memory, AMD LDS); 0 for Ascend
    ai_cores: int = 0  # Ascend: cube+vector cores (the grid for `tl.dot` kernels)
    vector_cores: int = 0  # Ascend: the grid for vector-only kernels
    ub_bytes: int = 0  # Ascend unified buffer per vector core
    l0ab_bytes: int = 0  # Ascend L0A / L0B (cube operands)
    l0c_bytes: int = 0  # Ascend L0C (cube accumulator)

    def __str__(self) -> str:
        return f"{self.family}:{self.arch}"


def _cuda(arch: str) -> Target:
    # Opt-in shared memory per block: 163 KB on sm_80, 227 KB on sm_90 / sm_100.
    smem = 166912 if arch.startswith("sm8") else 232448
    return Target("cuda", arch, shared_memory_bytes=smem)


def _hip(arch: str) -> Target:
    lds = 163840 if arch.startswith("gfx95") else 65536
    return Target("hip", arch, warp_size=64, default_num_stages=2, shared_memory_bytes=lds)


def _ascend(arch: str) -> Target:
    if arch.startswith("950"):
        return Target("ascend", arch, ai_cores=36, vector_cores=72, ub_bytes=248 * 1024,
                      l0ab_bytes=64 * 1024, l0c_bytes=256 * 1024)
    if arch in ("910b3", "910b4"):
        cores = 20
    else:
        cores = 24
    return Target("ascend", arch, ai_cores=cores, vector_cores=2 * cores, ub_bytes=192 * 1024,
                  l0ab_bytes=64 * 1024, l0c_bytes=128 * 1024)


def parse_target(text: str) -> Target:
    """`cuda:sm90` -> Target; a bare family takes its default arch. Unknown family: UsageError."""
    family, _, arch = text.strip().lower().partition(":")
    if family not in FAMILIES:
        raise UsageError(f"unknown target {text!r}: expected one of cuda:ARCH, hip:ARCH, ascend:ARCH")
    arch = arch or DEFAULT_ARCH[family]
    return {"cuda": _cuda, "hip": _hip, "ascend": _ascend}[family](arch)
