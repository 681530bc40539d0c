"""Evidence-backed rewrites: libcst codemods (one per module), launch-config search, an optional LLM proposer.

Library entry points (importing this package imports neither torch nor triton):

- `propose(task_path, findings, evidence, target) -> [Candidate]`, `declined(...) -> [(id, why not)]` and
  `evaluate(task_path, candidates, device, target) -> [(Candidate, Verdict)]` (`pipeline.py`);
  `pareto_front(results)`, `survey(ctx)`, `build(ctx, ids, options)`
- `rewrite_command(path, apply, write, target, device, list_only) -> (exit code, text)` (`command.py`)
- `REWRITES`, `CODE_REWRITES`, `rewrites_for(code)` (`table.py`): the central table
- `search(rewrite, ctx, plan, SearchOptions)` (`search.py`), ranking in `ranking.py`
- `llm_propose(...)`, `LLMConfig`, `TokenLedger` (`llm.py`, extra `llm`: the `openai` client)
- `candidates_for_finding(finding, source, path, target)`: quick, search-free candidates (the LSP)

Layout: `rewrite.py` (the base class and context); shared helpers `source.py` (reading: kernels,
launch sites in any host function, host bindings), `edit.py` (editing nodes by identity),
`passes.py`, `launch_values.py`, `matmul.py`; one module per rewrite under `codemods/`; `table.py`, `search.py` +
`jobs.py` (worker side) + `ranking.py`, `pipeline.py`, `command.py`, `llm.py`.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "propose": "diagnose.rewrite.pipeline",
    "evaluate": "diagnose.rewrite.pipeline",
    "declined": "diagnose.rewrite.pipeline",
    "pareto_front": "diagnose.rewrite.pipeline",
    "survey": "diagnose.rewrite.pipeline",
    "build": "diagnose.rewrite.pipeline",
    "candidates_for_finding": "diagnose.rewrite.quick",
    "rewrite_command": "diagnose.rewrite.command",
    "REWRITES": "diagnose.rewrite.table",
    "CODE_REWRITES": "diagnose.rewrite.table",
    "rewrites_for": "diagnose.rewrite.table",
    "search": "diagnose.rewrite.search",
    "SearchOptions": "diagnose.rewrite.search",
    "RewriteContext": "diagnose.rewrite.rewrite",
    "llm_propose": "diagnose.rewrite.llm",
    "LLMConfig": "diagnose.rewrite.llm",
    "TokenLedger": "diagnose.rewrite.llm",
}


def __getattr__(name: str):
    # Lazy, so that `import diagnose.rewrite` stays cheap for the CLI, the agent and the LSP.
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(name)
