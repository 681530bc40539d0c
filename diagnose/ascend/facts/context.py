"""`AscendFactContext`: everything an Ascend fact extractor may read about one compiled launch.

Passed to every extractor, so a new input never changes an extractor's signature. It wraps one
kernel entry of the toolchain worker's result (`diagnose/ascend/worker.py`): the artefacts (`ttir`,
`ttadapter`), the pass snapshots, the grid and specialization. Parsed views are computed once.

Ops and their user locations come from the GPU layer's MLIR resolver
(`diagnose.ir.sourcemap.parse_mlir_ops`): ttadapter keeps the Python `file:line:col` of every op
because the worker compiles with `TRITON_DISABLE_LINE_INFO=0`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from diagnose.ir.facts.context import fact_evidence, in_user_file
from diagnose.ir.sourcemap import (
    FILE_LINE_COL,
    LOC_DEF,
    SSA,
    IROp,
    parse_mlir_ops,
    resolve_loc,
    user_location,
)
from diagnose.records import Evidence, Location
from diagnose.targets import Target

# func.func @k(%arg0: memref<?xi8> loc(...), %arg2: memref<?xf32> {tt.divisibility = 16 : i32, tt.tensor_kind = 0 : i32} loc(...), ...)
FUNC_ARG = re.compile(r"(%arg\d+): (memref<[^>]*>|[\w.]+)")
# attributes {SyncBlockLockArgIdx = 0 : i64, WorkspaceArgIdx = 1 : i64, global_kernel = "local", mix_mode = "aiv", parallel_mode = "simd"}
FUNC_ATTR = re.compile(r'(\w+) = ("[^"]*"|[-\w.]+)(?: : \w+)?')
# %c1024 = arith.constant 1024 : index      %cst_0 = arith.constant 2.000000e+00 : f32
CONSTANT = re.compile(r"^(%[\w-]+) = arith\.constant (-?[\d.e+-]+|0x[0-9A-Fa-f]+|true|false) : (\w+)$")
# %18 = call @triton_indirect_load(%arg2, %17, %8, %1) : (memref<?xf32>, ...) -> tensor<1024xf32> loc(#loc3)
CALL = re.compile(r"^\s*(?:(?P<res>%[\w-]+) = )?(?:func\.)?call @(?P<callee>[\w.]+)\(")
# %reduced = linalg.reduce ...      linalg.yield %20 : i32      (an op line, as parse_mlir_ops reads them)
OP_START = re.compile(r"^(?:%[-\w#:, %]+?\s*=\s*)?[a-z_]\w*\.[\w.]+")
# The program-id and grid-size arguments triton-adapter appends after the user's.
GRID_ARGS = ("num_programs(0)", "num_programs(1)", "num_programs(2)", "program_id(0)", "program_id(1)", "program_id(2)")


def split_loc(line: str) -> tuple[str, str]:
    """(the IR line without its trailing `loc(...)`, the loc's inside); the loc may nest parentheses."""
    text = line.rstrip()
    start = text.rfind(" loc(")
    while start >= 0 and text.endswith(")"):
        depth = 0
        for ch in text[start + 1 :]:
            depth += ch == "("
            depth -= ch == ")"
        if depth == 0:
            return text[:start].rstrip(), text[start + 5 : -1]
        start = text.rfind(" loc(", 0, start)
    return text, ""


def strip_loc(line: str) -> str:
    return split_loc(line)[0]


def with_locations(text: str) -> str:
    """The module with `loc(unknown)` on op lines that end without a location or a region.

    triton-adapter prints some ops with their region on the next line and no location of their
    own (`%reduced = linalg.reduce ins(...) outs(...) dimensions = [0]`); `parse_mlir_ops` expects
    every such line to end in `loc(...)` (it raises otherwise), so we supply an unknown one. Line
    numbers are unchanged.
    """
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if OP_START.match(stripped) and not stripped.endswith(("{", ")")) and not split_loc(stripped)[1]:
            line += " loc(unknown)"
        out.append(line)
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class CallOp:
    """A `call @f(...)` line (the func dialect prints it without `func.`, so `parse_mlir_ops`,
    which wants `dialect.op`, does not list it); shaped like an `IROp` where extractors need it."""

    ir_line: int
    callee: str
    line: str
    location: Location | None
    results: tuple[str, ...] = ()
    operands: tuple[str, ...] = ()
    name: str = "func.call"
    end_line: None = None


@dataclass(frozen=True)
class AscendFactContext:
    """One compiled launch (a worker kernel entry), its target, and the user file to report against."""

    kernel: dict
    target: Target
    user_path: str | None = None

    def text(self, stage: str) -> str:
        return self.kernel.get("artefacts", {}).get(stage, "")

    def ops(self, stage: str = "ttadapter") -> list[IROp]:
        if stage not in self._ops:
            self._ops[stage] = parse_mlir_ops(with_locations(self.text(stage)))
        return self._ops[stage]

    @cached_property
    def _ops(self) -> dict[str, list[IROp]]:
        return {}

    @cached_property
    def _lines(self) -> dict[str, list[str]]:
        return {}

    def line(self, op: IROp, stage: str = "ttadapter") -> str:
        """The op's whole IR line without its location (`IROp.raw` can be cut short)."""
        if stage not in self._lines:
            self._lines[stage] = self.text(stage).splitlines()
        return strip_loc(self._lines[stage][op.ir_line - 1]).strip()

    def closing_line(self, op: IROp, stage: str = "ttadapter") -> str:
        """The line that closes a region op (`} {ExtractedLoadOrStore}`), where attributes can sit."""
        if op.end_line is None:
            return ""
        self.line(op, stage)
        return strip_loc(self._lines[stage][op.end_line - 1]).strip()

    @cached_property
    def calls(self) -> list[CallOp]:
        lines = self.text("ttadapter").splitlines()
        aliases = {m[1]: m[2] for m in map(LOC_DEF.match, lines) if m}
        out = []
        for lineno, raw in enumerate(lines, 1):
            m = CALL.match(raw)
            if not m:
                continue
            body, loc = split_loc(raw)
            frames = [(f, int(ln), int(c)) for f, ln, c in FILE_LINE_COL.findall(resolve_loc(loc, aliases))]
            operands = tuple(SSA.findall(body[m.end() : body.rfind(")")]))
            results = (m["res"],) if m["res"] else ()
            out.append(CallOp(lineno, m["callee"], body.strip(), user_location(frames), results, operands))
        return out

    @cached_property
    def func(self) -> IROp | None:
        return next((op for op in self.ops() if op.name == "func.func" and "private" not in op.raw.split("(")[0]), None)

    @cached_property
    def func_attrs(self) -> dict[str, str]:
        """The kernel function's attributes (`mix_mode`, `parallel_mode`, ...), quotes removed."""
        if self.func is None:
            return {}
        line = self.line(self.func)
        tail = line[line.rfind("attributes {") :] if "attributes {" in line else ""
        return {k: v.strip('"') for k, v in FUNC_ATTR.findall(tail)}

    @cached_property
    def arg_names(self) -> dict[str, str]:
        """`%argN` -> the user's parameter name (`stride_row`), `program_id(0)`, or the runtime's own."""
        if self.func is None:
            return {}
        args = [name for name, _ in FUNC_ARG.findall(self.line(self.func).split(") attributes", 1)[0])]
        runtime = {int(self.func_attrs.get(k, -1)) for k in ("SyncBlockLockArgIdx", "WorkspaceArgIdx")}
        user = list(self.kernel.get("specialization", {}).get("signature", {}))
        out = {}
        rest = [a for i, a in enumerate(args) if i not in runtime]
        for i, arg in enumerate(args):
            if i in runtime:
                out[arg] = "sync_block_lock" if str(i) == self.func_attrs.get("SyncBlockLockArgIdx") else "workspace"
        if len(rest) == len(user) + len(GRID_ARGS):
            out.update(zip(rest, user + list(GRID_ARGS)))
        return out

    @cached_property
    def defs(self) -> dict[str, IROp]:
        out = {}
        for op in self.ops():
            for res in op.results:
                out[res.split(":")[0].split("#")[0]] = op
        return out

    @cached_property
    def constants(self) -> dict[str, str]:
        """SSA value -> the literal of its `arith.constant` (scalars only)."""
        out = {}
        for op in self.ops():
            if op.name == "arith.constant":
                m = CONSTANT.match(self.line(op))
                if m:
                    out[m[1]] = m[2]
        return out

    def value_name(self, value: str) -> str:
        """A readable name for an index or size operand: a constant, a user argument, or `?`.

        Follows `arith.index_cast` / `arith.extsi` back to a kernel argument.
        """
        seen = 0
        while seen < 8:
            if value in self.constants:
                return self.constants[value]
            if value in self.arg_names:
                return self.arg_names[value]
            op = self.defs.get(value)
            if op is None or op.name not in ("arith.index_cast", "arith.extsi", "arith.extui") or not op.operands:
                return "?"
            value, seen = op.operands[0], seen + 1
        return "?"

    def inside(self, op: IROp, names: tuple[str, ...]) -> IROp | None:
        """The innermost region op named one of `names` that contains `op`, if any."""
        best = None
        for other in self.ops():
            if other.name in names and other.contains(op) and (best is None or best.contains(other)):
                best = other
        return best

    @cached_property
    def kernel_location(self) -> Location | None:
        return self.place(self.func.location) if self.func else None

    @property
    def source_path(self) -> str | None:
        return self.kernel.get("source_path")

    def place(self, location: Location | None) -> Location | None:
        """A location in the user's file as given (the IR names the file the worker imported)."""
        return in_user_file(location, self.source_path, self.user_path)

    def evidence(
        self, name: str, kind: str, source: str, location: Location | None, args: dict[str, Any], raw: str | None
    ) -> Evidence:
        return fact_evidence(name, kind, source, self.place(location) or self.kernel_location, args, raw)

    @property
    def is_mixed(self) -> bool:
        """Whether the kernel uses the cube unit (`mix_mode` "mix" or "aic"), so runs on AI cores."""
        return self.func_attrs.get("mix_mode", "aiv") != "aiv"

    @property
    def options(self) -> dict:
        return self.kernel.get("options", {})


# memref<16x128xf32, strided<[?, 1], offset: ?>>      tensor<1024xi64>      memref<1024xi32>
SHAPED = re.compile(r"(?P<kind>memref|tensor)<(?P<shape>(?:[\d?]+x)*)(?P<elem>[a-z]\w*)")


@dataclass(frozen=True)
class ShapedType:
    """A memref or tensor type: static shape (None for `?` dims) and element type."""

    kind: str
    shape: tuple[int | None, ...]
    elem: str

    @property
    def elem_bytes(self) -> int:
        if self.elem in ("i1", "i8") or self.elem.startswith("f8"):
            return 1
        digits = re.search(r"\d+", self.elem)
        return max(1, int(digits[0]) // 8) if digits else 4

    @property
    def static(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def numel(self) -> int | None:
        if not self.static:
            return None
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int | None:
        return None if self.numel is None else self.numel * self.elem_bytes

    def __str__(self) -> str:
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        return f"{dims}x{self.elem}" if dims else self.elem


def shaped_types(text: str) -> list[ShapedType]:
    """Every memref/tensor type written in `text`, in order."""
    out = []
    for m in SHAPED.finditer(text):
        dims = tuple(None if d == "?" else int(d) for d in m["shape"].rstrip("x").split("x") if d)
        out.append(ShapedType(m["kind"], dims, m["elem"]))
    return out


def result_type(line: str) -> ShapedType | None:
    """The type an op line gives its result: the last shaped type after `->`, else after ` : `."""
    for marker in ("->", " : "):
        if marker in line:
            types = shaped_types(line.rsplit(marker, 1)[1])
            if types:
                return types[-1]
    return None
