"""Case inputs by recipe (`diagnose.verify.recipes`): held as recipes where the draw reproduces, as files
where it does not, and verified again with files where a job's draw still came out differently."""

import pytest
import torch

from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions, prepared, verify
from diagnose.verify.recipes import differing, digest, digests, is_recipe, written
from tests.conftest import FIXTURES

OPTIONS = CheckOptions(device="cpu", seeds=(0, 1), timeout_s=180, memory_limit=3 * 2**30)


def task(name: str):
    return load_task(FIXTURES / "recipes" / f"{name}.py")


def held_inputs(reference) -> list:
    return [reference.vault.load(c["inputs"]) for c in reference.value["cases"]]


@pytest.mark.slow
def test_a_seeded_draw_is_held_as_a_recipe_and_drawn_again_by_every_job():
    seeded = task("seeded_inputs")
    with prepared(seeded, OPTIONS) as reference:
        held = held_inputs(reference)
        assert all(is_recipe(h) for h in held)  # every seed's case, the re-check, the unseen sizes
        roles = {c["role"]: h["recipe"] for c, h in zip(reference.value["cases"], held)}
        assert roles["recheck"]["swaps"] and roles["shape"]["sizes"] == [["ROWS", 64, 65]]
        assert {h["recipe"]["where"] for h in held} == {"cpu"}
        verdict = verify(seeded, OPTIONS, reference=reference)
    assert verdict.passed, verdict


@pytest.mark.slow
def test_a_draw_that_depends_on_more_than_its_seed_goes_through_files():
    own = task("own_generator")
    with prepared(own, OPTIONS) as reference:
        assert not any(is_recipe(h) for h in held_inputs(reference))
        verdict = verify(own, OPTIONS, reference=reference)
    assert verdict.passed, verdict


@pytest.mark.slow
def test_recipes_can_be_turned_off():
    with prepared(task("seeded_inputs"), CheckOptions(device="cpu", seeds=(0,), recipes=False)) as reference:
        assert not any(is_recipe(h) for h in held_inputs(reference))


@pytest.mark.slow
def test_a_draw_that_differs_in_another_process_is_verified_again_with_files():
    verdict = verify(task("per_process_inputs"), OPTIONS)
    assert verdict.passed, verdict
    assert any("verified again with them in files" in note for note in verdict.notes)


def test_a_digest_is_the_values_bits_and_not_their_layout():
    x = torch.randn(64, 33)
    assert digest(x) == digest(x.clone()) == digest(x.t().contiguous().t())
    nudged = x.clone()
    nudged.view(-1)[100] = torch.nextafter(nudged.view(-1)[100], torch.tensor(float("inf")))
    assert digest(nudged) != digest(x)
    swapped = x.clone().view(-1)
    swapped[[3, 7]] = swapped[[7, 3]]
    assert digest(swapped.view(64, 33)) != digest(x)  # the same values elsewhere: the weighted sum sees it
    assert digest(x.reshape(33, 64)) != digest(x)  # the shape is part of it


@pytest.mark.parametrize(
    "value",
    [
        torch.randn(5).to(torch.bfloat16),
        torch.rand(9) < 0.5,
        torch.randint(-(2**40), 2**40, (7,)),
        torch.empty(0, 3),
        torch.tensor(float("nan")),
    ],
    ids=["bf16", "bool", "int64", "empty", "nan"],
)
def test_every_dtype_has_a_digest_that_equal_values_share(value):
    assert digest(value) == digest(value.clone())


def test_numbers_and_other_values_are_compared_by_value():
    assert digest(3) == ["value", "3"] and digest(3) != digest(4)


def test_the_parent_finds_a_changed_input_from_a_recipes_digests():
    inputs = [torch.randn(100), torch.randn(100), 5]
    held = written(inputs, {"group": "default"})
    assert held["digests"] == digests(inputs)
    after = [inputs[0].clone(), inputs[1].clone(), 5]
    after[1][42] += 1e-6
    assert differing(held, after) == [1]
    assert differing(inputs, after) == [1]  # the same answer where the vault holds the tensors


def test_large_inputs_drawn_on_the_host_go_through_files():
    """Past `HOST_RECIPE_BYTES`, each job's draw and digest on the host cost more than a file."""
    from diagnose.verify import recipes

    small, large = [torch.zeros(16)], [torch.zeros(recipes.HOST_RECIPE_BYTES // 4 + 1)]
    assert recipes.worth_a_recipe({"where": "cpu"}, small)
    assert not recipes.worth_a_recipe({"where": "cpu"}, large)
    assert recipes.worth_a_recipe({"where": "cuda"}, large)  # drawn on the device: milliseconds
