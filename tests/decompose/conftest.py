"""The three fixture models, each cut once per session (one worker each), and an in-process replay of a
model's forward that keeps every node's value (the fixtures are ours: running them here is safe)."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.decompose.jobs import capture
from tests.conftest import FIXTURES

MODELS = FIXTURES / "decompose"


@pytest.fixture(scope="session")
def decomposed(tmp_path_factory):
    """name -> its `Decomposition`, written in a folder of its own."""
    out = {}
    for name in ("l2_chain", "mlp", "attention", "sequential"):
        folder = tmp_path_factory.mktemp(name)
        out[name] = capture(MODELS / f"{name}.py", folder)
    return out


def node_values(model_file: Path) -> dict:
    """Every node's value in one forward of the model, built as the harness builds it (same seed)."""
    import torch
    import torch.fx

    from diagnose.task import import_task_file
    from diagnose.verify.jobs import build_model

    module = import_task_file(model_file)
    model = build_model(module.Model, list(module.get_init_inputs()), "cpu")
    traced = torch.fx.symbolic_trace(model)
    values = {}

    class Keep(torch.fx.Interpreter):
        def run_node(self, node):
            values[node.name] = super().run_node(node)
            return values[node.name]

    with torch.no_grad():
        Keep(traced).run(*module.get_inputs())
    return values
