"""The composite `ModelNew`: readable code that calls one chosen implementation per subgraph.

Written beside the subtask files (`<name>.py`; `triton_<name>.py`, a copy of the user's kernel, for
each subgraph that has one; `<name>.inductor.py`, Inductor's kernels, where they were extracted).
Every choice is a named entry of one table, `CHOICES`, which a user edits to swap an implementation; each subgraph is one method of `ModelNew`, so an error or a time is
traced to it. The composite builds its subgraphs from their task files, which load the whole model's
parameter values as `diagnose decompose` captured them (built as the harness builds `Model`: same
seed, so the same values the end-to-end verification's reference has).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from diagnose.decompose.graph import NodeRecord
from diagnose.decompose.jobs import Decomposition
from diagnose.decompose.subtask import describe

TRITON_FILE = "triton_{}.py"

HEADER = '''"""The composite of {model}, written by `diagnose decompose`: one implementation per subgraph.

Swap an implementation by editing CHOICES: "torch" runs the subgraph's own ops (`<name>.py`),
"triton" the Triton kernel verified for it (`triton_<name>.py`), "inductor" the Triton kernels
Inductor generated for it (`<name>.inductor.py`).
"""
import importlib.util
from pathlib import Path

import torch
import torch.nn as nn

HERE = Path(__file__).resolve().parent

CHOICES = {{
{choices}}}
# Where each kind of implementation of subgraph `name` is.
FILES = {{"triton": "triton_{{name}}.py", "inductor": "{{name}}.inductor.py"}}


def module(path: Path):
    """The Python file at `path`, imported under a name of its own."""
    spec = importlib.util.spec_from_file_location(f"decompose_{{path.stem}}", path)
    found = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(found)
    return found


def as_verified(name: str, *inputs):
    """The inputs as subgraph `name`'s Triton implementation was verified on them: contiguous (its task
    draws them so, and Inductor's kernels index with the strides they were compiled for, where the whole
    forward may hand over a transposed view). Torch takes them as they are."""
    if CHOICES[name] == "torch":
        return inputs
    return tuple(x.contiguous() if isinstance(x, torch.Tensor) else x for x in inputs)


def load(name: str) -> nn.Module:
    """Subgraph `name` as CHOICES says, with the whole model's parameter values."""
    reference = module(HERE / f"{{name}}.py").Model()
    if CHOICES[name] == "torch":
        return reference
    kernel = module(HERE / FILES[CHOICES[name]].format(name=name)).ModelNew()
    # The subgraph's values go to the parameters the kernel names as the subgraph does.
    own, values = kernel.state_dict(), reference.state_dict()
    kernel.load_state_dict({{k: v for k, v in values.items() if k in own and own[k].shape == v.shape}},
                           strict=False)
    return kernel


class ModelNew(nn.Module):
    # The constructor's arguments are the whole model's; each subgraph's task file holds its own.
    def __init__(self, *init_inputs):
        super().__init__()
'''


def shape_of(record: NodeRecord) -> str:
    if not record.is_tensor:
        return repr(record.literal)
    return f"{record.shape} {record.dtype}"


def composite_source(found: Decomposition, choices: dict[str, str], notes: dict[str, str]) -> str:
    """The composite file's text for these choices (subgraph name -> `torch`, `triton` or `inductor`)."""
    records = {r.name: r for r in found.records}
    table = "".join(
        f'    "{sg.name}": "{choices[sg.name]}",' + (f"  # {notes[sg.name]}" if notes.get(sg.name) else "") + "\n"
        for sg in found.subgraphs
    )
    text = HEADER.format(model=found.model.name, choices=table)
    text += "".join(f'        self.{sg.name} = load("{sg.name}")\n' for sg in found.subgraphs)
    arguments = ", ".join(found.arguments)
    text += f"\n    def forward(self, {arguments}):\n"
    text += "".join(f"        {sg.output} = self.run_{sg.name}({', '.join(sg.inputs)})\n" for sg in found.subgraphs)
    text += f"        return {found.returns}\n"
    for sg in found.subgraphs:
        inputs = ", ".join(sg.inputs)
        shapes = ", ".join(shape_of(records[i]) for i in sg.inputs)
        text += (
            f"\n    def run_{sg.name}(self, {inputs}):\n"
            f'        """{describe(sg, records)}: {shapes} -> {shape_of(records[sg.output])}."""\n'
            f'        return self.{sg.name}(*as_verified("{sg.name}", {inputs}))\n'
        )
    return text


def write(
    found: Decomposition, folder: Path, choices: dict[str, str], kernels: dict[str, Path], notes: dict[str, str]
) -> Path:
    """Copy the chosen and candidate kernels beside the subtasks and write `composite.py`; its path."""
    for name, kernel in kernels.items():
        shutil.copyfile(kernel, folder / TRITON_FILE.format(name))
    path = folder / "composite.py"
    path.write_text(composite_source(found, choices, notes))
    return path
