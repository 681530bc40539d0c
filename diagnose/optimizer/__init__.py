"""The optimizer: candidates from the rewrites, their launch-configuration search, verification and ranking.

It sits above `diagnose.rewrite` (the codemods) and `diagnose.verify` (the harness): it chooses the
rewrites the evidence calls for, chains the safe ones, searches the launch configurations a tunable
rewrite leaves open, estimates each candidate statically where nothing can be timed, has the harness
verify and time them, and ranks them by one score (`diagnose.scoring`).

Library entry points (importing this package imports neither torch nor triton):

- `propose(task_path, findings, evidence, target) -> [Candidate]`, `declined(...) -> [(id, why not)]` and
  `evaluate(task_path, candidates, device, target) -> [(Candidate, Verdict)]` (`pipeline.py`);
  `pareto_front(results)`, `survey(ctx)`, `build(ctx, ids, options)`
- `rewrite_command(path, apply, write, target, device, list_only) -> (exit code, text)` (`command.py`):
  `diagnose rewrite`
- `search(rewrite, ctx, plan, SearchOptions)` (`search.py`; worker side `jobs.py`), ranking in `ranking.py`
- `llm_propose(...)`, `LLMConfig`, `TokenLedger` (`llm.py`, extra `llm`: the `openai` client)
- `candidates_for_finding(finding, source, path, target)` (`quick.py`): search-free candidates (the LSP)
- `unified_diff`, `output_name` (`diff.py`): a candidate's diff and the file it is written to
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "propose": "diagnose.optimizer.pipeline",
    "evaluate": "diagnose.optimizer.pipeline",
    "declined": "diagnose.optimizer.pipeline",
    "pareto_front": "diagnose.optimizer.pipeline",
    "survey": "diagnose.optimizer.pipeline",
    "build": "diagnose.optimizer.pipeline",
    "candidates_for_finding": "diagnose.optimizer.quick",
    "rewrite_command": "diagnose.optimizer.command",
    "search": "diagnose.optimizer.search",
    "SearchOptions": "diagnose.optimizer.search",
    "llm_propose": "diagnose.optimizer.llm",
    "LLMConfig": "diagnose.optimizer.llm",
    "TokenLedger": "diagnose.optimizer.llm",
}


def __getattr__(name: str):
    # Lazy, so that `import diagnose.optimizer` stays cheap for the CLI, the agent and the LSP.
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(name)
