"""Drawing the inputs of every case: fresh random values for every (group, seed), never zeros.

Worker side (it calls the task's own `get_inputs` / `get_input_groups`). The task's functions are called
after `torch.manual_seed(seed)`, so each seed gives a fresh draw. A floating-point tensor that comes out
constant (`torch.zeros`, `torch.ones`, `torch.full`) is redrawn from a standard normal, and a constant
boolean tensor from a fair coin: constant inputs hide unwritten outputs and wrong indexing. Integer
tensors are kept as drawn, since they are often indices whose range only the task knows.

Group selection: groups named `test...` are small (CPU interpreter, CI); on the `cpu` device only those
run when there are any, on a device only the others do. A task without `get_input_groups` has one group,
`default`, from `get_inputs()`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Iterator

DEFAULT_GROUP = "default"


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
    if value.dtype.is_floating_point:
        fresh = torch.randn(value.shape, generator=generator, dtype=torch.float32).to(value.dtype)
        return fresh, True
    if value.dtype == torch.bool:
        return torch.rand(value.shape, generator=generator) < 0.5, True
    return value, False


def draw(module: ModuleType, group: str, seed: int) -> tuple[list[Any], list[str]]:
    """The inputs of one case and notes on what was redrawn."""
    return draw_value(group_table(module)[group], group, seed)


def draw_value(value: Any, group: str, seed: int) -> tuple[list[Any], list[str]]:
    """The inputs a group's value (a list, or a function returning one) gives at `seed`, and notes."""
    import torch  # deferred: torch is heavy

    torch.manual_seed(seed)
    inputs = list(value() if callable(value) else value)
    generator = torch.Generator().manual_seed(seed + 7919)
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

    generator = torch.Generator().manual_seed(seed)
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
            out.append((i, torch.cat([first, second]), torch.cat([flat[second], flat[first]]).clone()))
    return out


def swapped_pairs(value, generator):
    """Up to `PERTURBED` disjoint pairs of flat positions, each pair in one row of the last axis: a swap
    keeps every row's values (rows that are each a permutation of the same values stay permutations;
    a swap across rows would put a value twice in one). A tensor whose rows hold one element swaps
    across them."""
    import torch  # deferred: torch is heavy

    width = value.shape[-1] if value.dim() and value.shape[-1] >= 2 else value.numel()
    rows = value.numel() // width
    chosen = torch.randperm(rows, generator=generator)[:PERTURBED]
    per_row = min(width // 2, -(-PERTURBED // len(chosen)))
    first, second = [], []
    for row in chosen.tolist():
        columns = torch.randperm(width, generator=generator)[: 2 * per_row]
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
