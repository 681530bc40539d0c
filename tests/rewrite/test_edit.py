"""`diagnose.rewrite.edit.with_params`: new parameters keep the signature's own layout."""

import libcst as cst

from diagnose.rewrite.edit import drop_arguments, with_params


def appended(source: str, *params: str) -> str:
    function = cst.parse_module(source).body[0]
    return cst.Module(body=[with_params(function, *params)]).code


def test_on_one_line_they_follow_the_last_parameter():
    assert (
        appended("def k(x, n):\n    pass\n", "BLOCK: tl.constexpr") == "def k(x, n, BLOCK: tl.constexpr):\n    pass\n"
    )


def test_before_a_closing_parenthesis_on_its_own_line_they_stay_on_the_last_parameters_line():
    source = "def k(\n    x, y,\n    n, m\n):\n    pass\n"
    assert appended(source, "n_programs", "BLOCK: tl.constexpr") == (
        "def k(\n    x, y,\n    n, m, n_programs, BLOCK: tl.constexpr\n):\n    pass\n"
    )


def test_one_per_line_with_a_trailing_comma_each_gets_a_line():
    source = "def k(\n    x,\n    n,\n):\n    pass\n"
    assert appended(source, "BLOCK: tl.constexpr") == "def k(\n    x,\n    n,\n    BLOCK: tl.constexpr,\n):\n    pass\n"


PARAMS = ["x_ptr", "y_ptr", "n", "BLOCK_M", "BLOCK_N", "num_extra"]


def dropped(launch: str, *drop: str) -> str | None:
    call = drop_arguments(cst.parse_expression(launch), PARAMS, drop)
    return None if call is None else cst.Module([]).code_for_node(call)


def test_tuned_arguments_go_whether_passed_by_keyword_or_by_position():
    assert dropped("k[g](x, y, n, BLOCK_M=64, BLOCK_N=32)", "BLOCK_M") == "k[g](x, y, n, BLOCK_N=32)"
    assert dropped("k[g](x, y, n, BM, BN)", "BLOCK_M", "BLOCK_N") == "k[g](x, y, n)"


def test_a_positional_argument_after_a_dropped_one_is_passed_by_keyword():
    assert dropped("k[g](x, y, n, BM, BN, 3)", "BLOCK_M") == "k[g](x, y, n, BLOCK_N=BN, num_extra=3)"
    assert dropped("k[g](x, y, n, BM, BN, num_warps=4)", "BLOCK_M", "num_warps") == "k[g](x, y, n, BLOCK_N=BN)"


def test_an_unpacked_argument_around_a_dropped_position_is_a_no():
    assert dropped("k[g](x, *rest)", "BLOCK_M") is None
    assert dropped("k[g](x, y, n, BM, *rest)", "BLOCK_M") is None  # rest would slide into BLOCK_M's place
    assert dropped("k[g](x, y, n, BM, *rest)", "num_extra") is None
