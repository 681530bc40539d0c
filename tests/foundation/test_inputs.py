"""Drawing inputs: fresh per seed, never constant, groups chosen by device."""

import types

import torch

from diagnose.verify.inputs import draw, select_groups


def task_module(**functions):
    return types.SimpleNamespace(**functions)


def test_each_seed_draws_fresh_values():
    module = task_module(get_inputs=lambda: [torch.randn(16)])
    a, _ = draw(module, "default", 0)
    b, _ = draw(module, "default", 1)
    again, _ = draw(module, "default", 0)
    assert not torch.equal(a[0], b[0])
    assert torch.equal(a[0], again[0])


def test_zeros_and_constant_booleans_are_redrawn_integers_kept():
    module = task_module(
        get_inputs=lambda: [torch.zeros(64), torch.ones(8, dtype=torch.bool), torch.zeros(5, dtype=torch.int64), 3]
    )
    inputs, notes = draw(module, "default", 0)
    assert inputs[0].std() > 0.5
    assert inputs[1].any() and not inputs[1].all()
    assert torch.equal(inputs[2], torch.zeros(5, dtype=torch.int64))
    assert inputs[3] == 3
    assert len(notes) == 2


def test_groups_may_be_functions_and_only_selected_ones_are_drawn():
    drawn = []
    module = task_module(
        get_input_groups=lambda: {
            "big": lambda: drawn.append("big") or [torch.randn(4)],
            "test_small": lambda: drawn.append("small") or [torch.randn(2)],
        }
    )
    inputs, _ = draw(module, "test_small", 0)
    assert drawn == ["small"] and inputs[0].shape == (2,)


def test_group_selection_by_device():
    names = ["big", "test_small", "huge"]
    assert select_groups(names, "cpu", None) == ["test_small"]
    assert select_groups(names, "cuda", None) == ["big", "huge"]
    assert select_groups(["only"], "cpu", None) == ["only"]
    assert select_groups(names, "cpu", ["big"]) == ["big"]


def test_the_recheck_perturbation_changes_floats_in_range_and_leaves_indices_alone():
    import torch

    from diagnose.verify.inputs import PERTURBED, apply_perturbation, perturbation_for

    positive = torch.rand(1000) + 0.5
    index = torch.randint(0, 10, (1000,))
    strided = torch.randn(64, 64).t()
    inputs = [positive.clone(), index.clone(), strided, 3.0]
    perturbation = perturbation_for(inputs, seed=1009)
    assert [i for i, _, _ in perturbation] == [0], "only contiguous floating-point tensors are changed"
    assert len(perturbation[0][1]) == 2 * PERTURBED, "pairs of elements swapped"
    apply_perturbation(inputs, perturbation)
    assert not torch.equal(inputs[0], positive) and bool((inputs[0] >= 0.5).all()), "values stay in range"
    assert torch.equal(inputs[0].sort().values, positive.sort().values), "the same values: distinct stay distinct"
    assert torch.equal(inputs[1], index)
    again = perturbation_for([positive.clone(), index.clone(), strided, 3.0], seed=1009)
    assert all(torch.equal(a[1], b[1]) and torch.equal(a[2], b[2]) for a, b in zip(perturbation, again))


def test_the_recheck_swaps_stay_inside_rows_so_rows_of_the_same_values_keep_them():
    import torch

    from diagnose.verify.inputs import apply_perturbation, perturbation_for

    # each row a permutation of the same values (the top-k task's inputs): a swap across rows would
    # put one value twice in a row, and a top-k's indices then break the tie either way
    rows = torch.stack([torch.randperm(300).float() for _ in range(37)])
    changed = rows.clone()
    apply_perturbation([changed], perturbation_for([changed], seed=1009))
    assert not torch.equal(changed, rows)
    assert all(torch.equal(changed[r].sort().values, torch.arange(300).float()) for r in range(37))
