"""`diagnose.rewrite.edit.with_params`: new parameters keep the signature's own layout."""

import libcst as cst

from diagnose.rewrite.edit import with_params


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
