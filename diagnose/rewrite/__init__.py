"""Evidence-backed rewrites: libcst codemods, one per module under `codemods/`, and the machinery they share.

A rewrite reads the evidence (findings, IR facts) and the source, says whether it applies and why not
(`Precondition`), and edits the source; it never runs anything. Choosing, combining, searching,
verifying and ranking candidates is the optimizer's (`diagnose.optimizer`, the layer above).

- `REWRITES`, `CODE_REWRITES`, `rewrites_for(code)` (`table.py`): the central table, rewrite id ->
  rewrite, finding code or IR fact -> the rewrites that answer it;
- `rewrite.py`: the base class (`Rewrite`, `Precondition`) and `RewriteContext`;
- shared helpers: `source.py` (reading: kernels, launch sites in any host function, host bindings),
  `edit.py` (editing nodes by identity), `reach.py` (which kernels a host call reaches), `passes.py`,
  `launch_values.py`, `matmul.py`, `cores.py`, `dependence.py`.

Importing this package imports neither torch nor triton.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "REWRITES": "diagnose.rewrite.table",
    "CODE_REWRITES": "diagnose.rewrite.table",
    "rewrites_for": "diagnose.rewrite.table",
    "RewriteContext": "diagnose.rewrite.rewrite",
}


def __getattr__(name: str):
    # Lazy, so that `import diagnose.rewrite` stays cheap for the CLI, the agent and the LSP.
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(name)
