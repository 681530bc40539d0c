"""`diagnose decompose`: a whole model cut into subgraphs, each a task of its own with swappable,
independently verified implementations, and a composite `ModelNew` that calls one per subgraph.

- `graph.py` traces the model with torch.fx in a worker and records every node's shape and dtype;
- `partition.py` groups the nodes Inductor-style (an anchor op and its elementwise epilogue);
- `subtask.py` writes each group as a task file in the task format (worker side);
- `jobs.py` is the worker entry that does those three steps;
- `inductor.py` makes each subgraph's `inductor` candidate in a worker: Inductor's Triton kernels for
  it, rewritten as a standalone Triton `ModelNew` by `inductor_source.py`;
- `candidates.py` verifies each subgraph's candidates, `choose.py` picks one;
- `compose.py` writes the composite, `report.py` renders the outcome, `command.py` runs it all.
"""
