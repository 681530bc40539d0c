"""Proton's hatchet trees read into kernel times per scope, and the evidence made from them.

`written_two_scopes.hatchet` is written here in the format `proton.finalize()` produces (the layout of
Proton's own test examples); `h200_*.hatchet`, when present, are trees Proton wrote on the H200
(`benchmarks/results/`), so the parser is held to the real output too.
"""

import json

import pytest

from diagnose.profiling.nvidia import proton
from tests.conftest import FIXTURES

PROTON = FIXTURES / "profiling" / "proton"


def load(name: str):
    return json.loads((PROTON / name).read_text())


def test_kernels_are_read_per_scope_and_proton_bookkeeping_is_dropped():
    rows = proton.parse_hatchet(load("written_two_scopes.hatchet"))
    assert [(r.scope, r.kernel, r.count) for r in rows] == [
        ("candidate@rows", "softmax_kernel", 10),
        ("candidate@rows", "scale_kernel", 10),
        ("eager@rows", "cunn_SoftMaxForward", 10),
    ]
    assert rows[0].scope_bytes == 268435456.0 and rows[0].scope_flops == 0.0


def test_scope_times_and_throughput_per_forward():
    scopes = proton.scope_times(proton.parse_hatchet(load("written_two_scopes.hatchet")), repeats=10)
    candidate = next(s for s in scopes if s.scope == "candidate@rows")
    assert candidate.seconds_per_forward == pytest.approx(200e-6)  # (1.5 + 0.5) ms over 10 forwards
    evidence = proton.evidence(scopes)
    scope = next(e for e in evidence if e.name == "ScopeTime" and e.arg("scope") == "candidate@rows")
    assert scope.arg("achieved_bytes_per_s") == pytest.approx(268435456.0 / 200e-6, rel=1e-6)
    assert scope.arg("achieved_flops_per_s") is None, "zero FLOPs is no throughput"
    kernels = [e for e in evidence if e.name == "KernelTime" and e.arg("scope") == "candidate@rows"]
    assert [k.arg("kernel") for k in kernels] == ["softmax_kernel", "scale_kernel"], "slowest first"
    assert kernels[0].arg("share") == pytest.approx(0.75) and kernels[0].arg("us_per_launch") == pytest.approx(150.0)
    assert kernels[0].arg("launches_per_forward") == 1


def test_not_a_tree_is_a_clear_error():
    with pytest.raises(ValueError, match="not a Proton hatchet tree"):
        proton.parse_hatchet({"frame": {}})


@pytest.mark.parametrize("path", sorted(PROTON.glob("h200_*.hatchet")), ids=lambda p: p.name)
def test_trees_written_on_the_h200_parse(path):
    rows = proton.parse_hatchet(json.loads(path.read_text()))
    scopes = {r.scope.split("@")[0] for r in rows}
    assert {"candidate", "eager"} <= scopes
    assert all(r.count > 0 and r.time_ns > 0 for r in rows)


def test_proton_needs_a_cuda_device(cli):
    result = cli("profile", "examples/vector_add.py", "--device", "cpu", "--proton")
    assert result.returncode == 2 and "--proton needs --device cuda" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_softmax_tree_from_the_h200_reads_as_the_profile_printed_it():
    # benchmarks/results/2026-12-02-h200-optimize-examples-and-suites/log_a.txt: "proton candidate 0.2095 ms/forward 2.56 TB/s
    # slowest softmax_kernel 209.5 us/launch (100%)", eager 0.2157 ms/forward.
    rows = proton.parse_hatchet(load("h200_softmax.hatchet"))
    candidate, eager = proton.scope_times(tuple(rows), repeats=10)
    assert candidate.scope == "candidate@rows16384_cols4096_fp32" and eager.scope.startswith("eager@")
    assert [k.kernel for k in candidate.kernels] == ["softmax_kernel"]
    assert "SoftMaxForward" in eager.kernels[0].kernel
    assert round(candidate.seconds_per_forward * 1e3, 4) == 0.2095
    assert round(eager.seconds_per_forward * 1e3, 4) == 0.2157
    assert round(candidate.bytes / candidate.seconds_per_forward / 1e12, 2) == 2.56
