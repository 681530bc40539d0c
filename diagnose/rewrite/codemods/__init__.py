"""The codemods: one rewrite per module, its class docstring its documentation (what it changes, when it
is valid, why it is faster, its safety, the findings it answers, references).

Each is a `diagnose.rewrite.rewrite.Rewrite`; `diagnose/rewrite/table.py` lists them in the order a
combined candidate applies them. Their fixtures are `tests/fixtures/rewrite/<rewrite id>/`. What they
share lives one level up: reading sources (`source.py`, `reach.py`), editing them (`edit.py`), launch
values (`launch_values.py`), autotune config lists (`autotune_configs.py`), matmul shapes (`matmul.py`),
core counts (`cores.py`).
"""
