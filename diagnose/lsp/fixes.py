"""Quick fixes for triage findings, as plain edits the code-action handler turns into WorkspaceEdits.

Two kinds:
- rewrites from `diagnose.rewrite` (a `Rewrite` whose `codes` list the finding's code, whose
  precondition holds on the document): applied as the line edits that turn the document into the
  rewritten source; labelled unsafe, and never preferred, when the rewrite may change numerics.
  `rewrites_for` is the seam to the rewrite table; `candidate_fix` does the same for a rewritten
  kernel (`Candidate`) that comes from elsewhere (the agent).
- the suppression that always exists: a `# diagnose: ignore[CODE]` comment on the finding's line,
  which triage honours.

Running a rewrite takes 0.05-0.5 s, so a code-action menu offers the rewrites from the table alone
(`offered_rewrites`, `suppression_edit`: no rewrite runs, nothing is parsed) and computes the chosen
one's edits when it is picked (`rewrite_fix_by_id`, `suppression_fix`).
"""

from __future__ import annotations

import io
import logging
import tokenize
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Literal

from diagnose.errors import DiagnoseError
from diagnose.records import Candidate, Finding
from diagnose.targets import lookup
from diagnose.triage.engine import SUPPRESSION

if TYPE_CHECKING:
    from diagnose.rewrite.rewrite import Rewrite, RewriteContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LineEdit:
    """Replace the characters [start_col, end_col) from `start_line` to `end_line` (0-based) by `text`."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int
    text: str


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[LineEdit, ...]
    safety: Literal["safe", "unsafe"] = "safe"
    preferred: bool = False

    @property
    def label(self) -> str:
        return fix_label(self.title, self.safety)


def fix_label(title: str, safety: Literal["safe", "unsafe"]) -> str:
    return f"{title} (unsafe: changes numerics)" if safety == "unsafe" else title


def suppression_title(code: str) -> str:
    return f"Suppress {code} on this line"


def rewrite_fixes(finding: Finding, source: str, path: str, target: str) -> list[Fix]:
    """The rewrites that answer `finding` and apply to `source`, as edits."""
    rewrites = rewrites_for(finding.code)
    if not rewrites:
        return []
    from diagnose.rewrite.rewrite import RewriteContext  # deferred: imports libcst

    try:
        ctx = RewriteContext(source=source, path=path, target=lookup(target), findings=(finding,))
    except DiagnoseError:  # a target the registry does not know (settings check theirs)
        return []
    fixes = [rewrite_fix(rewrite, ctx) for rewrite in rewrites]
    return [f for f in fixes if f is not None]


def offered_rewrites(code: str, target: str) -> list[Rewrite]:
    """The rewrites that answer `code` and are meant for the target's backend; none runs (fast)."""
    try:
        backend = lookup(target).backend
    except DiagnoseError:  # a target the registry does not know (settings check theirs)
        return []
    return [rewrite for rewrite in rewrites_for(code) if backend in rewrite.backends]


def rewrite_fix_by_id(rewrite_id: str, finding: Finding, source: str, path: str, target: str) -> Fix | str:
    """One rewrite of the table as a fix for `finding`, or the one-line reason it does not apply."""
    from diagnose.rewrite import table  # deferred: imports libcst
    from diagnose.rewrite.rewrite import RewriteContext  # deferred: imports libcst

    rewrite = table.REWRITES.get(rewrite_id)
    if rewrite is None:
        return f"no rewrite {rewrite_id!r}"
    try:
        ctx = RewriteContext(source=source, path=path, target=lookup(target), findings=(finding,))
    except DiagnoseError as err:
        return str(err)
    return _rewrite_fix(rewrite, ctx)


def warm_up() -> None:
    """Import the rewrite table (blocking), so that the first menu does not wait for it."""
    from diagnose.rewrite import table  # noqa: F401 - deferred: imports libcst; this is the warm-up


def rewrites_for(code: str) -> list[Rewrite]:
    """The rewrites of the central table (`diagnose/rewrite/table.py`) that answer finding `code`."""
    from diagnose.rewrite import table  # deferred: imports libcst

    return [table.REWRITES[rewrite_id] for rewrite_id in table.rewrites_for(code)]


def rewrite_fix(rewrite: Rewrite, ctx: RewriteContext) -> Fix | None:
    """The rewrite as a fix when its precondition holds; a rewrite that fails is logged and skipped."""
    fix = _rewrite_fix(rewrite, ctx)
    return fix if isinstance(fix, Fix) else None


def _rewrite_fix(rewrite: Rewrite, ctx: RewriteContext) -> Fix | str:
    from diagnose.rewrite.rewrite import NotApplicable  # deferred: imports libcst

    try:
        new = rewrite.apply(ctx)
    except NotApplicable as why:
        return str(why)
    except Exception as err:  # noqa: BLE001 - a broken rewrite must not take the code actions with it
        log.warning("rewrite %s failed on %s: %s", rewrite.id, ctx.path, err)
        return f"{rewrite.id} failed: {type(err).__name__}: {err}"
    return source_fix(rewrite.title, ctx.source, new, rewrite.safety) or f"{rewrite.id}: changes nothing"


def candidate_fix(candidate: Candidate, source: str) -> Fix | None:
    """A rewritten kernel from elsewhere (the agent) as a fix."""
    made_by = f" ({', '.join(candidate.made_by)})" if candidate.made_by else ""
    return source_fix(f"Apply rewrite {candidate.id}{made_by}", source, candidate.source, candidate.safety)


def source_fix(title: str, old: str, new: str, safety: Literal["safe", "unsafe"]) -> Fix | None:
    """The smallest line edits from `old` to `new`; None when they are the same."""
    edits = line_edits(old, new)
    if not edits:
        return None
    return Fix(title, edits, safety, preferred=safety == "safe")


def line_edits(old: str, new: str) -> tuple[LineEdit, ...]:
    """Whole-line replacements that turn `old` into `new`."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    edits = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            edits.append(LineEdit(i1, 0, i2, 0, "".join(b[j1:j2])))
    return tuple(edits)


def suppression_fix(code: str, source: str, line: int) -> Fix | None:
    """`# diagnose: ignore[CODE]` on 0-based `line`, or None where a comment cannot go.

    An existing `ignore[...]` on the line gets the code added; a line continued with a backslash
    cannot take a comment, and neither can a line that ends inside a multi-line string (the comment
    would become part of the string).
    """
    lines = source.splitlines()
    if not 0 <= line < len(lines):
        return None
    edit = suppression_edit(code, lines[line], line)
    if edit is None or _ends_inside_token(source, line + 1):
        return None
    return Fix(suppression_title(code), (edit,))


def suppression_edit(code: str, text: str, line: int) -> LineEdit | None:
    """The comment's edit from the line's own text (`text`, without its end), or None where it cannot
    go; `suppression_fix` also reads the lines before (a line ending inside a string)."""
    if code == "TRI000":  # a syntax error is fixed, not silenced
        return None
    match = SUPPRESSION.search(text)
    if match:
        listed = [c.strip() for c in (match.group("codes") or "").split(",") if c.strip()]
        if match.group("codes") is None or code in {c.upper() for c in listed}:
            return None
        return LineEdit(line, match.start(), line, match.end(), f"# diagnose: ignore[{', '.join(listed + [code])}]")
    body = text.rstrip()
    if body.endswith("\\") or not body:
        return None
    return LineEdit(line, len(body), line, len(text), f"  # diagnose: ignore[{code}]")


def _ends_inside_token(source: str, line: int) -> bool:
    """Whether 1-based `line` ends inside a token that goes on to the next line (a string)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.start[0] > line:
                return False
            if token.start[0] <= line < token.end[0]:
                return True
    except (tokenize.TokenError, SyntaxError):  # a broken file: nothing to tell, the comment is offered
        return False
    return False
