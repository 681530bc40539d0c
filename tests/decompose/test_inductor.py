"""The `inductor` candidate: Inductor's Triton kernels for a subgraph, extracted as a standalone Triton
`ModelNew` (plain `@triton.jit` kernels under `@triton.autotune`, launched with `kernel[grid]`), pass
the harness on the interpreter; a subgraph Inductor gives no Triton kernel (a lone matmul) gets a
reason, and so does code the rewrite does not handle. One extraction worker for the three fixtures."""

import pytest
import triton

from diagnose.decompose.command import decompose
from diagnose.decompose.inductor import extract
from diagnose.decompose.inductor_source import Host, Unsupported, model_new, single_returned
from diagnose.task import load_task
from diagnose.verify.harness import CheckOptions, verify
from tests.decompose.conftest import MODELS

OPTIONS = CheckOptions(device="cpu", seeds=(0, 1), baselines=("eager",), unseen_shapes=False)
MADE = {"l2_chain": ("sg0_conv2d", "sg1_groupnorm"), "mlp": ("sg0_linear",), "attention": ("sg3_matmul", "sg4_softmax")}
EXTERN_ONLY = {"mlp": ("sg1_linear",), "attention": ("sg0_linear", "sg1_linear", "sg2_linear", "sg5_matmul")}


@pytest.fixture(scope="module")
def extracted(decomposed):
    """(model, subgraph name) -> its `Extraction`, for the three fixtures' subgraphs (one worker)."""
    files = {(m, f.stem): f for m in MADE for f in decomposed[m].files}
    made = extract(tuple(files.values()), "cpu", 600.0)
    return {key: made[f] for key, f in files.items()}


def test_the_subgraphs_inductor_fuses_into_triton_kernels_get_a_candidate(extracted):
    made = {key for key, e in extracted.items() if e.path is not None}
    assert made == {(m, name) for m, names in MADE.items() for name in names}
    for m, names in EXTERN_ONLY.items():
        for name in names:
            reason = extracted[(m, name)].reason
            assert reason.startswith("Inductor generated no Triton kernel") and "extern_kernels." in reason


def test_the_candidate_is_plain_triton_launched_through_jit(extracted):
    source = extracted[("l2_chain", "sg1_groupnorm")].path.read_text()
    assert "triton_heuristics" not in source and "set_driver_to_cpu" not in source and ".run(" not in source
    assert source.count("\n@triton.autotune(") == source.count("\n@triton.jit\n") == 3
    assert "[grid_1d](" in source and "restore_value=['in_out_ptr0']" in source
    assert 'self.load_state_dict(torch.load(HERE / "sg1_groupnorm.pt"' in source
    assert "    def forward(self, conv):" in source and "device=device)" in source


def test_a_reduction_with_libdevice_passes_the_harness_on_the_interpreter(extracted, decomposed):
    task = next(f for f in decomposed["l2_chain"].files if f.stem == "sg1_groupnorm")
    verdict = verify(load_task(task, candidate=extracted[("l2_chain", "sg1_groupnorm")].path), OPTIONS)
    assert verdict.passed, verdict.failure or [c for c in verdict.checks if not c.passed]


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, name",
    [("l2_chain", "sg0_conv2d"), ("mlp", "sg0_linear"), ("attention", "sg3_matmul"), ("attention", "sg4_softmax")],
)
def test_every_candidate_passes_the_harness_on_the_interpreter(extracted, decomposed, model, name):
    task = next(f for f in decomposed[model].files if f.stem == name)
    verdict = verify(load_task(task, candidate=extracted[(model, name)].path), OPTIONS)
    assert verdict.passed, verdict.failure or [c for c in verdict.checks if not c.passed]


def test_a_device_with_no_inductor_candidates_gets_a_reason_and_no_worker(decomposed):
    made = extract(decomposed["mlp"].files, "npu", 10.0)
    assert {e.reason for e in made.values()} == {"Inductor candidates are made on cpu or cuda, not npu"}


OUTPUT_CODE = """
triton_poi_fused_0 = async_compile.triton('triton_poi_fused_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
triton_helpers.set_driver_to_cpu()

@triton_heuristics.{kind}(
    size_hints={{'x': 8}},
    inductor_meta={{'grid_type': '{grid}', 'mutated_arg_names': []}},
)
@triton.jit
def triton_poi_fused_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    pass
''', device_str='cpu')


class Runner:
    def call(self, args):
        arg0_1, = args
        args.clear()
        buf0 = empty_strided_cpu((8, ), (1, ), torch.float32)
        stream0 = get_raw_stream(0)
        triton_poi_fused_0.run(arg0_1, buf0, 8, stream=stream0)
        {extra}
        return (buf0, )
"""
HOST = Host("doc", "super().__init__()", ("x",), ("x",), "x", True)


def rewritten(kind="pointwise", grid="Grid1D", extra="pass"):
    return model_new(OUTPUT_CODE.format(kind=kind, grid=grid, extra=extra), {"triton_poi_fused_0": []}, HOST)


def test_the_host_code_is_rewritten_to_torch_and_triton_calls():
    source = rewritten()
    assert "triton_poi_fused_0[grid_1d](arg0_1, buf0, 8)" in source
    assert "torch.empty_strided((8, ), (1, ), dtype=torch.float32, device=device)" in source
    assert "return buf0\n" in source and "get_raw_stream" not in source and "args.clear" not in source
    compile(source, "candidate.py", "exec")


CUDA_HOST = """
class Runner:
    def call(self, args):
        arg0_1, = args
        args.clear()
        assert_size_stride(arg0_1, (8, ), (1, ))
        with torch.cuda._DeviceGuard(0):
            torch.cuda.set_device(0)
            buf0 = empty_strided_cuda((8, ), (1, ), torch.float32)
            # Topologically Sorted Source Nodes: [gelu], Original ATen: [aten.gelu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_0.run(arg0_1, buf0, 8, stream=stream0)
            del arg0_1
        return (buf0, )
"""


def test_cuda_host_code_loses_its_device_guard_and_runs_on_the_inputs_device():
    kernel = OUTPUT_CODE.split("class Runner")[0].format(kind="pointwise", grid="Grid1D", extra="")
    kernel = kernel.replace("device_str='cpu'", "device_str='cuda'").replace("to_cpu()", "to_gpu()")
    source = model_new(kernel + CUDA_HOST, {"triton_poi_fused_0": []}, HOST)
    assert "_DeviceGuard" not in source and "set_device" not in source and "set_driver_to_gpu" not in source
    assert "        triton_poi_fused_0[grid_1d](arg0_1, buf0, 8)\n" in source  # one level up, in forward
    assert "torch.empty_strided((8, ), (1, ), dtype=torch.float32, device=device)" in source
    compile(source, "candidate.py", "exec")


def test_a_y_grid_past_65535_spreads_over_z_as_inductors_does():
    source = rewritten(grid="Grid2DWithYZOverflow")
    namespace = {"triton": triton}
    exec(source[source.index("def grid_2d_yz_overflow") :].split("\n\n\n")[0], namespace)
    grid = namespace["grid_2d_yz_overflow"]
    assert grid({"xnumel": 10, "XBLOCK": 4, "ynumel": 70000, "YBLOCK": 1}) == (3, 35000, 2)
    assert grid({"xnumel": 10, "XBLOCK": 4, "ynumel": 100, "YBLOCK": 8}) == (3, 13, 1)


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"kind": "template"}, "Inductor kind template"),
        ({"grid": "FixedGrid"}, "grid FixedGrid"),
        ({"extra": "cpp_fused_1(buf0)"}, "host code calls cpp_fused_1"),
    ],
)
def test_code_the_rewrite_does_not_handle_is_a_reason(change, reason):
    with pytest.raises(Unsupported, match=reason):
        rewritten(**change)


@pytest.mark.slow
def test_decompose_chooses_the_inductor_candidates_and_the_composite_verifies(tmp_path):
    report = decompose(MODELS / "l2_chain.py", None, OPTIONS, tmp_path / "out", "triton")
    assert [[(c.name, c.status) for c in sg.candidates] for sg in report.subgraphs] == [
        [("torch", "reference"), ("inductor", "passed")]
    ] * 2
    assert [sg.choice.name for sg in report.subgraphs] == ["inductor", "inductor"]
    assert report.end_to_end.passed is True, report.end_to_end.detail
    assert '"sg1_groupnorm": "inductor"' in report.composite.read_text()
    assert "inductor: passed" in (tmp_path / "out" / "report.md").read_text()


def test_a_single_output_is_returned_as_the_tensor_even_with_commas_inside_it():
    # LeNet5's view before its first linear: Inductor returns `(torch.as_strided(...), )`; the composite hands
    # it to the next subgraph as it is, so a one-element tuple would reach `linear` (the harness's comparison
    # flattens both and passed it).
    assert single_returned("        return (torch.as_strided(buf0, (2, 400), (400, 1), 0), )") == (
        "        return torch.as_strided(buf0, (2, 400), (400, 1), 0)"
    )
    assert single_returned("    return (buf0, )") == "    return buf0"
    assert single_returned("    return (buf0, buf1, )") == "    return (buf0, buf1, )"
