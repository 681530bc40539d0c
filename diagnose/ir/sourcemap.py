"""Source mapping: every MLIR op and every PTX/AMDGCN instruction back to a user Python line.

MLIR text (TTIR, TTGIR, per-pass snapshots) keeps `#locN` aliases: `#loc9 = loc("k.py":19:13)`,
`#loc31 = loc("x"(#loc9))` (a name), `#loc36 = loc(callsite(#loc1 at #loc31))` (inlined code);
op lines end with `loc(#locN)`, and ops with regions carry theirs on the closing `}` line. The
resolver expands aliases; the frames of a callsite read callee first, outermost caller last. An op
maps to the innermost frame that is user code, so ops of inlined `tl.*` helpers (in
`triton/language/`) land on the user line that called the helper, while ops of the user's own
`@triton.jit` helpers keep the helper's line.

PTX and AMDGCN carry `.file N "path"` (AMDGCN: `.file N "dir" "name"`) and `.loc N line col`
directives before the instructions they cover; inlined code is told by the comment LLVM prints
after the directive (`// standard.py:43:17 @[ k.py:14:33 ]`) or by an `inlined_at` operand.

`tests/ir/test_sourcemap.py` checks this text resolver against Triton's own MLIR bindings
(`mlir.binding_ops`): same ops, same locations for every op that has a result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diagnose.records import Location

# Paths of Triton's own Python: frames in them are library code, not the user's.
LIBRARY_MARKERS = ("/triton/language/", "/triton/runtime/", "/triton/experimental/")

# #loc36 = loc(callsite(#loc1 at #loc31))
LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
# %offs_m_3 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #blocked> loc(#loc54)
OP_LINE = re.compile(r"^\s*(?:(?P<res>%[-\w#:, %]+?)\s*=\s*)?(?P<name>\"[\w.]+\"|[a-z_]\w*\.[\w.]+)")
# ... : tensor<128xf32> loc(#loc12)      or      } loc("k.py":3:1)
TRAIL_LOC = re.compile(r"\s*\bloc\((#loc\d*|.*)\)\s*$")
# "/tmp/k.py":17:27
FILE_LINE_COL = re.compile(r'"([^"]+)":(\d+):(\d+)')
# loc("acc"(#loc3))  -> the Python variable name "acc"
LOC_NAME = re.compile(r'"([A-Za-z_]\w*)"\(')
SSA = re.compile(r"%[\w#-]+")


@dataclass(frozen=True)
class IROp:
    """One MLIR op: its name, 1-based line in the text, the line without its loc, SSA results and
    operands, the user location, the full frame chain (callee first) and, for an op with regions,
    the line that closes them."""

    index: int
    name: str
    ir_line: int
    raw: str
    results: tuple[str, ...]
    operands: tuple[str, ...]
    location: Location | None
    frames: tuple[tuple[str, int, int], ...] = ()
    var: str | None = None
    end_line: int | None = None

    def contains(self, other: IROp) -> bool:
        """Whether `other` lies inside this op's regions (for region ops such as `scf.for`)."""
        return self.end_line is not None and self.ir_line < other.ir_line < self.end_line


@dataclass(frozen=True)
class AsmLine:
    """One line of PTX or AMDGCN with the user location of the `.loc` that covers it."""

    ir_line: int
    text: str
    location: Location | None


def is_library(path: str) -> bool:
    return any(marker in path for marker in LIBRARY_MARKERS)


def user_location(frames: list[tuple[str, int, int]] | tuple) -> Location | None:
    """The innermost frame outside Triton's library; the outermost one when all are library code."""
    for path, line, col in frames:
        if not is_library(path):
            return Location(path, line, col)
    if frames:
        path, line, col = frames[-1]
        return Location(path, line, col)
    return None


def resolve_loc(loc: str, aliases: dict[str, str], depth: int = 0) -> str:
    """Expand every `#locN` alias in `loc` (aliases may refer to aliases)."""
    if depth > 64:
        return loc
    return re.sub(
        r"#loc\d*\b",
        lambda m: f"({resolve_loc(aliases[m[0]], aliases, depth + 1)})" if m[0] in aliases else m[0],
        loc,
    )


def parse_mlir_ops(text: str) -> list[IROp]:
    """Every op of a printed MLIR module, in text order, with its resolved user location."""
    lines = text.splitlines()
    aliases = {m[1]: m[2] for m in map(LOC_DEF.match, lines) if m}
    pending: list[dict] = []
    stack: list[int | None] = []
    for lineno, line in enumerate(lines, 1):
        s = line.strip()
        if not s or s.startswith(("#", "^bb", "//")):
            continue
        closes, opens = s.startswith("}"), s.endswith("{")
        trail = TRAIL_LOC.search(s)
        if closes:
            if not opens and stack:
                i = stack.pop()
                if i is not None:
                    pending[i]["end_line"] = lineno
                    if trail and pending[i]["loc"] is None:
                        pending[i]["loc"] = trail[1]
            continue
        m = OP_LINE.match(s)
        if not m:
            if opens:
                stack.append(None)  # e.g. `module attributes {...} {`
            continue
        body = s[: trail.start()] if trail else s
        results = tuple(SSA.findall(m["res"] or ""))
        pending.append(
            dict(
                name=m["name"].strip('"'),
                ir_line=lineno,
                raw=body,
                results=results,
                operands=tuple(v for v in SSA.findall(body[m.end("name") :]) if v not in results),
                loc=trail[1] if (trail and not opens) else None,
                end_line=None,
            )
        )
        if opens:
            stack.append(len(pending) - 1)
    ops = []
    for index, p in enumerate(pending):
        loc = p.pop("loc")
        expanded = resolve_loc(loc, aliases) if loc else ""
        frames = tuple((f, int(ln), int(c)) for f, ln, c in FILE_LINE_COL.findall(expanded))
        names = LOC_NAME.findall(expanded)
        ops.append(
            IROp(index=index, location=user_location(frames), frames=frames, var=names[-1] if names else None, **p)
        )
    return ops


# .file	1 "/tmp/k.py"        AMDGCN: .file	1 "/tmp" "k.py"
ASM_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?')
# .loc	1 15 20                         // k.py:15:20
# .loc	2 43 17 is_stmt 1               ; standard.py:43:17 @[ k.py:14:33 ]
ASM_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?P<rest>.*)$")
# inlined_at 1 14 33
INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
# standard.py:43:17 @[ k.py:14:33 ]   -> ("standard.py", 43, 17), ("k.py", 14, 33)
COMMENT_FRAME = re.compile(r"([^\s@\[\]:;/]+\.py):(\d+):(\d+)")


def parse_asm_lines(text: str) -> list[AsmLine]:
    """Every line of PTX or AMDGCN with the user location of the `.loc` covering it."""
    lines = text.splitlines()
    files: dict[int, str] = {}
    for line in lines:
        m = ASM_FILE.match(line)
        if m:
            files[int(m[1])] = f"{m[2]}/{m[3]}" if m[3] else m[2]
    by_base: dict[str, str] = {}
    for path in files.values():
        base = path.rsplit("/", 1)[-1]
        if base not in by_base or is_library(by_base[base]):
            by_base[base] = path
    out: list[AsmLine] = []
    current: Location | None = None
    for lineno, line in enumerate(lines, 1):
        m = ASM_LOC.match(line)
        if m:
            current = _asm_location(m, files, by_base)
        out.append(AsmLine(lineno, line, current))
    return out


def _asm_location(m: re.Match, files: dict[int, str], by_base: dict[str, str]) -> Location | None:
    if int(m[2]) == 0:
        return None  # `.loc 1 0 0`: compiler-made code with no line
    frames = [(files.get(int(m[1]), "?"), int(m[2]), int(m[3]))]
    rest = m["rest"]
    frames += [(files.get(int(f), "?"), int(ln), int(c)) for f, ln, c in INLINED_AT.findall(rest)]
    comment = re.split(r"//|;", rest, maxsplit=1)
    if len(frames) == 1 and len(comment) == 2 and "@[" in comment[1]:
        frames += [(by_base.get(b, b), int(ln), int(c)) for b, ln, c in COMMENT_FRAME.findall(comment[1])[1:]]
    return user_location(frames)


# !7 = !DILocation(line: 9, column: 25, scope: !4, inlinedAt: !12)
LLVM_DILOC = re.compile(
    r"^(![\d]+) = !DILocation\(line: (\d+), column: (\d+), scope: (![\d]+)(?:, inlinedAt: (![\d]+))?"
)
# !4 = distinct !DISubprogram(name: "add_kernel", ..., scope: !1, file: !1, line: 8, ...)   /   !DILexicalBlockFile(scope: !4, file: !1 ...)
LLVM_SCOPE = re.compile(r"^(![\d]+) = (?:distinct )?!DI(?:Subprogram|LexicalBlock\w*)\(.*?\bfile: (![\d]+)")
# !1 = !DIFile(filename: "k.py", directory: "/tmp")
LLVM_FILE = re.compile(r'^(![\d]+) = !DIFile\(filename: "([^"]*)", directory: "([^"]*)"')
# %5 = load float, ptr addrspace(1) %4, align 16, !dbg !13
LLVM_DBG = re.compile(r"!dbg (![\d]+)")


def parse_llir_lines(text: str) -> list[AsmLine]:
    """Every line of LLVM IR with the user location of its `!dbg` (inlinedAt chains followed)."""
    lines = text.splitlines()
    files, scopes, locs = {}, {}, {}
    for line in lines:
        if m := LLVM_FILE.match(line):
            files[m[1]] = f"{m[3]}/{m[2]}" if m[3] else m[2]
        elif m := LLVM_SCOPE.match(line):
            scopes[m[1]] = m[2]
        elif m := LLVM_DILOC.match(line):
            locs[m[1]] = (int(m[2]), int(m[3]), m[4], m[5])

    def frames(ref: str, depth: int = 0) -> list[tuple[str, int, int]]:
        if ref not in locs or depth > 32:
            return []
        line, col, scope, inlined = locs[ref]
        here = (files.get(scopes.get(scope, ""), "?"), line, col)
        return [here] + (frames(inlined, depth + 1) if inlined else [])

    out = []
    for lineno, line in enumerate(lines, 1):
        m = LLVM_DBG.search(line) if not line.startswith("!") else None
        out.append(AsmLine(lineno, line, user_location(frames(m[1])) if m else None))
    return out


# //## File "/tmp/k.py", line 11 inlined at "/tmp/k.py", line 20
SASS_FILE_LINE = re.compile(r'//## File "([^"]+)", line (\d+)')


def parse_sass_lines(text: str) -> list[AsmLine]:
    """Every line of `nvdisasm -g` output with the user location its `//## File` comment gives."""
    out, current = [], None
    for lineno, line in enumerate(text.splitlines(), 1):
        if "//## File" in line:
            current = user_location([(f, int(n), 0) for f, n in SASS_FILE_LINE.findall(line)])
        out.append(AsmLine(lineno, line, current))
    return out
