"""Every layer reads a target's numbers from the one registry (`diagnose/targets.py`).

The same launch, judged by triage (ASC002), by an IR fact (LaunchGrid) and by the profiler (PRF203),
meets the same core count; the CPU stand-in for `torch.cuda` and for Triton's driver reports the
target's own limits; every name a layer accepts is a registry name.
"""

from __future__ import annotations

import re

import pytest

from diagnose.ascend.facts.context import AscendFactContext
from diagnose.ascend.facts.launch_grid import launch_grid
from diagnose.errors import UsageError
from diagnose.profiling.ascend.diagnoses import diagnose_npu
from diagnose.profiling.profile import CAPABILITY_TARGETS, target_for
from diagnose.records import Evidence, Location
from diagnose.runtime.cpu_standin import _properties, standin_driver
from diagnose.targets import DEFAULT_ARCH, TARGETS, lookup
from diagnose.triage import triage_source
from diagnose.triage.context import build_context

ASCEND = [name for name in TARGETS if name.startswith("ascend:")]
PROGRAMS = 4096

VECTOR_KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)


class ModelNew(nn.Module):
    def forward(self, x):
        scale[(x.shape[0],)](x, BLOCK=16)
        return x


def get_input_groups():
    return {"rows": [torch.randn(4096, 16)]}
"""


def ttadapter(mix_mode: str) -> str:
    return (
        'module {\n  func.func @scale(%arg0: memref<?xf32>) attributes {mix_mode = "' + mix_mode + '"} {\n'
        "    return\n  }\n}\n"
    )


@pytest.mark.parametrize("name", list(TARGETS))
def test_triage_judges_against_the_registry_record(name):
    assert build_context("x = 1\n", "k.py", lookup(name)).target is TARGETS[name]


@pytest.mark.parametrize("name", ASCEND)
def test_triage_ir_facts_and_profiler_count_the_same_vector_cores(name):
    target = TARGETS[name]
    [finding] = triage_source(VECTOR_KERNEL, "k.py", name, select=["ASC002"])
    triage_cores = int(re.search(r"on (\d+) vector cores", finding.message)[1])

    ctx = AscendFactContext({"grid": [PROGRAMS, 1, 1], "artefacts": {"ttadapter": ttadapter("aiv")}}, target)
    [fact] = launch_grid(ctx)

    block_dim = Evidence(
        "profile",
        "msprof",
        "NpuKernel",
        "metric",
        Location("k.py", 1, 0),
        (("block_dim", PROGRAMS), ("core", "AI_VECTOR_CORE")),
        "",
    )
    [prf] = [f for f in diagnose_npu([block_dim], target, Location("k.py", 1, 0)) if f.code == "PRF203"]
    profiler_cores = int(re.search(r"on (\d+) vector cores", prf.message)[1])

    assert triage_cores == fact.arg("cores") == profiler_cores == target.vector_cores


@pytest.mark.parametrize("name", ASCEND)
def test_a_cube_kernel_runs_on_the_ai_cores_in_every_layer(name):
    target = TARGETS[name]
    ctx = AscendFactContext({"grid": [PROGRAMS, 1, 1], "artefacts": {"ttadapter": ttadapter("mix")}}, target)
    block_dim = Evidence(
        "profile",
        "msprof",
        "NpuKernel",
        "metric",
        Location("k.py", 1, 0),
        (("block_dim", PROGRAMS), ("core", "AI_CORE")),
        "",
    )
    [prf] = [f for f in diagnose_npu([block_dim], target, Location("k.py", 1, 0)) if f.code == "PRF203"]
    assert launch_grid(ctx)[0].arg("cores") == int(re.search(r"on (\d+) cores", prf.message)[1]) == target.sm_count


@pytest.mark.parametrize("name", [n for n in TARGETS if not n.startswith("ascend:")])
def test_the_cpu_standin_reports_the_targets_limits(name):
    target = TARGETS[name]
    props = _properties(target)
    assert (
        props.multi_processor_count,
        props.max_shared_memory_per_block_optin,
        props.L2_cache_size,
        props.warp_size,
    ) == (target.sm_count, target.shared_per_block, target.l2_bytes, target.warp_size)
    driver = standin_driver(target).utils.get_device_properties(0)
    assert (driver["multiprocessor_count"], driver["max_shared_mem"]) == (target.sm_count, target.shared_per_block)


def test_every_name_a_layer_maps_to_is_in_the_registry():
    assert set(CAPABILITY_TARGETS.values()) <= set(TARGETS)
    assert target_for("npu", {}, None).name in TARGETS
    assert {lookup(family).name for family in DEFAULT_ARCH} <= set(TARGETS)


@pytest.mark.parametrize("name", ["cuda:sm75", "ascend:910b3", "npu"])
def test_a_name_outside_the_registry_is_refused_by_triage_too(name):
    with pytest.raises(UsageError, match="known targets"):
        triage_source("x = 1\n", "k.py", name)
