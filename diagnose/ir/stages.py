"""The artefacts a compile leaves, as frozen stage descriptors, in pipeline order.

Each says its file extension, the backends that produce it, and which `sourcemap` parser maps its
lines back to the user's Python (`mlir` for TTIR/TTGIR, `llvm` for LLVM IR's `!dbg`, `asm` for the
`.loc` lines of PTX and AMDGCN, `sass` for `nvdisasm -g`'s `//## File` comments).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StageDescriptor:
    name: str
    display: str
    parser: str
    backends: tuple[str, ...] = ("cuda", "hip")
    derived: bool = False  # made from the binary on request, not by the compile itself


STAGES: tuple[StageDescriptor, ...] = (
    StageDescriptor("source", "TTIR before any pass", "mlir"),
    StageDescriptor("ttir", "Triton IR", "mlir"),
    StageDescriptor("ttgir", "TritonGPU IR", "mlir"),
    StageDescriptor("llir", "LLVM IR", "llvm"),
    StageDescriptor("ptx", "PTX", "asm", ("cuda",)),
    StageDescriptor("amdgcn", "AMDGCN assembly", "asm", ("hip",)),
    StageDescriptor("sass", "SASS (nvdisasm)", "sass", ("cuda",), derived=True),
)
STAGE_NAMES = tuple(s.name for s in STAGES)


def stage(name: str) -> StageDescriptor | None:
    return next((s for s in STAGES if s.name == name), None)
