"""L2/L3 of diagnose: offline compiles that reproduce the JIT, IR facts mapped to source lines, passes.

Library entry points (importing this package imports neither torch nor triton):

- `compile_launch(launch, target, snapshots=False, options=None) -> CompileRecord` (`compile.py`)
- `facts_for(FactContext(record, target, grid, user_path)) -> list[Evidence]` (`facts/`)
- `summarize(evidence) -> list[LineFacts]`, the per-line summary (`summary.py`)
- `collect_launches(path)` / `expand_configs(launch)`: example launches of a file (`launch.py`,
  `specialize.py`); `inspect_file(payload)`: the worker behind `diagnose inspect` (`inspect.py`)
- `timeline`, `pass_diff`, `op_history` (`pass_analysis.py`); `compare_option` (`experiments.py`)

Layout: `launch` -> `specialize` -> `compile` (with `passes`, `remarks`, `cache`) -> `sourcemap` /
`mlir` -> `facts/*` -> `summary` / `render`; `cli` is the parent-process side of the command.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "compile_launch": "diagnose.ir.compile",
    "CompileRecord": "diagnose.ir.compile",
    "facts_for": "diagnose.ir.facts",
    "FactContext": "diagnose.ir.facts",
    "summarize": "diagnose.ir.summary",
    "line_summary": "diagnose.ir.summary",
    "collect_launches": "diagnose.ir.launch",
    "expand_configs": "diagnose.ir.specialize",
    "inspect_file": "diagnose.ir.inspect",
    "inspect_command": "diagnose.ir.cli",
}


def __getattr__(name: str):
    # Lazy, so that `import diagnose.ir` stays cheap for the CLI and the LSP.
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(name)
