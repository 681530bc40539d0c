"""Source mapping: the text resolver agrees with Triton's own bindings, and inlined code lands on
the user's line."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from diagnose.ir.mlir import binding_ops
from diagnose.ir.sourcemap import (
    FILE_LINE_COL,
    parse_asm_lines,
    parse_llir_lines,
    parse_mlir_ops,
    parse_sass_lines,
    resolve_loc,
    user_location,
)

from .conftest import FIXTURES, TARGETS, compiled


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fixture", ["matmul_wgmma", "inlined_helpers"])
def test_resolver_matches_bindings(fixture, target):
    _, record = compiled(fixture, target)[0]
    path = Path(record.group_dir) / f"{record.name}.ttgir"
    bound = binding_ops(str(path), "hip" if target.startswith("hip") else "cuda")
    ours = parse_mlir_ops(path.read_text())
    assert Counter(o.name for o in ours) == Counter(b.name for b in bound)

    def located(loc: str):
        frames = [(f, int(line), int(c)) for f, line, c in FILE_LINE_COL.findall(loc)]
        found = user_location(frames)
        return (found.path, found.line, found.col) if found else None

    from_bindings = Counter((b.name, located(b.loc)) for b in bound if b.loc is not None)
    from_text = Counter(
        (o.name, (o.location.path, o.location.line, o.location.col) if o.location else None) for o in ours if o.results
    )
    assert from_text == from_bindings


def test_resolver_expands_nested_aliases():
    aliases = {"#loc1": '"k.py":3:4', "#loc2": 'callsite("/x/triton/language/standard.py":40:1 at #loc1)'}
    text = resolve_loc("#loc2", aliases)
    frames = [(f, int(line), int(c)) for f, line, c in FILE_LINE_COL.findall(text)]
    assert user_location(frames).line == 3


@pytest.mark.parametrize("target", TARGETS)
def test_inlined_library_and_user_helpers(target):
    _, record = compiled("inlined_helpers", target)[0]
    src = (FIXTURES / "inlined_helpers.py").read_text().splitlines()
    line_of = lambda needle: next(i for i, text in enumerate(src, 1) if needle in text)
    ops = parse_mlir_ops(record.asm["ttgir"])
    reduce_lines = {o.location.line for o in ops if o.name == "tt.reduce"}
    # tl.max / tl.sum are @jit helpers in triton/language: their ops map to the calling lines.
    assert reduce_lines == {line_of("tl.max(x, axis=0)"), line_of("tl.sum(y, axis=0)")}
    mul = [o for o in ops if o.name == "arith.mulf"]
    assert {o.location.line for o in mul} == {line_of("return x * factor")}  # the user's own helper
    asm = parse_asm_lines(record.asm["ptx" if target.startswith("cuda") else "amdgcn"])
    located = {a.location.path for a in asm if a.location}
    assert located == {str(FIXTURES / "inlined_helpers.py")}


def test_llir_and_sass_map_to_user_lines():
    _, record = compiled("vec_add_aligned", "cuda:sm90")[0]
    llir = [a.location.line for a in parse_llir_lines(record.asm["llir"]) if a.location]
    assert 11 in llir and 13 in llir
    sass = record.sass()
    assert sass and "LDG.E.128" in sass
    lines = {a.location.line for a in parse_sass_lines(sass) if a.location and "LDG" in a.text}
    assert lines <= {11, 12}
