"""Python's `ast.parse`, safe to call from several threads at once.

CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter state, not per thread:
two threads converting trees at the same time corrupt it and one fails with
`SystemError: AST constructor recursion depth mismatch` (python/cpython#106905). `diagnose` parses
from threads (the LSP server's workers, the rewrite pipeline's pools), so every parse goes through
one lock. Parsing is microseconds to milliseconds; the lock costs nothing that matters.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()  # process-wide on purpose: the state it guards is process-wide


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse(source, filename, mode)`, serialised with every other parse in this process."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)


def compile_source(source: str, filename: str = "<unknown>") -> None:
    """Raise SyntaxError unless `source` parses and compiles (byte-compiles, nothing runs)."""
    with _LOCK:
        compile(source, filename, "exec")
