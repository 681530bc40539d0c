"""The hover of a kernel line: what the compiler did with that line, and the kernel's resources.

For every compiled variant of the kernel around the line: the line's facts (access width, layout
conversions, MMA path, pipelining, compiler remarks), each with the IR line it was read from, then
the kernel's registers, spills, shared memory and layout-conversion count.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.capabilities import get_capability

from diagnose.ir.summary import phrase
from diagnose.lsp.convert import text_of
from diagnose.lsp.ir_facts import IrSnapshot, KernelFacts, line_map
from diagnose.lsp.server import DiagnoseServer
from diagnose.records import Evidence

MARK = {"missed": "✗", "passed": "✓"}
FENCE = {"ttgir": "mlir", "ttir": "mlir", "llir": "llvm", "ptx": "ptx", "amdgcn": "asm", "ptxas": "text"}
RAW_LIMIT = 200


def hover_markdown(snapshot: IrSnapshot, saved_line: int) -> str | None:
    """Markdown for a 1-based line of the saved text, or None when no kernel covers the line."""
    kernels = [k for k in snapshot.kernels if k.contains(saved_line)]
    if not kernels:
        return None
    parts = [f"**diagnose** IR on `{snapshot.target}`" + (" (stored result)" if snapshot.from_cache else "")]
    for kernel in kernels:
        parts.append(_kernel_section(kernel, saved_line))
    return "\n\n".join(parts)


def _kernel_section(kernel: KernelFacts, line: int) -> str:
    md = kernel.metadata
    config = ", ".join(f"{k}={md[k]}" for k in ("num_warps", "num_stages") if k in md)
    out = [f"**{kernel.title}**" + (f" ({config})" if config else "")]
    if kernel.error:
        out.append(f"compile failed: {kernel.error.get('message', '?')}")
        return "\n\n".join(out)
    facts = kernel.line_facts(line)
    if facts:
        out.append("\n".join(_fact_item(e) for e in facts))
    elif line != kernel.def_line:
        out.append("_no IR facts for this line_")
    whole = [phrase(e) for e in kernel.kernel_facts()]
    if whole:
        out.append("Kernel: " + " · ".join(dict.fromkeys(whole)))
    return "\n\n".join(out)


def _fact_item(e: Evidence) -> str:
    text = phrase(e)
    item = f"- {MARK.get(e.kind, '·')} {text}" + ("" if text.startswith(e.source) else f" ({e.source})")
    if not e.raw:
        return item
    raw = e.raw if len(e.raw) <= RAW_LIMIT else e.raw[:RAW_LIMIT] + " …"
    return f"{item}\n  ```{FENCE.get(e.source, 'text')}\n  {raw}\n  ```"


def hover(ls: DiagnoseServer, params: types.HoverParams) -> types.Hover | None:
    """IR facts of the hovered line, when the last save's facts cover it and it is unchanged since."""
    uri = params.text_document.uri
    doc, state = ls.open_document(uri), ls.documents.get(uri)
    if doc is None or state is None or state.ir is None:
        return None
    lines = [text_of(line) for line in doc.lines]
    saved_line = {now: then for then, now in line_map(state.ir.lines, lines).items()}.get(params.position.line + 1)
    if saved_line is None:
        return None
    text = hover_markdown(state.ir, saved_line)
    if text is None:
        return None
    formats = get_capability(ls.client_capabilities, "text_document.hover.content_format", None)
    markdown = not formats or types.MarkupKind.Markdown in formats
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    line = params.position.line
    end = ls.workspace.position_codec.client_num_units(lines[line]) if line < len(lines) else 0
    return types.Hover(
        contents=types.MarkupContent(kind=kind, value=text),
        range=types.Range(types.Position(line, 0), types.Position(line, end)),
    )
