"""Case inputs by recipe: a job draws a case's inputs itself, as the reference job drew them.

The reference job draws every case's inputs from the task's own functions at a salted seed
(`diagnose.verify.inputs`). Written to files for every later job, GiB-sized inputs (KernelBench's and
the npukernel suite's device groups) cost each GiB drawn on the host, copied, written and sealed: most
of vector_add's 110 s `check` on an H100. A recipe is what the draw needs instead: the reference file,
the group, the salted seed, the sizes changed for an unseen-shape case, the re-check's swapped elements,
and where it was drawn; beside it, a digest of every input as drawn. The vault holds the recipe where it
held the tensors, under the same name and rules (each job fetches it once, when its case runs); the
job that fetches it imports the reference file, draws the case again and checks the digests
(`CaseInputs`). The salt never leaves the parent and the reference job: a recipe names only its own
case's seed, so no other case can be drawn ahead from it.

Recipes only where they pay and the draw reproduces. A case drawn on the host past `HOST_RECIPE_BYTES`
is written as before: there each job's draw and digest cost more than reading a file. And the
reference job draws each case a second time after scrambling every global generator (`reproduces`)
and writes the tensors as before where the two differ (a task that keeps a generator of its own
across calls, or reads the clock). Both sides seed every generator before importing the reference
file (`torch_state.IMPORT_SEED`) and draw with new memory read as NaN, so values a file draws at
import, or leaves in `torch.empty`, agree too. A job whose draw still disagrees with the digests fails
with `NOT_REPRODUCED`, and the parent verifies again with files (`harness.verify`).

On `cuda` the task's functions run with the device as torch's default device, so `torch.randn(n)` draws
there (a GiB in milliseconds, not seconds on the host); a function that fails there (a host generator,
numpy) is drawn on the host, and the recipe says which.
"""

from __future__ import annotations

import contextlib
import secrets
from pathlib import Path
from typing import Any

from diagnose.task.harness import header
from diagnose.verify import shapes, tensors
from diagnose.verify.fetch import fetch
from diagnose.verify.inputs import apply_perturbation, draw, draw_value, seed_all
from diagnose.verify.torch_state import import_reference
from diagnose.verify.uninitialized import uninitialized_filled

NOT_REPRODUCED = "the task's inputs came out differently in this job than in the reference job"
# The weights' period (a prime: no stride of an input lines up with it).
WEIGHT_PERIOD = 8191
# Devices whose default-device switch the task's functions draw under (elsewhere: the host).
DRAWS_ON_DEVICE = ("cuda",)
# Inputs drawn on the host get a recipe up to this size: past it, each job's draw and digest on the host
# cost more than reading a file (two 2^25-element fp32 inputs, two CPU cores: `check` 21 s by recipe,
# 12 s by files). On a device the draw is milliseconds, whatever the size.
HOST_RECIPE_BYTES = 64 * 2**20


def recipe(reference: str, group: str, seed: int, **more: Any) -> dict:
    """A case's recipe before it is drawn: `sizes` ([name, task's size, size drawn] triples), `unseen`
    (a task-named unseen-shape group), `swaps` (the re-check's change) where they apply."""
    return {"reference": reference, "group": group, "seed": seed, **more}


def is_recipe(value: Any) -> bool:
    return isinstance(value, dict) and "recipe" in value


def placed(where: str):
    """torch's default device set to `where` inside (the host: nothing to set)."""
    import torch  # deferred: torch is heavy

    return contextlib.nullcontext() if where == "cpu" else torch.device(where)


def drawn_with_notes(module, case: dict, out: Path) -> tuple[list, list[str]]:
    """The inputs a placed recipe names and the draw's notes (`inputs.draw_value`)."""
    with placed(case["where"]), uninitialized_filled(out):
        if case.get("unseen"):
            seed_all(case["seed"])
            inputs, notes = draw_value(module.get_unseen_shape_groups()[case["unseen"]], case["unseen"], case["seed"])
        else:
            with shapes.sizes_set(module, {name: (old, new) for name, old, new in case.get("sizes", ())}):
                inputs, notes = draw(module, case["group"], case["seed"])
    if case.get("swaps"):
        apply_perturbation(inputs, case["swaps"])
    return inputs, notes


def draw_placed(module, case: dict, device: str, out: Path) -> tuple[list, list[str], dict]:
    """Draw a case in the reference job: on the device where the task's functions run there, else on
    the host. The inputs, the notes, and the recipe with where it was drawn."""
    if device in DRAWS_ON_DEVICE:
        on_device = {**case, "where": device}
        # A task's functions that cannot draw there (a host generator, numpy) draw on the host, as before.
        with contextlib.suppress(Exception):
            return (*drawn_with_notes(module, on_device, out), on_device)
    on_host = {**case, "where": "cpu"}
    return (*drawn_with_notes(module, on_host, out), on_host)


def worth_a_recipe(case: dict, inputs: list) -> bool:
    """Whether later jobs should draw the case rather than read it: drawn on a device, or small."""
    return case["where"] != "cpu" or tensors.nbytes(inputs) <= HOST_RECIPE_BYTES


def reproduces(module, case: dict, first: list, out: Path) -> bool:
    """Whether drawing the placed recipe again, every global generator scrambled first, gives `first`
    bit for bit: only then can a job draw the case instead of reading it."""
    seed_all(secrets.randbits(62))
    try:
        second, _ = drawn_with_notes(module, case, out)
    except Exception:  # noqa: BLE001 - a draw that fails the second time is no recipe
        return False
    return len(first) == len(second) and all(same(a, b) for a, b in zip(first, second))


def same(a: Any, b: Any) -> bool:
    """Two drawn inputs bit for bit alike (NaN where NaN), or two other values equal as written."""
    import torch  # deferred: torch is heavy

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and not tensors.changed([a], [b])
    return repr(a) == repr(b)


def digest(value: Any) -> list:
    """A fingerprint of one input that is the same wherever it is computed (device or host): shape,
    dtype, and two integer sums over its 16-bit words (8-bit for 1-byte dtypes), one plain, one with
    word i weighted by `i % WEIGHT_PERIOD + 1`. Exact integer arithmetic, so no order of summation
    changes it. One pass over the input: the words viewed as rows of `WEIGHT_PERIOD`, summed down the
    columns (the weights then apply to the column sums). Not a cryptographic hash: it tells a draw that
    went differently, not a forgery (the candidate's own process draws)."""
    import torch  # deferred: torch is heavy

    if not isinstance(value, torch.Tensor):
        return ["value", repr(value)]
    flat = value.detach().contiguous().reshape(-1)
    words = flat.view(torch.uint8) if flat.element_size() == 1 else flat.view(torch.int16)
    rows, tail = divmod(words.numel(), WEIGHT_PERIOD)
    columns = torch.zeros(WEIGHT_PERIOD, dtype=torch.int64, device=words.device)
    if rows:
        columns += words[: rows * WEIGHT_PERIOD].view(rows, WEIGHT_PERIOD).sum(dim=0, dtype=torch.int64)
    if tail:
        columns[:tail] += words[rows * WEIGHT_PERIOD :].to(torch.int64)
    weights = torch.arange(1, WEIGHT_PERIOD + 1, dtype=torch.int64, device=words.device)
    return ["tensor", list(value.shape), str(value.dtype), int(columns.sum()), int(columns.mul_(weights).sum())]


def digests(values: list) -> list[list]:
    return [digest(v) for v in values]


def written(inputs: list, case: dict | None) -> Any:
    """What the vault holds for a case: its recipe and digests where it has one, else its inputs (on
    the host)."""
    return {"recipe": case, "digests": digests(inputs)} if case is not None else tensors.to_cpu(inputs)


def _module_of(path: str) -> str | None:
    """The user module a kernel module's task file replays (its header), or None for any other file."""
    try:
        found = header(Path(path).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return found.module if found is not None else None


def differing(held: Any, values: list) -> list[int]:
    """Indices of tensor inputs in `values` that differ from the case's inputs as the vault holds them
    (a recipe's digests, or the tensors themselves)."""
    if not is_recipe(held):
        return tensors.changed(held, values)
    return [
        i
        for i, (expected, value) in enumerate(zip(held["digests"], values))
        if expected[0] == "tensor" and digest(value) != expected
    ]


class CaseInputs:
    """A job's way to its cases' inputs, by their names in the vault: the tensors the vault holds, or the
    case drawn again from the recipe it holds (the reference file imported once per job).

    `candidate` (its task file's path and module, in a candidate's job): where the candidate is the same
    user module as the reference (a kernel module's task: both files carry the same harness section over
    the same module), the case is drawn through the candidate's own harness, not by importing the
    reference beside it. Importing one module twice in a process runs its import-time registrations
    twice, which libraries refuse (vLLM's `CustomOp.register`: "Duplicate op name"). The digests the
    vault holds still decide: a harness that draws anything else fails the case (`NOT_REPRODUCED`)."""

    def __init__(
        self,
        payload: dict,
        out: Path,
        imported: dict[str, Any] | None = None,
        candidate: tuple[str, Any] | None = None,
    ) -> None:
        self.payload, self.out = payload, out
        self.modules: dict[str, Any] = dict(imported or {})  # reference path -> its module, as imported
        # the user module the candidate replays, and the candidate's module (None: not a kernel module's task)
        self.twin = (_module_of(candidate[0]), candidate[1]) if candidate is not None else (None, None)

    def __call__(self, name: str) -> list:
        held = fetch(self.payload, name)
        if not is_recipe(held):
            return held
        case = held["recipe"]
        if case["reference"] not in self.modules:
            self.modules[case["reference"]] = self._twin(case["reference"]) or import_reference(case["reference"])[0]
        inputs, _ = drawn_with_notes(self.modules[case["reference"]], case, self.out)
        if digests(inputs) != held["digests"]:
            raise RuntimeError(f"{NOT_REPRODUCED} ({case['group']})")
        return inputs

    def _twin(self, reference: str) -> Any | None:
        """The candidate's module, where it replays the same user module as `reference`."""
        replayed, module = self.twin
        return module if replayed is not None and replayed == _module_of(reference) else None
