"""`FactContext`: everything a fact extractor may read about one compiled launch.

Passed to every extractor, so that a new input never changes an extractor's signature. Parsed views
(`ops("ttgir")`, `asm_lines()`, `func_args()`, layouts) are computed once per context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from diagnose.ir.compile import CompileRecord
from diagnose.ir.remarks import Diagnostic
from diagnose.ir.sourcemap import AsmLine, IROp, parse_asm_lines, parse_mlir_ops
from diagnose.records import Evidence, Location
from diagnose.targets import Target

# %x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32, tt.pointer_range = 32 : i32} loc("x_ptr"(#loc))
FUNC_ARG = re.compile(
    r"%(?P<name>[\w-]+): (?P<type>!tt\.ptr<[^>]+>|!tt\.tensordesc<.*?>|[\w.]+)(?: \{(?P<attrs>[^}]*)\})?"
)
# #blocked1 = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
BLOCKED_DEF = re.compile(r"^(#\w+) = #ttg\.blocked<\{sizePerThread = \[([\d, ]+)\].*order = \[([\d, ]+)\]")


@dataclass(frozen=True)
class FuncArg:
    """A kernel argument as the TTGIR signature shows it (constexprs are gone by then)."""

    name: str
    type: str
    divisibility: int | None

    @property
    def is_pointer(self) -> bool:
        return self.type.startswith("!tt.ptr")


@dataclass(frozen=True)
class FactContext:
    """One compiled launch: the record, its target, the grid, and the user file to report against."""

    record: CompileRecord
    target: Target
    grid: tuple[int, ...] | None = None
    user_path: str | None = None

    def text(self, stage: str) -> str:
        return self.record.asm.get(stage, "")

    def ops(self, stage: str) -> list[IROp]:
        if stage not in self._ops:
            self._ops[stage] = parse_mlir_ops(self.text(stage))
        return self._ops[stage]

    @cached_property
    def _ops(self) -> dict[str, list[IROp]]:
        return {}

    @cached_property
    def asm_stage(self) -> str:
        return "ptx" if self.target.is_nvidia else "amdgcn"

    @cached_property
    def asm_lines(self) -> list[AsmLine]:
        return parse_asm_lines(self.text(self.asm_stage))

    @cached_property
    def defs(self) -> dict[str, IROp]:
        """TTGIR SSA value -> the op defining it (`scf.for` iter args map to their init op)."""
        out: dict[str, IROp] = {}
        for op in self.ops("ttgir"):
            for res in op.results:
                out[res.split(":")[0]] = op
            if op.name == "scf.for":
                for arg, init in re.findall(r"(%[\w-]+) = (%[\w#-]+)", op.raw.split("iter_args(", 1)[-1]):
                    out[arg] = out.get(init.split("#")[0]) or op
        return out

    @cached_property
    def func_args(self) -> dict[str, FuncArg]:
        func = next((op for op in self.ops("ttgir") if op.name == "tt.func"), None)
        if func is None:
            return {}
        signature = func.raw.split("(", 1)[-1]
        out = {}
        for m in FUNC_ARG.finditer(signature):
            div = re.search(r"tt\.divisibility = (\d+)", m["attrs"] or "")
            out["%" + m["name"]] = FuncArg(m["name"], m["type"], int(div[1]) if div else None)
        return out

    @cached_property
    def blocked_layouts(self) -> dict[str, tuple[list[int], list[int]]]:
        """`#blockedN` -> (sizePerThread, order)."""
        out = {}
        for line in self.text("ttgir").splitlines():
            m = BLOCKED_DEF.match(line)
            if m:
                out[m[1]] = ([int(x) for x in m[2].split(",")], [int(x) for x in m[3].split(",")])
        return out

    @cached_property
    def diagnostics(self) -> list[Diagnostic]:
        return self.record.diagnostics()

    @cached_property
    def kernel_location(self) -> Location | None:
        func = next((op for op in self.ops("ttgir") if op.name == "tt.func"), None)
        return self.place(func.location) if func else None

    def place(self, location: Location | None) -> Location | None:
        """A location in the user's file as it is now (the cache may hold IR compiled from a copy)."""
        return in_user_file(location, self.record.source_path, self.user_path)

    def evidence(
        self, name: str, kind: str, source: str, location: Location | None, args: dict[str, Any], raw: str | None
    ) -> Evidence:
        return fact_evidence(name, kind, source, self.place(location) or self.kernel_location, args, raw)

    def provenance(self, value: str, limit: int = 400) -> list[IROp | FuncArg]:
        """Ops and function arguments `value` is computed from (breadth-first through operands)."""
        seen, out, queue = set(), [], [value]
        while queue and len(out) < limit:
            v = queue.pop(0).split("#")[0]
            if v in seen:
                continue
            seen.add(v)
            if v in self.func_args:
                out.append(self.func_args[v])
            elif v in self.defs:
                op = self.defs[v]
                out.append(op)
                if op.name != "scf.for":
                    queue.extend(op.operands)
        return out


# tensor<128x64x!tt.ptr<f16>, #blocked1>        tensor<1024xf32, #blocked>
TENSOR_TYPE = re.compile(r"tensor<(?P<shape>(?:\d+x)+)(?:!tt\.ptr<(?P<ptr>\w+)>|(?P<elem>\w+))(?:, (?P<layout>#\w+))?")


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    elem: str
    layout: str | None

    @property
    def elem_bits(self) -> int:
        if self.elem.startswith("f8") or self.elem in ("i1", "i8"):
            return 8
        digits = re.search(r"\d+", self.elem)
        return int(digits[0]) if digits else 32

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def tensor_type(raw: str) -> TensorType | None:
    """The first tensor type written in an op line (the pointer's element type for pointer tensors)."""
    m = TENSOR_TYPE.search(raw)
    if not m:
        return None
    shape = tuple(int(d) for d in m["shape"].rstrip("x").split("x"))
    return TensorType(shape, m["ptr"] or m["elem"], m["layout"])


def in_user_file(location: Location | None, compiled_path: str | None, user_path: str | None) -> Location | None:
    """`location` moved to the user's file when it points into the copy that was compiled."""
    if location is None or not user_path or location.path != compiled_path:
        return location
    return Location(user_path, location.line, location.col)


def fact_evidence(
    name: str, kind: str, source: str, location: Location | None, args: dict[str, Any], raw: str | None
) -> Evidence:
    """An IR fact as evidence: stage `pass` for a per-pass snapshot, `ir` otherwise; None args dropped."""
    return Evidence(
        stage="pass" if source.startswith("pass:") else "ir",
        source=source,
        name=name,
        kind=kind,
        location=location,
        args=tuple((k, v) for k, v in args.items() if v is not None),
        raw=raw.strip() if raw else raw,
    )
