"""Drawing the inputs of every case: fresh random values for every (group, seed), never zeros.

Worker side (it calls the task's own `get_inputs` / `get_input_groups`). The task's functions are called
after every global generator was seeded with the case's seed (`seed_all`: torch's, Python's `random`,
numpy's), so each seed gives a fresh draw and one seed the same draw in any process. A floating-point tensor that comes out
constant (`torch.zeros`, `torch.ones`, `torch.full`) is redrawn from a standard normal, and a constant
boolean tensor from a fair coin: constant inputs hide unwritten outputs and wrong indexing. Integer
tensors are kept as drawn, since they are often indices whose range only the task knows.

Group selection: groups named `test...` are small (CPU interpreter, CI); on the `cpu` device only those
run when there are any, on a device only the others do. A task without `get_input_groups` has one group,
`default`, from `get_inputs()`.
"""

from __future__ import annotations

import random
import sys
from types import ModuleType
from typing import Any, Iterator

DEFAULT_GROUP = "default"


def seed_all(seed: int) -> None:
    """Seed torch's generators (every device's), Python's `random` and numpy's global generator (where
    something imported numpy: importing it here would cost every job the import)."""
    import torch  # deferred: torch is heavy

    torch.manual_seed(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)


def group_table(module: ModuleType) -> dict[str, Any]:
    """The task's groups: name -> list of inputs, or a function returning one."""
    if hasattr(module, "get_input_groups"):
        groups = module.get_input_groups()
        if isinstance(groups, (list, tuple)):
            groups = {str(i): g for i, g in enumerate(groups)}
        if not isinstance(groups, dict) or not groups:
            raise TypeError("get_input_groups() must return a non-empty dict of name -> inputs")
        return groups
    return {DEFAULT_GROUP: module.get_inputs}


def select_groups(names: list[str], device: str, wanted: list[str] | None) -> list[str]:
    if wanted:
        unknown = [w for w in wanted if w not in names]
        if unknown:
            raise ValueError(f"no input group {', '.join(unknown)}; the task has {', '.join(names)}")
        return list(wanted)
    small = [n for n in names if n.startswith("test")]
    large = [n for n in names if not n.startswith("test")]
    if device == "cpu":
        return small or names
    return large or names


def redrawn_if_constant(value: Any, generator) -> tuple[Any, bool]:
    """Replace a constant float/bool tensor by random values; say whether it was replaced."""
    import torch  # deferred: torch is heavy

    if not isinstance(value, torch.Tensor) or value.numel() < 2:
        return value, False
    flat = value.reshape(-1)
    if not bool((flat == flat[0]).all()):
        return value, False
    # The generator is the host's, whatever torch's default device: drawn there, moved to the value's.
    if value.dtype.is_floating_point:
        fresh = torch.randn(value.shape, generator=generator, dtype=torch.float32, device="cpu")
        return fresh.to(device=value.device, dtype=value.dtype), True
    if value.dtype == torch.bool:
        return (torch.rand(value.shape, generator=generator, device="cpu") < 0.5).to(value.device), True
    return value, False


def draw(module: ModuleType, group: str, seed: int) -> tuple[list[Any], list[str]]:
    """The inputs of one case and notes on what was redrawn. The generators are seeded before the group
    table is built too: a table that draws its groups' tensors when it is built draws the same ones."""
    seed_all(seed)
    return draw_value(group_table(module)[group], group, seed)


def draw_value(value: Any, group: str, seed: int) -> tuple[list[Any], list[str]]:
    """The inputs a group's value (a list, or a function returning one) gives at `seed`, and notes."""
    import torch  # deferred: torch is heavy

    seed_all(seed)
    inputs = list(value() if callable(value) else value)
    generator = torch.Generator(device="cpu").manual_seed(seed + 7919)
    notes = []
    for i, item in enumerate(inputs):
        inputs[i], replaced = redrawn_if_constant(item, generator)
        if replaced:
            notes.append(f"input {i} of group {group} was constant; redrawn at random")
    return inputs, notes


# Elements changed per floating-point input for the re-check after timing.
PERTURBED = 16


def perturbation_for(inputs: list, seed: int) -> list[tuple[int, Any, Any]]:
    """(input index, flat positions, new values) for every contiguous floating-point tensor input.

    The re-check after timing runs the candidate on the very buffers it was timed (or soaked) on, with
    these few elements changed in place: a candidate that caches its output under a fingerprint of its
    inputs (their address, a few sampled values) returns a stale result and fails. The change swaps
    pairs of elements of the same tensor, so its values stay the same multiset: in range, positive stays
    positive, and a task's own rules hold (distinct values stay distinct; copying values over others
    made ties whose order a top-k's indices then broke either way). Integer and boolean inputs are left alone: they are often indices or masks with rules of their own.
    """
    import torch  # deferred: torch is heavy

    generator = torch.Generator(device="cpu").manual_seed(seed)
    out = []
    for i, value in enumerate(inputs):
        if not (
            isinstance(value, torch.Tensor)
            and value.dtype.is_floating_point
            and value.is_contiguous()
            and value.numel() >= 2
        ):
            continue
        flat = value.reshape(-1)
        first, second = swapped_pairs(value, generator)
        if len(first):
            values = torch.cat([flat[second.to(flat.device)], flat[first.to(flat.device)]]).cpu()
            out.append((i, torch.cat([first, second]), values))
    return out


def swapped_pairs(value, generator):
    """Up to `PERTURBED` disjoint pairs of flat positions, each pair in one row of the last axis: a swap
    keeps every row's values (rows that are each a permutation of the same values stay permutations;
    a swap across rows would put a value twice in one). A tensor whose rows hold one element swaps
    across them."""
    import torch  # deferred: torch is heavy

    width = value.shape[-1] if value.dim() and value.shape[-1] >= 2 else value.numel()
    rows = value.numel() // width
    chosen = torch.randperm(rows, generator=generator, device="cpu")[:PERTURBED]
    per_row = min(width // 2, -(-PERTURBED // len(chosen)))
    first, second = [], []
    for row in chosen.tolist():
        columns = torch.randperm(width, generator=generator, device="cpu")[: 2 * per_row]
        first.append(row * width + columns[:per_row])
        second.append(row * width + columns[per_row:])
    return torch.cat(first)[:PERTURBED], torch.cat(second)[:PERTURBED]


def apply_perturbation(inputs: list, perturbation: list) -> None:
    """Write a `perturbation_for` result into the inputs, in place (wherever the tensors live), through
    `.data`: the tensors' version counters do not move, so a candidate that keys a cache on a tensor's
    identity and its version (`x._version`, which every in-place torch op bumps) returns the stale entry."""
    for i, positions, values in perturbation:
        flat = inputs[i].data.view(-1)
        flat[positions.to(flat.device)] = values.to(device=flat.device, dtype=flat.dtype)


def cases(module: ModuleType, groups: list[str], seeds: list[int]) -> Iterator[tuple[str, int, list, list[str]]]:
    for group in groups:
        for seed in seeds:
            inputs, notes = draw(module, group, seed)
            yield group, seed, inputs, notes
