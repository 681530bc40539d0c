"""The target registry: every device `diagnose` knows, its hardware limits and nominal peaks.

A `Target` is a frozen record per device family: the limits a compiled kernel is checked against
(shared memory / LDS / UB per block and per SM, registers, SM or CU count, warp size, L2), the
*nominal* datasheet peaks a roofline starts from (HBM bandwidth, dense TFLOP/s per dtype), where the
numbers come from (`source`), and how to compile for it (`gpu_target()`, `can_compile_here`).

Peaks are nominal: vendor datasheet numbers, not measurements. Measured ceilings (an H200 copies at
about 4.25 TB/s and reaches ~700-790 TFLOP/s in a bf16 matmul) belong to the profiling layer. `None`
means the datasheet gives no number, or the concept does not apply (registers on an Ascend core).

    >>> lookup("cuda:sm90").sm_count
    132
    >>> lookup("ascend").name          # a bare family names its default part
    'ascend:910b'

This is the one definition of every target's numbers: triage's rules, IR facts, the profiler's
roofline, the rewrites' grid sizes and the CPU stand-in for `torch.cuda` all read these records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diagnose.errors import UsageError

KIB = 1024
MIB = 1024 * 1024

DEFAULT_TARGET = "cuda:sm90"
# The part a bare family (`--target ascend`) means.
DEFAULT_ARCH = {"cuda": "sm90", "hip": "gfx942", "ascend": "910b"}


@dataclass(frozen=True)
class Peaks:
    """Nominal dense peaks from a datasheet: HBM bytes/s and TFLOP/s per input dtype."""

    hbm_bytes_per_s: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    tf32_tflops: float | None
    fp32_tflops: float | None
    source: str
    nominal: bool = True


@dataclass(frozen=True)
class Target:
    """One device family: limits, nominal peaks, and the Triton target to compile for.

    `arch` is what Triton's `GPUTarget` takes (an int capability for CUDA, a gfx name for HIP, an
    Ascend SoC name for NPUs). `sm_count` counts SMs, CUs or AI cores. Per-SM registers count 32-bit
    registers (AMD: VGPR file of one CU); `regs_per_thread` is the most one thread may address.
    `vector_cores` counts an Ascend part's vector (AIV) cores, the grid a vector-only kernel should
    have (a `tl.dot` kernel's is `sm_count`, the AI cores); None for GPUs. `shared_per_block` is
    shared memory per block on NVIDIA, LDS on AMD and the Unified Buffer of one vector core on Ascend;
    `l0ab_bytes` / `l0c_bytes` are an Ascend cube's operand and accumulator buffers.
    `default_num_stages` is what Triton's backend uses when a launch does not say.
    """

    name: str
    backend: str
    arch: int | str
    device: str
    warp_size: int | None
    sm_count: int
    shared_per_block: int
    shared_per_sm: int
    regs_per_thread: int | None
    regs_per_sm: int | None
    l2_bytes: int
    peaks: Peaks
    can_compile_here: bool = True
    notes: str = ""
    vector_cores: int | None = None
    l0ab_bytes: int | None = None
    l0c_bytes: int | None = None
    default_num_stages: int = 3

    def gpu_target(self) -> Any:
        """Triton's `GPUTarget` for this device (imports triton, so only call it in a worker)."""
        from triton.backends.compiler import GPUTarget  # deferred: triton is heavy (workers only)

        return GPUTarget(self.backend, self.arch, self.warp_size or 0)

    @property
    def family(self) -> str:
        """`cuda`, `hip` or `ascend`: the part of the name before the colon."""
        return self.name.partition(":")[0]

    @property
    def short_arch(self) -> str:
        """The part of the name after the colon (`sm90`, `gfx942`, `910b`), what rules select on."""
        return self.name.partition(":")[2]

    def __str__(self) -> str:
        return self.name

    @property
    def is_nvidia(self) -> bool:
        return self.backend == "cuda"

    @property
    def is_amd(self) -> bool:
        return self.backend == "hip"


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            name="cuda:sm80",
            backend="cuda",
            arch=80,
            device="NVIDIA A100 SXM4 80GB",
            warp_size=32,
            sm_count=108,
            shared_per_block=163 * KIB,
            shared_per_sm=164 * KIB,
            regs_per_thread=255,
            regs_per_sm=65536,
            l2_bytes=40 * MIB,
            peaks=Peaks(2.039e12, 312.0, 312.0, 156.0, 19.5, "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB)"),
        ),
        Target(
            name="cuda:sm90",
            backend="cuda",
            arch=90,
            device="NVIDIA H200 SXM (H100 shares the limits)",
            warp_size=32,
            sm_count=132,
            shared_per_block=227 * KIB,
            shared_per_sm=228 * KIB,
            regs_per_thread=255,
            regs_per_sm=65536,
            l2_bytes=60 * MIB,
            peaks=Peaks(4.8e12, 989.5, 989.5, 494.7, 66.9, "NVIDIA H200 Tensor Core GPU datasheet (SXM)"),
            notes="H100 SXM: 3.35 TB/s HBM3, 80 GB; same SM count and per-SM limits.",
        ),
        Target(
            name="cuda:sm100",
            backend="cuda",
            arch=100,
            device="NVIDIA B200",
            warp_size=32,
            sm_count=148,
            shared_per_block=227 * KIB,
            shared_per_sm=228 * KIB,
            regs_per_thread=255,
            regs_per_sm=65536,
            l2_bytes=126 * MIB,
            peaks=Peaks(8.0e12, 2250.0, 2250.0, 1100.0, 75.0, "NVIDIA HGX B200 datasheet (per GPU)"),
            notes="Tensor memory (TMEM) 256 KB per SM.",
        ),
        Target(
            name="hip:gfx942",
            backend="hip",
            arch="gfx942",
            device="AMD Instinct MI300X",
            warp_size=64,
            sm_count=304,
            shared_per_block=64 * KIB,
            shared_per_sm=64 * KIB,
            regs_per_thread=512,
            regs_per_sm=131072,
            l2_bytes=32 * MIB,
            peaks=Peaks(5.3e12, 1307.4, 1307.4, 653.7, 163.4, "AMD Instinct MI300X data sheet"),
            default_num_stages=2,
            notes="L2 is 4 MB per XCD (8 XCDs), plus 256 MB Infinity Cache; 512 registers = 256 VGPR + 256 AGPR.",
        ),
        Target(
            name="hip:gfx950",
            backend="hip",
            arch="gfx950",
            device="AMD Instinct MI355X",
            warp_size=64,
            sm_count=256,
            shared_per_block=160 * KIB,
            shared_per_sm=160 * KIB,
            regs_per_thread=512,
            regs_per_sm=131072,
            l2_bytes=32 * MIB,
            peaks=Peaks(8.0e12, 2516.6, 2516.6, None, 157.3, "AMD Instinct MI355X data sheet"),
            default_num_stages=2,
            notes="No TF32 matrix path on CDNA4; L2 4 MB per XCD plus 256 MB Infinity Cache.",
        ),
        # Ascend numbers: mindspore-ai/akg akg_agents/python/akg_agents/op/resources/docs/hardware/<SoC>.md
        # (third-party spec sheets by the MindSpore team, not Huawei datasheets).
        # `can_compile_here` is about the main environment: Ascend compiles through the triton-ascend
        # toolchain (`diagnose toolchain setup ascend`, diagnose/ascend/).
        Target(
            name="ascend:910b",
            backend="npu",
            arch="Ascend910B2",
            device="Huawei Ascend 910B2",
            warp_size=None,
            sm_count=24,
            vector_cores=48,
            l0ab_bytes=64 * KIB,
            l0c_bytes=128 * KIB,
            shared_per_block=192 * KIB,
            shared_per_sm=192 * KIB,
            regs_per_thread=None,
            regs_per_sm=None,
            l2_bytes=192 * MIB,
            peaks=Peaks(
                1.8e12,
                None,
                None,
                None,
                None,
                "HBM: the illustrative 1.8 TB/s of triton-ascend docs/en/debug_guide/profiling.md (Huawei publishes "
                "no 910B bandwidth); cores, UB, L2: mindspore-ai/akg hardware/Ascend910B2.md",
            ),
            can_compile_here=False,
            notes="24 AI cores (1 cube + 2 vector each, 48 vector cores); shared = Unified Buffer per vector core "
            "(192 KB); L1 1 MB, L0A/L0B 64 KB, L0C 128 KB; 910B3/B4: 20 AI cores.",
        ),
        Target(
            name="ascend:950",
            backend="npu",
            arch="Ascend910_9589",
            device="Huawei Ascend 950PR (Ascend910_9589)",
            warp_size=None,
            sm_count=32,
            vector_cores=64,
            l0ab_bytes=64 * KIB,
            l0c_bytes=256 * KIB,
            shared_per_block=248 * KIB,
            shared_per_sm=248 * KIB,
            regs_per_thread=None,
            regs_per_sm=None,
            l2_bytes=128 * MIB,
            peaks=Peaks(
                1.6e12,
                None,
                None,
                None,
                None,
                "HBM: Huawei Connect 2025 announcement (950PR, HiBL 1.0, 128 GB at 1.6 TB/s); cores, UB, L2: "
                "mindspore-ai/akg hardware/Ascend950PR_9589.md",
            ),
            can_compile_here=False,
            notes="32 AI cores, 64 vector cores; shared = Unified Buffer (248 KB, 16 banks x 4 KB); L1 512 KB, "
            "L0A/L0B 64 KB, L0C 256 KB; 1650 MHz; FP8 1 PFLOP/s (press); triton-ascend 3.2.0 compiles it with "
            "compile_on_910_95=True.",
        ),
    )
}


def lookup(name: str) -> Target:
    """The target called `name` (`cuda:sm90`, or a bare family for its default part); a `UsageError`
    listing the known names otherwise."""
    key = name.strip().lower()
    key = f"{key}:{DEFAULT_ARCH[key]}" if key in DEFAULT_ARCH else key
    target = TARGETS.get(key)
    if target is None:
        raise UsageError(f"unknown target {name!r}; known targets: {', '.join(TARGETS)}")
    return target
