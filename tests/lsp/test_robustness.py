"""The server keeps answering: broken files, no kernels, large files, rapid edits, a crashing worker."""

from __future__ import annotations

import time

import pytest
from lsprotocol import types

from tests.conftest import EXAMPLES
from tests.lsp.conftest import codes, open_document, published_version, replace_all, save, wait_until

pytestmark = pytest.mark.asyncio


async def hover_answers(client, uri: str) -> None:
    """A request still gets its answer (None is an answer)."""
    await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(0, 0))
    )


async def test_file_that_does_not_parse(client, folder):
    _, uri = folder.write("broken.py", "import triton\n@triton.jit\ndef k(x:\n    pass\n")
    open_document(client, uri, "import triton\n@triton.jit\ndef k(x:\n    pass\n")
    await wait_until(lambda: "TRI000" in codes(client, uri), what="TRI000")
    (d,) = client.diagnostics[uri]
    assert d.severity == types.DiagnosticSeverity.Error
    # Null bytes and a lone surrogate-free garbage line are still just text.
    _, garbage = folder.write("garbage.py", "x = 1\n")
    open_document(client, garbage, "\x00\x00 def ((( \ufffd\n")
    await wait_until(lambda: garbage in client.diagnostics, what="diagnostics for garbage")
    await hover_answers(client, uri)


async def test_file_without_kernels(client, folder):
    path, uri = folder.write("plain.py", "def add(a, b):\n    return a + b\n")
    open_document(client, uri, path.read_text())
    await wait_until(lambda: uri in client.diagnostics, what="diagnostics")
    assert list(client.diagnostics[uri]) == []
    save(client, uri)  # nothing to compile: no IR job, no error
    await hover_answers(client, uri)
    assert not [m for m in client.log_messages if m.type == types.MessageType.Error]


async def test_thousand_line_document_answers_quickly(client, folder):
    source = "\n".join(p.read_text() for p in sorted(EXAMPLES.glob("*.py")))
    text = "\n".join([source] * 4)  # about 1,300 lines
    assert len(text.splitlines()) >= 1000
    _, uri = folder.write("big.py", text)
    start = time.monotonic()
    open_document(client, uri, text)
    await wait_until(lambda: client.diagnostics.get(uri), what="diagnostics of a 1,000-line file")
    assert time.monotonic() - start < 1.0  # generous for CI; benchmarks/lsp_latency.py has the figures


async def test_very_large_file_is_skipped_not_fatal(client, folder):
    text = "x = 1\n" * 60_000
    _, uri = folder.write("huge.py", text)
    open_document(client, uri, text)
    await wait_until(lambda: uri in client.diagnostics, what="a publish for the huge file")
    assert list(client.diagnostics[uri]) == []
    assert any("not triaged" in m.message for m in client.log_messages)
    await hover_answers(client, uri)


async def test_rapid_edits_are_debounced_and_the_last_one_wins(client, examples):
    path, uri = examples.copy("vector_add.py")
    text = path.read_text()
    open_document(client, uri, text)
    await wait_until(lambda: "TRI001" in codes(client, uri), what="TRI001")
    before = len(client.published)
    line = next(i for i, t in enumerate(text.splitlines()) if "BLOCK_SIZE = 128" in t)
    col = text.splitlines()[line].index("128")
    version = 1
    # 120 keystrokes: noise typed and deleted at the top, then 128 -> 1024, one character at a time.
    edits = []
    for _ in range(50):
        edits += [(0, 0, 0, 0, "#"), (0, 0, 0, 1, "")]
    edits += [(line, col, line, col + 3, "")] + [(line, col + i, line, col + i, ch) for i, ch in enumerate("1024")]
    for l0, c0, l1, c1, new in edits:
        version += 1
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(types.Position(l0, c0), types.Position(l1, c1)), text=new
                    )
                ],
            )
        )
    await wait_until(lambda: published_version(client, uri) == version, what="diagnostics of the last edit")
    assert "TRI001" not in codes(client, uri)  # BLOCK_SIZE is 1024 now
    assert len(client.published) - before < len(edits) / 4
    await hover_answers(client, uri)


@pytest.mark.slow
async def test_crashing_compile_worker_is_logged(client, folder):
    text = (
        "import os\nimport triton\n\n\n@triton.jit\ndef k(x_ptr):\n    pass\n\n\n"
        "os.kill(os.getpid(), 9)  # the worker importing this file dies\n"
    )
    _, uri = folder.write("crash.py", text)
    open_document(client, uri, text)
    await wait_until(lambda: uri in client.diagnostics, what="triage")
    save(client, uri)
    message = await wait_until(
        lambda: next((m for m in client.log_messages if "IR facts unavailable" in m.message), None),
        timeout=60,
        what="the crash in the log",
    )
    assert message.type == types.MessageType.Warning
    assert "crashed" in message.message
    (why,) = await wait_until(lambda: ir_unavailable(client, uri), what="the IR000 warning")
    assert "crashed" in why.message
    # Still serving: a new document gets its diagnostics.
    _, other = folder.write("other.py", "x = 1\n")
    open_document(client, other, "x = 1\n")
    await wait_until(lambda: other in client.diagnostics, what="diagnostics after the crash")


def ir_unavailable(client, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.code == "IR000"]


@pytest.mark.slow
async def test_kernel_nothing_launches_gets_facts_at_a_guessed_launch(client, folder):
    """A kernel module with no captured launch compiles at a launch guessed from its source (labelled so)."""
    text = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1)\n"
    _, uri = folder.write("bare.py", text)
    open_document(client, uri, text)
    await wait_until(lambda: uri in client.diagnostics, what="triage")
    save(client, uri)
    await wait_until(
        lambda: next((m for m in client.log_messages if "bare.py: IR facts for" in m.message), None),
        timeout=60,
        what="the IR facts",
    )
    assert not ir_unavailable(client, uri)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=5, character=4)
        )
    )
    assert hover is not None and "guessed launch" in hover.contents.value


async def test_a_file_without_kernels_says_why_on_line_1(client, folder):
    text = "import triton\n\nx = 1\n"
    _, uri = folder.write("plain.py", text)
    open_document(client, uri, text)
    await wait_until(lambda: uri in client.diagnostics, what="triage")
    save(client, uri)
    (why,) = await wait_until(lambda: ir_unavailable(client, uri), timeout=60, what="the IR000 warning")
    assert why.source == "diagnose" and why.range.start.line == 0 and "no @triton.jit kernels" in why.message
    assert any("IR facts unavailable" in m.message for m in client.log_messages)  # and in the log


TINY = """import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


DIAGNOSE_EXAMPLES = {"k": dict(args=[torch.empty(16)], kwargs=dict(BLOCK=16), grid=(1,))}
"""


@pytest.mark.slow
async def test_user_code_that_raises_is_shown_until_a_save_compiles(client, folder):
    path, uri = folder.write("raises.py", TINY + "raise RuntimeError('boom at import')\n")
    open_document(client, uri, path.read_text())
    await wait_until(lambda: uri in client.diagnostics, what="triage")
    save(client, uri)
    (why,) = await wait_until(lambda: ir_unavailable(client, uri), timeout=60, what="the IR000 warning")
    assert "boom at import" in why.message and why.range.start.line == 0
    path.write_text(TINY)
    replace_all(client, uri, TINY, version=2)
    await wait_until(lambda: published_version(client, uri) == 2, what="version 2")
    assert ir_unavailable(client, uri), "edits keep it: it is about the last save"
    save(client, uri)
    await wait_until(lambda: any("IR facts for" in m.message for m in client.log_messages), timeout=60, what="IR facts")
    assert not ir_unavailable(client, uri)


async def test_findings_stay_while_the_text_does_not_parse(client, examples):
    path, uri = examples.copy("vector_add.py")
    text = path.read_text()
    open_document(client, uri, text)
    await wait_until(lambda: "TRI001" in codes(client, uri), what="TRI001")
    (tri001,) = [d for d in client.diagnostics[uri] if d.code == "TRI001"]
    launch = tri001.range.start.line
    # Half-typed: a bracket opened on the launch line itself; the line count is unchanged.
    col = text.splitlines()[launch].index("](") + 2
    edit(client, uri, 2, (launch, col, launch, col), "(")
    await wait_until(lambda: published_version(client, uri) == 2, what="version 2")
    assert "TRI000" in codes(client, uri)
    assert [d.range.start.line for d in client.diagnostics[uri] if d.code == "TRI001"] == [launch]
    # Two lines typed above, the second unfinished: the finding moves down with its line.
    edit(client, uri, 3, (0, 0, 0, 0), "import os\nx = [\n")
    await wait_until(lambda: published_version(client, uri) == 3, what="version 3")
    assert [d.range.start.line for d in client.diagnostics[uri] if d.code == "TRI001"] == [launch + 2]
    # Parses again: the text's own findings, the syntax error gone.
    edit(client, uri, 4, (1, 0, 2, 0), "")
    edit(client, uri, 5, (launch + 1, col, launch + 1, col + 1), "")
    await wait_until(lambda: published_version(client, uri) == 5, what="version 5")
    assert "TRI000" not in codes(client, uri)
    assert [d.range.start.line for d in client.diagnostics[uri] if d.code == "TRI001"] == [launch + 1]


def edit(client, uri: str, version: int, where: tuple[int, int, int, int], text: str) -> None:
    l0, c0, l1, c1 = where
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(l0, c0), types.Position(l1, c1)), text=text
                )
            ],
        )
    )
