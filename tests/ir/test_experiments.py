"""Controlled recompiles attribute a symptom to an option."""

from __future__ import annotations

from diagnose.ir.experiments import compare_option
from diagnose.targets import lookup

from .conftest import compiled


def test_num_stages_explains_pipelining_and_shared_memory():
    launch, _ = compiled("matmul_wgmma", "cuda:sm90")[0]
    effects = compare_option(launch, lookup("cuda:sm90"), "num_stages", (1, 3))
    changed = {(e.arg("fact"), e.arg("field")): (e.arg("before"), e.arg("after")) for e in effects}
    assert changed[("SoftwarePipelining", "pipelined")] == (False, True)
    assert changed[("SharedMemoryUsage", "shared")] == (32768, 98304)
    assert all(e.stage == "pass" and e.source == "option:num_stages" for e in effects)


def test_an_option_named_like_a_kernel_parameter_is_not_varied():
    """Liger's neighborhood mask kernel takes `num_stages` and `num_warps` as parameters: a recompile
    that sets those options fails to bind ('got multiple values'), and took the whole passes level
    down with it."""
    from diagnose.ir.experiments import default_variants

    ((launch, record),) = compiled("_option_named_params", "cuda:sm90")
    assert default_variants(launch, record.metadata) == {}
    ((plain, plain_record),) = compiled("small_grid", "cuda:sm90")
    assert set(default_variants(plain, plain_record.metadata)) == {"num_stages", "num_warps"}
