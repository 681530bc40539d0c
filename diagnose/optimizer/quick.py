"""Candidates for one finding without compiling anything: the editor's quick fixes.

`candidates_for_finding(finding, source, path, target)` applies each rewrite that answers the
finding's code and whose precondition holds, with its default launch values (no launch-config
search, no IR, no verification: the editor shows them as suggestions; `diagnose rewrite` and the
agent verify). Pure and fast: milliseconds per rewrite.
"""

from __future__ import annotations

from diagnose.records import Candidate, Finding
from diagnose.optimizer.pipeline import build, make_candidate
from diagnose.rewrite.rewrite import RewriteContext
from diagnose.rewrite.table import REWRITES, rewrites_for
from diagnose.targets import DEFAULT_TARGET, lookup


def candidates_for_finding(
    finding: Finding, source: str, path: str = "<source>", target: str = DEFAULT_TARGET
) -> list[Candidate]:
    ctx = RewriteContext(source, path, lookup(target), (finding,))
    out = []
    for rewrite_id in dict.fromkeys((*finding.rewrites, *rewrites_for(finding.code))):
        rewrite = REWRITES.get(rewrite_id)
        if rewrite is None or rewrite.needs_ir or not rewrite.check(ctx).holds:
            continue
        built = build(ctx, [rewrite_id], None)
        if built.steps:
            out.append(make_candidate(ctx, built))
    return out
