"""Every parse in the package goes through `diagnose.syntax` (CPython 3.11's AST state is not thread-safe)."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from diagnose import syntax

PACKAGE = Path(__file__).resolve().parents[2] / "diagnose"


def test_no_module_calls_ast_parse_directly():
    raw = [
        f"{p.relative_to(PACKAGE)}:{i}"
        for p in PACKAGE.rglob("*.py")
        if p.name != "syntax.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\bast\.parse\(|compile\(ast\.", line)
    ]
    assert raw == [], "use diagnose.syntax.parse: " + ", ".join(raw)


def test_parses_from_many_threads_give_the_same_trees():
    import ast

    source = (PACKAGE / "triage" / "context.py").read_text()
    expected = ast.dump(syntax.parse(source))
    with ThreadPoolExecutor(max_workers=4) as pool:
        dumps = list(pool.map(lambda _: ast.dump(syntax.parse(source)), range(16)))
    assert set(dumps) == {expected}


def test_syntax_errors_still_raise():
    with pytest.raises(SyntaxError):
        syntax.parse("def broken(:\n")
    with pytest.raises(SyntaxError):
        syntax.compile_source("return 1\n")
