"""The offline compile's hash equals the one the JIT computes for the same arguments.

The JIT side runs `JITFunction.warmup` (and `Autotuner.warmup`) through a fake, never-active driver
for the same target, so both sides use Triton's own binder, `_pack_args` and cache key.
"""

from __future__ import annotations

import pytest
import torch

from diagnose.ir.compile import compile_launch
from diagnose.ir.launch import Launch, load_module
from diagnose.ir.specialize import build_source, expand_configs
from diagnose.targets import lookup

from .conftest import FIXTURES, TARGETS
from .fake_driver import fake_driver


@pytest.fixture(scope="module")
def spec_kernel():
    return load_module(str(FIXTURES / "_specialization.py")).spec_kernel


@pytest.fixture(autouse=True)
def private_triton_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))


def _cases():
    x, y = torch.empty(4097), torch.empty(4096)
    return {
        "aligned": ((x, y, 4096, 16), {"BLOCK": 256}),
        "misaligned_view": ((x[1:], y, 4096, 16), {"BLOCK": 256}),
        "int_1": ((x, y, 1, 16), {"BLOCK": 256}),
        "int_16": ((x, y, 16, 16), {"BLOCK": 256}),
        "int_17": ((x, y, 17, 17), {"BLOCK": 256}),
        "stride_1_and_constexpr": ((x, y, 4096, 1), {"BLOCK": 512, "num_warps": 8}),
    }


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", list(_cases()))
def test_hash_matches_jit(spec_kernel, target, case):
    args, kwargs = _cases()[case]
    spec = lookup(target)
    ours = compile_launch(expand_configs(Launch("spec_kernel", spec_kernel, args, kwargs))[0], spec)
    with fake_driver(spec.gpu_target(), spec_kernel):
        theirs = spec_kernel.warmup(*args, grid=(1,), **kwargs)
    assert ours.hash == theirs.hash
    assert ours.asm["ttgir"] == theirs.asm["ttgir"]


def test_specialization_follows_values(spec_kernel):
    x, y = torch.empty(4097), torch.empty(4096)
    target = lookup("cuda:sm90").gpu_target()
    cases = {
        "aligned": ((x, y, 16, 17), "D", "D", "i32"),
        "view": ((x[1:], y, 1, 17), "", "D", "constexpr"),
    }
    for name, (args, x_attr, _, n_type) in cases.items():
        source, _ = build_source(spec_kernel, args, {"BLOCK": 128}, target)
        assert source.signature["n"] == n_type, name
        assert bool(source.attrs.get((0,))) == (x_attr == "D"), name
        assert source.attrs.get((3,)) == [], name  # stride 17: not divisible, no attribute


def test_hip_adds_pointer_range(spec_kernel):
    x, y = torch.empty(4096), torch.empty(4096)
    source, _ = build_source(spec_kernel, (x, y, 16, 16), {"BLOCK": 128}, lookup("hip:gfx942").gpu_target())
    assert ["tt.pointer_range", 32] in source.attrs[(0,)]


@pytest.mark.parametrize("target", TARGETS)
def test_autotune_configs_match_jit(target):
    module = load_module(str(FIXTURES / "autotuned.py"))
    example = module.diagnose_examples()["scale_kernel"]
    spec = lookup(target)
    ours = [
        compile_launch(c, spec)
        for c in expand_configs(Launch("scale_kernel", module.scale_kernel, tuple(example["args"])))
    ]
    jit = module.scale_kernel.fn.fn
    with fake_driver(spec.gpu_target(), jit):
        theirs = module.scale_kernel.warmup(*example["args"], grid=(1,))
    assert [r.hash for r in ours] == [k.hash for k in theirs]
    assert len(ours) == 2  # early_config_prune dropped BLOCK=4096
