"""The layering of docs/architecture.md holds: every import of every module (function-local ones
included) points to a lower layer or stays in its own package, no two modules import each other,
however indirectly, and every function-local import says why it is not at the top."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "diagnose"
DOC = ROOT / "docs" / "architecture.md"
TABLE = re.compile(r"<!-- layers:.*?-->(.*?)<!-- end layers -->", re.S)
# A comment that only silences a linter gives no reason.
BARE_NOQA = re.compile(r"#\s*noqa(:\s*[A-Z0-9, ]+)?\s*$")


def layers() -> dict[str, int]:
    """Package (first part under `diagnose`, or `diagnose` for the root) -> its layer, from the doc."""
    out = {}
    for row in TABLE.search(DOC.read_text())[1].splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0][:1].isdigit():
            continue
        for name in re.findall(r"`([\w.]+)`", cells[1]):
            out[name] = int(cells[0].split()[0])
    return out


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """(the module imported, line) for every import of a `diagnose` module in `path`."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            if base.split(".")[0] != "diagnose":
                continue
            found = [f"{base}.{alias.name}" for alias in node.names]
            found = [f if f in known else base for f in found]
        elif isinstance(node, ast.Import):
            found = [alias.name for alias in node.names if alias.name.split(".")[0] == "diagnose"]
        else:
            continue
        for target in found:
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            out.append((target, node.lineno))
    return out


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "diagnose"


def test_every_package_is_in_the_table():
    table, found = layers(), {package_of(m) for m in modules()}
    assert found <= set(table), (
        f"packages missing from docs/architecture.md's layer table: {sorted(found - set(table))}"
    )
    assert set(table) <= found, f"the table names packages that do not exist: {sorted(set(table) - found)}"


def test_imports_point_down_the_layers():
    table, known = layers(), modules()
    wrong = []
    for name, path in known.items():
        mine = package_of(name)
        for target, line in imports(name, path, known):
            theirs = package_of(target)
            if theirs == mine or (table[theirs] == table[mine] == 0) or table[theirs] < table[mine]:
                continue
            wrong.append(
                f"{path.relative_to(ROOT)}:{line} imports {target} "
                f"(layer {table[theirs]} {theirs}, from layer {table[mine]} {mine})"
            )
    assert not wrong, "imports that do not point down the layers:\n" + "\n".join(wrong)


def test_no_module_imports_itself_through_others():
    known = modules()
    graph = nx.DiGraph()
    for name, path in known.items():
        graph.add_edges_from((name, target) for target, _ in imports(name, path, known) if target != name)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def function_local_imports(tree: ast.AST) -> list[ast.stmt]:
    """The import statements inside a function (or lambda) body, however deeply nested."""
    out = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append(child)
            visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return out


def test_function_local_imports_say_why():
    """A function-local import defers a heavy or optional dependency (torch, triton, libcst, pygls, openai,
    a command's code in the CLI) and says so in a comment on its line or the line above; one that only
    dodged an import cycle belongs at the top of its module."""
    silent = []
    for path in sorted(modules().values()):
        text = path.read_text()
        lines = text.splitlines()
        comments = {
            tok.start[0]: tok.string
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT and not BARE_NOQA.fullmatch(tok.string)
        }
        for node in function_local_imports(ast.parse(text)):
            own = any(line in comments for line in range(node.lineno, node.end_lineno + 1))
            above = node.lineno - 1 in comments and lines[node.lineno - 2].lstrip().startswith("#")
            if not (own or above):
                silent.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not silent, (
        "function-local imports without a comment saying why they are deferred (hoist them to "
        "the top, or name the heavy or optional dependency):\n" + "\n".join(silent)
    )
