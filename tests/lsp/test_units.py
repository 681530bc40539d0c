"""The server's pure parts, in process: fixes, settings, line mapping, ranges, IR snapshots, doc pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.workspace.position_codec import PositionCodec

from diagnose.lsp.convert import to_range
from diagnose.lsp.fixes import candidate_fix, line_edits, suppression_fix
from diagnose.lsp.hover import hover_markdown
from diagnose.lsp.ir_facts import line_map, snapshot_from_result
from diagnose.lsp.rule_docs import RuleDocs
from diagnose.lsp.settings import ClientOptions, parse_options, resolve
from diagnose.records import Candidate
from diagnose.triage.engine import triage_source


def apply(source: str, fix) -> str:
    """Apply a fix's edits (0-based lines, character columns), last first."""
    for e in reversed(fix.edits):
        lines = source.splitlines(keepends=True) + [""]
        start = sum(map(len, lines[: e.start_line])) + e.start_col
        end = sum(map(len, lines[: e.end_line])) + e.end_col
        source = source[:start] + e.text + source[end:]
    return source


# --- suppression -----------------------------------------------------------------------------------

KERNEL = (Path(__file__).resolve().parents[2] / "examples" / "vector_add.py").read_text()


def test_suppression_comment_silences_the_finding():
    (finding,) = [f for f in triage_source(KERNEL, "k.py") if f.code == "TRI001"]
    fix = suppression_fix("TRI001", KERNEL, finding.location.line - 1)
    fixed = apply(KERNEL, fix)
    assert "TRI001" not in [f.code for f in triage_source(fixed, "k.py")]
    assert fix.safety == "safe" and fix.label == "Suppress TRI001 on this line"


def test_suppression_extends_an_existing_list():
    source = "x = f(a)  # diagnose: ignore[TRI002]\n"
    fixed = apply(source, suppression_fix("TRI001", source, 0))
    assert fixed == "x = f(a)  # diagnose: ignore[TRI002, TRI001]\n"
    assert suppression_fix("TRI002", source, 0) is None  # already there


@pytest.mark.parametrize(
    "source",
    [
        "x = a + \\\n    b\n",  # a comment after a line continuation is a syntax error
        "x = 1  # diagnose: ignore\n",  # already silences everything
        "s = '''text\nmore'''\n",  # line 0 ends inside a string
    ],
)
def test_suppression_not_offered_where_it_cannot_go(source):
    assert suppression_fix("TRI001", source, 0) is None


def test_no_suppression_for_a_syntax_error():
    assert suppression_fix("TRI000", "def f(:\n", 0) is None


# --- rewrites (the seam) -------------------------------------------------------------------------


def test_candidate_becomes_line_edits_labelled_by_safety():
    new = KERNEL.replace("BLOCK_SIZE = 128", "BLOCK_SIZE = 1024")
    safe = candidate_fix(Candidate("block-1024", new, "", ("block_size",), "safe"), KERNEL)
    assert apply(KERNEL, safe) == new and len(safe.edits) == 1 and safe.preferred
    unsafe = candidate_fix(Candidate("tf32", new, "", ("precision",), "unsafe"), KERNEL)
    assert unsafe.label.endswith("(unsafe: changes numerics)") and not unsafe.preferred
    assert candidate_fix(Candidate("same", KERNEL, "", ()), KERNEL) is None


def test_rewrites_for_the_finding_become_fixes(monkeypatch):
    from diagnose.lsp import fixes
    from diagnose.rewrite.rewrite import Precondition, Rewrite

    class BiggerBlock(Rewrite):
        id, title, safety, codes = "bigger-block", "Use BLOCK_SIZE = 1024", "safe", ("TRI001",)

        def precondition(self, ctx):
            return Precondition.yes("found") if "BLOCK_SIZE = 128" in ctx.source else Precondition.no("none")

        def transform(self, ctx, plan):
            return ctx.source.replace("BLOCK_SIZE = 128", "BLOCK_SIZE = 1024")

    class Broken(BiggerBlock):
        id, title, safety = "broken", "Lower the precision", "unsafe"

        def transform(self, ctx, plan):
            raise ValueError("bug in the rewrite")

    monkeypatch.setattr(fixes, "rewrites_for", lambda code: [BiggerBlock(), Broken()] if code == "TRI001" else [])
    (finding,) = [f for f in triage_source(KERNEL, "k.py") if f.code == "TRI001"]
    (fix,) = fixes.rewrite_fixes(finding, KERNEL, "k.py", "cuda:sm90")  # the broken one is skipped
    assert fix.title == "Use BLOCK_SIZE = 1024" and fix.preferred
    assert "TRI001" not in [f.code for f in triage_source(apply(KERNEL, fix), "k.py")]
    assert fixes.rewrite_fixes(finding, KERNEL.replace("= 128", "= 64"), "k.py", "cuda:sm90") == []


def test_line_edits_cover_insertions_and_deletions():
    old, new = "a\nb\nc\n", "a\nx\ny\nc\nd\n"
    edits = line_edits(old, new)
    from diagnose.lsp.fixes import Fix

    assert apply(old, Fix("t", edits)) == new


# --- settings ------------------------------------------------------------------------------------


def test_options_parse_and_report_bad_values():
    options, problems = parse_options(
        {
            "target": "hip:gfx942",
            "select": "TRI001,TRI005",
            "irOnSave": False,
            "debounceMs": 10,
            "ignore": ["NOPE"],
            "device": "tpu",
        }
    )
    assert options == ClientOptions(target="hip:gfx942", select=("TRI001", "TRI005"), ir_on_save=False, debounce_ms=10)
    assert len(problems) == 2  # ignore, device
    assert parse_options({"diagnose": {"target": "cuda:sm80"}})[0].target == "cuda:sm80"
    assert parse_options("nonsense")[1]


def test_max_candidates_option():
    options, problems = parse_options({"maxCandidates": 3})
    assert options.max_candidates == 3 and not problems
    assert resolve(options, None)[0].max_candidates == 3
    assert resolve(ClientOptions(), None)[0].max_candidates == 12
    for bad in (0, 101, "4", True):
        assert parse_options({"maxCandidates": bad})[1], bad


def test_client_options_win_key_by_key_over_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.diagnose]\nselect = ["TRI"]\ntarget = "ascend:910b"\n')
    kernel = tmp_path / "pkg" / "k.py"
    kernel.parent.mkdir()
    kernel.write_text("")
    settings, problems = resolve(ClientOptions(target="cuda:sm80"), str(kernel), str(tmp_path))
    assert (settings.target, settings.select, problems) == ("cuda:sm80", ("TRI",), [])
    settings, _ = resolve(ClientOptions(), str(kernel), str(tmp_path))
    assert settings.target == "ascend:910b" and settings.ir_on_save


def test_broken_pyproject_is_a_problem_not_a_failure(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.diagnose\n")
    settings, problems = resolve(ClientOptions(), str(tmp_path / "k.py"), str(tmp_path))
    assert settings.target == "cuda:sm90" and problems


def test_merged_options():
    base = ClientOptions(target="cuda:sm80", select=("TRI001",))
    assert base.merged(ClientOptions(select=("TRI005",))) == ClientOptions(target="cuda:sm80", select=("TRI005",))


# --- lines and ranges ----------------------------------------------------------------------------


def test_line_map_follows_unchanged_lines():
    saved = ("a", "b", "c", "d")
    assert line_map(saved, list(saved)) == {1: 1, 2: 2, 3: 3, 4: 4}
    moved = line_map(saved, ["new", "a", "b", "C", "d"])
    assert moved == {1: 2, 2: 3, 4: 5}  # "c" was edited: it has no place any more


def test_follow_lines_keeps_a_line_being_typed():
    from diagnose.lsp.diagnostics import follow_lines

    old = ["a\n", "b(x)\n", "c\n"]
    assert follow_lines(old, ["a\n", "b((x)\n", "c\n"]) == {1: 1, 2: 2, 3: 3}  # edited in place
    assert follow_lines(old, ["new\n", "a\n", "b(\n", "c\n"]) == {1: 2, 2: 3, 3: 4}
    assert follow_lines(old, ["a\n", "c\n"]) == {1: 1, 3: 2}  # "b" deleted: no place


def test_ranges_count_utf16_units():
    lines = ["s = '😋'; tl.load(p)\n"]
    codec = PositionCodec()  # UTF-16, the LSP default
    r = to_range(lines, codec, 1, 9, 1, 19)  # characters 9..19 = "tl.load(p)"
    assert (r.start.character, r.end.character) == (10, 20)  # the emoji is two UTF-16 units
    whole = to_range(lines, codec, 1, 0)
    assert whole.end.character == 20
    assert to_range([], codec, 3, 4).start.line == 0
    assert to_range(lines, codec, 99, 0).start.line == 0  # clamped


# --- IR snapshots and hover ----------------------------------------------------------------------


def result_for(path: str) -> dict:
    def ev(name, kind, line, args, raw=None, col=0):
        return {
            "stage": "ir",
            "source": "ttgir",
            "name": name,
            "kind": kind,
            "location": {"path": path, "line": line, "col": col, "end_line": None, "end_col": None},
            "args": [list(a) for a in args.items()],
            "raw": raw,
        }

    return {
        "target": "cuda:sm90",
        "from_cache": True,
        "kernels": [
            {
                "kernel": "k",
                "title": "k",
                "name": "k",
                "metadata": {"num_warps": 4},
                "evidence": [
                    ev("PtxasResources", "metric", 2, {"registers": 40, "spill_stores": 0, "stack_frame": 0}),
                    ev(
                        "DotLowering",
                        "missed",
                        4,
                        {"engine": "mma_v2", "best": "wgmma", "reason": "small"},
                        "%d = tt.dot",
                    ),
                    ev(
                        "GlobalAccessWidth",
                        "passed",
                        3,
                        {"access": "load", "bits": 128, "instructions": 1},
                        "ld.global.v4",
                    ),
                ],
            }
        ],
    }


SAVED = "import triton\ndef k(x):\n    a = load(x)\n    d = dot(a, a)\n\nz = 1\n"


def test_snapshot_keeps_the_document_facts_and_kernel_extent(tmp_path):
    path = str(tmp_path / "k.py")
    result = result_for(path)
    result["kernels"][0]["evidence"].append(
        {**result["kernels"][0]["evidence"][1], "location": {"path": "/elsewhere.py", "line": 4, "col": 0}}
    )
    snap = snapshot_from_result(result, path, SAVED)
    (kernel,) = snap.kernels
    assert (kernel.def_line, kernel.end_line) == (2, 4)
    assert len(kernel.evidence) == 3  # the fact of /elsewhere.py is dropped
    text = hover_markdown(snap, 4)
    assert "mma_v2" in text and "tt.dot" in text and "40 registers" in text
    assert "128-bit" in hover_markdown(snap, 3)
    assert hover_markdown(snap, 6) is None  # outside the kernel


def test_rule_docs_pages(tmp_path):
    docs = RuleDocs(folder=tmp_path)
    href = docs.href("TRI001")
    assert href.startswith("file://") and (tmp_path / "TRI001.md").read_text().startswith("# TRI001")
    assert docs.href("DotLowering").endswith("DotLowering.md")
    assert docs.href("RegisterSpill").endswith("RegisterSpill.md")
    assert docs.href("NoSuchThing") is None
    assert RuleDocs(url_template="https://example.org/{code}.html").href("TRI001") == "https://example.org/TRI001.html"


def test_a_kernel_that_does_not_compile_is_kept_with_its_error(tmp_path):
    path = str(tmp_path / "k.py")
    result = {
        "target": "cuda:sm90",
        "kernels": [{"kernel": "k", "title": "k", "error": {"message": "out of resources", "stage": "make_cubin"}}],
    }
    (kernel,) = snapshot_from_result(result, path, SAVED).kernels
    assert (kernel.def_line, kernel.end_line, kernel.error["stage"]) == (2, 4, "make_cubin")
    assert "compile failed: out of resources" in hover_markdown(snapshot_from_result(result, path, SAVED), 3)


# --- the README ----------------------------------------------------------------------------------


def test_readme_names_the_optimize_action_as_the_server_does():
    import re

    from diagnose.lsp.code_actions import OPTIMIZE_TITLE

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    editors = readme[readme.index("## Editors") :]
    named = re.findall(r'"(diagnose: [^"]*this task)"', editors)
    assert named and all(OPTIMIZE_TITLE.startswith(name) for name in named), named
