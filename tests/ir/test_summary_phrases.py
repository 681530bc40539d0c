"""How `inspect`'s summary words an access-width fact: every width on the line, and the reason first given
by the address when divisibility and the layout both hold."""

from diagnose.ir.summary import phrase
from diagnose.records import Evidence


def width_fact(kind: str, **args) -> Evidence:
    return Evidence("ir", "ptx", "GlobalAccessWidth", kind, None, tuple(args.items()))


def test_a_line_with_accesses_of_two_widths_names_both():
    fact = width_fact("passed", access="load", bits=128, instructions=6, widths="128-bit x2, 64-bit x4")
    assert phrase(fact) == "load 128-bit x2, 64-bit x4"


def test_a_line_of_one_width_counts_its_instructions():
    fact = width_fact(
        "missed",
        access="store",
        bits=32,
        instructions=1,
        reason="offset_not_divisible",
        detail="out_stride is not a multiple of 16",
    )
    assert phrase(fact) == "store 32-bit x1 (offset_not_divisible: out_stride is not a multiple of 16)"
