"""IR facts for a saved document: run `diagnose inspect`, keep what maps to the document's lines.

`inspect_saved(path, target)` is the blocking call (`diagnose.ir.cli.ir_facts`, the inspect command's data, which imports the
user's file in a worker subprocess and caches by file hash); the server runs it off the event loop.
`IrSnapshot` holds the facts together with the saved text they refer to, so that they can be shown
on the lines of the text as it is being edited: `line_map` follows unchanged lines and drops the
facts of lines that were edited since the save.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path

from diagnose import syntax
from diagnose.capture.prepare import inspection_path
from diagnose.ir.cli import ir_facts
from diagnose.ir.inspect import evidence_from_dict
from diagnose.records import Evidence

# Facts about the whole kernel, anchored at its `def` line: shown on every line of the kernel's hover.
KERNEL_FACTS = (
    "PtxasResources",
    "RegisterSpill",
    "AmdgcnResources",
    "LayoutConversions",
    "SharedMemoryUsage",
    "SharedMemoryOverLimit",
    "LaunchShape",
)


@dataclass(frozen=True)
class KernelFacts:
    """One compiled kernel (one autotune config) of the document, its extent and its facts."""

    title: str
    def_line: int | None  # 1-based, in the saved text
    end_line: int | None
    metadata: dict = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    error: dict | None = None

    def contains(self, line: int) -> bool:
        return self.def_line is not None and self.def_line <= line <= (self.end_line or self.def_line)

    def kernel_facts(self) -> list[Evidence]:
        return [e for e in self.evidence if e.name in KERNEL_FACTS]

    def line_facts(self, line: int) -> list[Evidence]:
        return [e for e in self.evidence if e.location and e.location.line == line and e.name not in KERNEL_FACTS]


@dataclass(frozen=True)
class IrSnapshot:
    """The facts of one inspect run and the saved lines (without line ends) they were computed on."""

    target: str
    lines: tuple[str, ...]
    kernels: tuple[KernelFacts, ...]
    from_cache: bool = False
    seconds: float = 0.0


def inspect_saved(path: str, target: str) -> dict:
    """The inspect JSON for the file on disk (blocking: a worker subprocess when the cache is cold).

    Raises `DiagnoseError`: `UsageError` for a file it cannot inspect (no kernels, no example
    arguments, a target that cannot compile here), the base class when the worker crashed.
    """
    # A kernel module (no task format) compiles at its captured launches, else at guessed ones.
    return ir_facts(inspection_path(path), target)


def snapshot_from_result(result: dict, path: str, saved_text: str) -> IrSnapshot:
    """Keep the kernels and facts that belong to `path` (a task may import kernels from elsewhere)."""
    here = _resolved(path)
    lines = tuple(saved_text.splitlines())
    extents = function_extents(saved_text)
    kernels = []
    for k in result.get("kernels", []):
        evidence = tuple(
            e
            for e in map(evidence_from_dict, k.get("evidence", []))
            if e.location is not None and _resolved(e.location.path) == here
        )
        def_line = next((e.location.line for e in evidence if e.name in KERNEL_FACTS), None)
        names = (k.get("name"), k.get("kernel"))
        if def_line is None:
            def_line = next((extents[n][0] for n in names if n in extents), None)
        end_line = next((end for start, end in extents.values() if start == def_line), None)
        if evidence or (k.get("error") and def_line is not None):
            kernels.append(
                KernelFacts(
                    k.get("title") or k.get("kernel", "?"),
                    def_line,
                    end_line,
                    k.get("metadata", {}),
                    evidence,
                    k.get("error"),
                )
            )
    return IrSnapshot(
        result.get("target", "?"),
        lines,
        tuple(kernels),
        bool(result.get("from_cache")),
        float(result.get("seconds") or 0.0),
    )


def function_extents(source: str) -> dict[str, tuple[int, int]]:
    """Top-level and nested function names -> (def line, last line); empty if the text does not parse."""
    try:
        tree = syntax.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    return {
        node.name: (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def line_map(saved: tuple[str, ...], current: list[str]) -> dict[int, int]:
    """1-based saved line -> 1-based current line, for the lines left unchanged since the save."""
    if saved == tuple(current):
        return {i: i for i in range(1, len(saved) + 1)}
    matcher = SequenceMatcher(None, saved, current, autojunk=False)
    out: dict[int, int] = {}
    for a, b, size in matcher.get_matching_blocks():
        for i in range(size):
            out[a + i + 1] = b + i + 1
    return out


def _resolved(path: str) -> str:
    try:
        return str(Path(path).resolve())
    except OSError:
        return path
