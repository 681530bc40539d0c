from __future__ import annotations

from diagnose.triage.rule import Rule, Span


class FileDoesNotParse(Rule):
    """## What it finds
    A file Python cannot parse: a syntax error, a null byte, or nesting too deep to analyse.

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
    Fix the syntax error; every other rule runs as soon as the file parses.

    ## Targets
    cuda, hip, ascend.

    ## References
    Python `ast.parse`.
    """

    code = "TRI000"
    name = "file-does-not-parse"
    message = "file does not parse: {reason}"
    fix_title = "Fix the syntax error"
    severity = "error"
    confidence = "high"
    evidence_kind = "analysis"

    def check(self, ctx):
        err = ctx.syntax_error
        if err is None:
            return
        line = max(1, err.lineno or 1)
        col = min(max(0, (err.offset or 1) - 1), len(ctx.line(line)))
        yield self.hit(Span(line, col), reason=err.msg or "syntax error")
