"""Pure pieces of the Ascend path: pass dumps and timing reports, options, labels, IR helpers, targets.
No toolchain needed."""

from __future__ import annotations

import pytest

from diagnose.ascend.facts.context import (
    shaped_types,
    split_loc,
    strip_loc,
    with_locations,
)
from diagnose.ascend.facts.masked_padding import literal
from diagnose.ascend.options import check_options, target_options
from diagnose.ascend.pipeline import (
    adapter_pipeline,
    nesting,
    parse_timing,
    pass_seconds,
    pipeline_args,
    split_dumps,
)
from diagnose.ascend.worker import config_label
from diagnose.errors import UsageError
from diagnose.targets import lookup

AFTER_DUMPS = """\
// -----// IR Dump After DiscreteMaskAccessConversion (discrete-mask-access-conversion) //----- //
module {
}
// -----// IR Dump After CSE (cse) //----- //
module { %a }
// -----// IR Dump After TritonToUnstructure (triton-to-unstructure) //----- //
module { %a }


===-------------------------------------------------------------------------===
                         ... Execution time report ...
===-------------------------------------------------------------------------===
  Total Execution Time: 0.0292 seconds

  ----Wall Time----  ----Name----
    0.0007 (  2.3%)  Parser
    0.0002 (  0.5%)  DiscreteMaskAccessConversion
    0.0018 (  6.1%)  TritonToUnstructure
    0.0082 ( 28.2%)  'builtin.module' Pipeline
    0.0003 (  0.9%)    CSE
    0.0000 (  0.0%)      (A) DominanceInfo
    0.0001 (  0.5%)    Canonicalizer
    0.0002 (  0.6%)  Output
   -0.0031 (-10.5%)  Rest
    0.0292 (100.0%)  Total
"""

BEFORE_DUMPS = """\
// -----// IR Dump Before Inliner (inline) ('builtin.module' operation) //----- //
module { a }
// -----// IR Dump Before Canonicalizer (canonicalize) ('tt.func' operation: @k) //----- //
module { b }
// -----// IR Dump Before TritonCombineOps (triton-combine) ('builtin.module' operation) //----- //
module { c }
"""


def test_split_after_dumps_and_cut_the_timing_report():
    dumps = split_dumps(AFTER_DUMPS, "After")
    assert [(d.name, d.arg) for d in dumps] == [
        ("DiscreteMaskAccessConversion", "discrete-mask-access-conversion"),
        ("CSE", "cse"),
        ("TritonToUnstructure", "triton-to-unstructure"),
    ]
    assert "Execution time" not in dumps[-1].ir and dumps[1].ir == "module { %a }\n"


def test_before_dumps_keep_their_scope():
    dumps = split_dumps(BEFORE_DUMPS, "Before")
    assert [d.scope for d in dumps] == ["builtin.module", "tt.func", "builtin.module"]
    assert nesting(dumps, None, "Before") == [None, 0, None]


def test_nested_passes_belong_to_the_next_top_level_pass_in_after_dumps():
    dumps = split_dumps(AFTER_DUMPS, "After")
    top = pipeline_args(
        [
            "--discrete-mask-access-conversion=compile-on-910-95=False force-simt-template=False",
            "--triton-to-unstructure=compile-on-910-95=False",
        ]
    )
    assert top == ["discrete-mask-access-conversion", "triton-to-unstructure"]
    assert nesting(dumps, top, "After") == [None, 2, None]


def test_timing_rows_and_per_pass_seconds():
    rows = parse_timing(AFTER_DUMPS)
    assert [(r.name, r.depth) for r in rows] == [
        ("DiscreteMaskAccessConversion", 0),
        ("TritonToUnstructure", 0),
        ("'builtin.module' Pipeline", 0),
        ("CSE", 1),
        ("Canonicalizer", 1),
    ]
    # A pass that ran once gets its row; repeated ones share merged rows, so get none.
    assert pass_seconds(["DiscreteMaskAccessConversion", "CSE", "CSE"], rows) == [0.0002, None, None]


def test_adapter_pipeline_mirrors_the_stage_command():
    metadata = {
        "compile_on_910_95": True,
        "force_simt_template": False,
        "enable_linearize": True,
        "enable_nd2nz_on_vector": False,
        "enable_select_analysis": True,
    }
    flags = adapter_pipeline(metadata)
    assert flags[0] == "--triton-linearize"
    assert flags[-1] == (
        "--triton-to-linalg=global-kernel=false named-ops=True enable-nd2nz-on-vector=False "
        "enable-select-analysis=True compile-on-910-95=True"
    )


def test_950_options_and_simt_modes():
    assert target_options(lookup("ascend:910b")) == {}
    assert target_options(lookup("ascend:950"))["compile_on_910_95"] is True
    check_options(lookup("ascend:950"), {"compile_mode": "unstructured_in_simt"})
    with pytest.raises(UsageError, match="needs the Ascend 950"):
        check_options(lookup("ascend:910b"), {"compile_mode": "unstructured_in_simt"})
    with pytest.raises(UsageError, match="unknown compile_mode"):
        check_options(lookup("ascend:950"), {"compile_mode": "vector"})
    with pytest.raises(UsageError):
        target_options(lookup("cuda:sm90"))


def test_config_label_keeps_what_was_set():
    text = (
        "BLOCK: 1024, num_warps: 4, num_ctas: 1, num_stages: 2, maxnreg: None, multibuffer: None, "
        "limit_auto_multi_buffer_only_for_local_buffer:             None, tile_mix_cube_loop: 4, force_simt_template: False"
    )
    assert config_label(text) == "BLOCK: 1024, tile_mix_cube_loop: 4"


def test_ir_line_helpers():
    assert (
        strip_loc("%alloc = memref.alloc() : memref<1024xi32> loc(#loc1)")
        == "%alloc = memref.alloc() : memref<1024xi32>"
    )
    assert split_loc('} {ExtractedLoadOrStore} loc("k.py":3:4)') == ("} {ExtractedLoadOrStore}", '"k.py":3:4')
    assert strip_loc("scf.if %15 {") == "scf.if %15 {"
    assert strip_loc('%x = f loc(callsite(#loc1 at "k.py":1:2))') == "%x = f"
    types = shaped_types("memref<?xf32> to memref<16x128xf32, strided<[?, 1], offset: ?>>")
    assert [str(t) for t in types] == ["?xf32", "16x128xf32"] and types[1].nbytes == 8192
    assert with_locations("    %r = linalg.reduce ins(%4 : tensor<4xf32>) dimensions = [0] \n").endswith(
        "loc(unknown)\n"
    )
    assert literal("0xFF800000") == "-inf" and literal("0.5") == "0.5"


def test_ascend_targets_in_the_registry():
    b, c = lookup("ascend:910b"), lookup("ascend:950")
    assert (b.sm_count, b.vector_cores, b.shared_per_block, b.l2_bytes) == (24, 48, 192 * 1024, 192 * 2**20)
    assert (c.sm_count, c.vector_cores, c.shared_per_block, c.l2_bytes) == (32, 64, 248 * 1024, 128 * 2**20)
    assert b.peaks.hbm_bytes_per_s and c.peaks.hbm_bytes_per_s == 1.6e12
    assert "akg" in b.peaks.source and "Huawei Connect" in c.peaks.source
    assert lookup("cuda:sm90").vector_cores is None
