from __future__ import annotations

import sys

from diagnose import syntax
from diagnose.triage.rule import Hit, Rule, Span


class FileDoesNotParse(Rule):
    """## What it finds
    A file Python cannot parse: a syntax error, a null byte, or nesting too deep to analyse.
    A file that is valid Python of a newer version than the interpreter running diagnose (a 3.12
    `type` alias, `def f[T]`, a PEP 701 f-string, under Python 3.11) is not an error: it is read
    with libcst's parser and written back in syntax this Python reads, line for line
    (`diagnose.syntax.lowered`: f-strings as empty strings, type parameters dropped), every rule
    runs on that, and this rule reports once, as `info`, which construct needed which Python.

    ## Why it is slow
    It is not slow; it is not a program yet. Triage says so once, at the error, instead of failing,
    so the editor keeps working while you type. No other rule runs on a file that does not parse.

    ## Example
    ```python
    @triton.jit
    def add_kernel(x_ptr, y_ptr, n
        pid = tl.program_id(0)
    ```

    ## Use instead
    Fix the syntax error; every other rule runs as soon as the file parses. For the `info` case,
    run diagnose under the Python the message names (or newer).

    ## Known false positives
    Parsing used the running interpreter's grammar, so a valid Python 3.12 file triaged under
    Python 3.11 was reported as an error that "does not parse". When `ast.parse` fails, the file is
    now read again with libcst's parser, which knows the grammars of 3.0 to 3.14; if it parses there
    and uses a construct newer than the running Python (`match` 3.10; `except*`, `x[*ys]` 3.11;
    `type`, type parameters, PEP 701 f-strings 3.12; type-parameter defaults 3.13; t-strings 3.14),
    the finding is `info` naming that version and the other rules run on the lowered text. Still an
    error: a newer-version file that also has a real syntax error, and newer syntax libcst does not
    know.

    ## Targets
    cuda, hip, ascend.

    ## References
    Python `ast.parse`; libcst `parse_module`; PEP 695 (type parameters), PEP 701 (f-strings),
    PEP 696 (type-parameter defaults), PEP 750 (t-strings).
    """

    code = "TRI000"
    name = "file-does-not-parse"
    message = "file does not parse: {reason}"
    fix_title = "Fix the syntax error"
    severity = "error"
    confidence = "high"
    evidence_kind = "analysis"

    def check(self, ctx):
        err = ctx.syntax_error or ctx.newer_syntax
        if err is None:
            return
        line = max(1, err.lineno or 1)
        col = min(max(0, (err.offset or 1) - 1), len(ctx.line(line)))
        newer = newer_grammar(ctx.source, err)
        if newer is not None:
            version, feature = newer
            running = "%d.%d" % sys.version_info[:2]
            wanted = "%d.%d" % version
            message = (
                f"file needs Python {wanted} to parse ({feature}); this interpreter is Python {running}, "
                f"so no rule could run: run diagnose under Python {wanted} or newer to analyse it"
            )
            if ctx.syntax_error is None:  # read through `syntax.lowered`: the rules did run
                message = (
                    f"file uses Python {wanted} syntax ({feature}) and this interpreter is Python {running}: "
                    "it was read with libcst's parser and analysed with f-strings as empty strings and "
                    "type parameters left out"
                )
            yield Hit(
                Span(line, col),
                message,
                (("python", wanted), ("running", running), ("feature", feature)),
                severity="info",
            )
            return
        yield self.hit(Span(line, col), reason=err.msg or "syntax error")


def newer_grammar(source: str, err: SyntaxError) -> tuple[tuple[int, int], str] | None:
    """(version, what needs it) when `source` is valid Python of a version newer than the one running,
    which is why `ast.parse` failed; None when it is a plain syntax error.

    libcst's parser reads the union of Python 3 grammars (3.0-3.14) whatever interpreter runs it, so
    a file it accepts is valid Python of *some* version; the constructs it contains say which:
    `match` 3.10, `except*` and `x[*ys]` 3.11, `type X = ...`, `def f[T]`, and f-strings that nest
    their own quotes (PEP 701) 3.12, type-parameter defaults 3.13, t-strings 3.14. A file libcst
    accepts without any of those failed `ast.parse` for another reason and stays an error."""
    if "\x00" in source or "nest" in (err.msg or ""):
        return None  # null bytes, or nesting deeper than a parser's stack: not a grammar question
    try:
        import libcst as cst  # deferred: libcst is heavy; only a file `ast` rejects needs it

        module = cst.parse_module(source)
    except Exception:  # noqa: BLE001 - any failure of the second parser means "a syntax error"
        return None
    finder = _newer_syntax_finder(module)
    try:
        module.visit(finder)
    except RecursionError:
        return None
    needed = [f for f in finder.found if f[0] > sys.version_info[:2]]
    return max(needed, key=lambda f: f[0]) if needed else None


def _newer_syntax_finder(module):
    """A libcst visitor collecting (version, construct) for every construct newer than some Python.
    Built on demand, so libcst is imported only for files `ast` rejects."""
    import libcst as cst  # deferred: libcst is heavy

    class Finder(cst.CSTVisitor):
        def __init__(self):
            super().__init__()
            self.found: list[tuple[tuple[int, int], str]] = []

        def visit_Match(self, node):
            self.found.append(((3, 10), "a `match` statement"))

        def visit_TryStar(self, node):
            self.found.append(((3, 11), "`except*`"))

        def visit_Index(self, node):
            if node.star:
                self.found.append(((3, 11), "a starred subscript"))

        def visit_TypeAlias(self, node):
            self.found.append(((3, 12), "a `type` alias statement"))

        def visit_TypeParameters(self, node):
            self.found.append(((3, 12), "type parameters"))

        def visit_TypeParam(self, node):
            if node.default is not None:
                self.found.append(((3, 13), "a type-parameter default"))

        def visit_FormattedString(self, node):
            if sys.version_info < (3, 12) and not _old_parser_reads(module.code_for_node(node)):
                self.found.append(((3, 12), "a PEP 701 f-string: nested quotes, backslashes or comments"))
                return False
            return True

        def visit_TemplatedString(self, node):
            self.found.append(((3, 14), "a t-string"))

    return Finder()


def _old_parser_reads(fstring: str) -> bool:
    try:
        syntax.parse("(" + fstring + "\n)", mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
