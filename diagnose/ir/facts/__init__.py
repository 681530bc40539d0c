"""Fact extractors: one module per fact, each a function `FactContext -> list[Evidence]`.

The table below is the registry (explicit, in report order); `facts_for` runs every extractor that
applies to the context's target. Each module's docstring is the fact's documentation: what it reads,
its kinds and arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from diagnose.ir.facts.amdgcn_resources import amdgcn_resources
from diagnose.ir.facts.compiler_remarks import compiler_remarks
from diagnose.ir.facts.context import FactContext
from diagnose.ir.facts.dot_lowering import dot_lowering
from diagnose.ir.facts.global_access_width import global_access_width
from diagnose.ir.facts.index_width import index_width
from diagnose.ir.facts.launch_shape import launch_shape
from diagnose.ir.facts.layout_conversions import layout_conversions
from diagnose.ir.facts.pipelining import pipelining
from diagnose.ir.facts.ptxas_resources import ptxas_resources
from diagnose.ir.facts.shared_memory import shared_memory
from diagnose.records import Evidence


@dataclass(frozen=True)
class FactExtractor:
    """A fact extractor and what it needs: the artefacts it reads and the backends it applies to."""

    name: str
    func: Callable[[FactContext], list[Evidence]]
    stages: tuple[str, ...]
    backends: tuple[str, ...] = ("cuda", "hip")


EXTRACTORS: tuple[FactExtractor, ...] = (
    FactExtractor("GlobalAccessWidth", global_access_width, ("ttgir", "ptx|amdgcn")),
    FactExtractor("LayoutConversion", layout_conversions, ("ttgir",)),
    FactExtractor("DotLowering", dot_lowering, ("ttgir", "ptx|amdgcn")),
    FactExtractor("SoftwarePipelining", pipelining, ("ttgir",)),
    FactExtractor("PtxasResources", ptxas_resources, ("ptxas",), ("cuda",)),
    FactExtractor("AmdgcnResources", amdgcn_resources, ("amdgcn",), ("hip",)),
    FactExtractor("SharedMemoryUsage", shared_memory, ("metadata",)),
    FactExtractor("Int64IndexArithmetic", index_width, ("ttgir", "ptx")),
    FactExtractor("LaunchShape", launch_shape, ("grid",)),
    FactExtractor("CompilerRemark", compiler_remarks, ("remarks",)),
)


def facts_for(ctx: FactContext) -> list[Evidence]:
    """Every fact of one compiled launch, ordered by source line (kernel-level facts first)."""
    out: list[Evidence] = []
    for extractor in EXTRACTORS:
        if ctx.target.backend in extractor.backends:
            out += extractor.func(ctx)
    return sorted(out, key=lambda e: (e.location.line if e.location else 0, e.location.col if e.location else 0))
