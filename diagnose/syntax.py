"""Python's `ast.parse`, safe to call from several threads at once.

CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter state, not per thread:
two threads converting trees at the same time corrupt it and one fails with
`SystemError: AST constructor recursion depth mismatch` (python/cpython#106905). `diagnose` parses
from threads (the LSP server's workers, the rewrite pipeline's pools), so every parse goes through
one lock. Parsing is microseconds to milliseconds; the lock costs nothing that matters.

`ast.parse` knows only the running interpreter's grammar, while kernel files are written for whatever
Python their project uses. `lowered(source)` reads a file that `ast` rejects with libcst's parser (the
grammars of Python 3.0 to 3.14) and writes it back in syntax every supported Python reads, line for
line: f-strings (and t-strings) become empty string literals of the same line count, `type X = ...`
becomes `X = ...`, and type parameters are dropped. What analysis reads (kernels, calls, constants)
is unchanged; what is lost (an f-string's text, a type parameter) is never what a rule reads.
`parse_any` is `parse` with that fallback.
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


def parse_any(source: str, filename: str = "<unknown>") -> tuple[ast.AST, SyntaxError | None]:
    """The tree of `source` and, when it needed `lowered` to parse, the error `ast` first raised (the
    file is newer Python than this interpreter); raises that SyntaxError when libcst rejects it too."""
    try:
        return parse(source, filename), None
    except SyntaxError as err:
        text = lowered(source)
        if text is None:
            raise
        try:
            return parse(text, filename), err
        except SyntaxError:
            raise err from None


def lowered(source: str) -> str | None:
    """`source` in syntax this interpreter reads, line for line (see the module's docstring), or None
    when libcst cannot parse it either."""
    try:
        import libcst as cst  # deferred: libcst is heavy; only a file `ast` rejects needs it

        module = cst.parse_module(source)
        return module.visit(_lowering(cst)).code
    except Exception:  # noqa: BLE001 - any failure of the second parser (nesting too deep included)
        return None


def _lowering(cst):
    """The libcst transformer behind `lowered` (built on demand: libcst is imported only for files
    `ast` rejects)."""

    def blank(node) -> object:
        lines = cst.Module([]).code_for_node(node).count("\n")
        return cst.SimpleString('"""' + "\n" * lines + '"""' if lines else '""')

    class Lowering(cst.CSTTransformer):
        def leave_FormattedString(self, original, updated):
            return blank(original)

        def leave_TemplatedString(self, original, updated):
            return blank(original)

        def leave_TypeAlias(self, original, updated):
            return cst.Assign(targets=[cst.AssignTarget(updated.name)], value=updated.value)

        def leave_FunctionDef(self, original, updated):
            return updated.with_changes(type_parameters=None)

        def leave_ClassDef(self, original, updated):
            return updated.with_changes(type_parameters=None)

    return Lowering()
