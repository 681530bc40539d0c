"""How long does an editor wait for diagnostics? Drives the real server (`python -m diagnose.lsp`)
over stdio with pygls' client, on copies of examples/*.py and on a 1,000-line file made of them.

Per document:
- open: didOpen -> the first publishDiagnostics;
- change: one edit -> the diagnostics of that version (median and p90 of `--runs` edits, spaced out so
  each is measured alone: the server triages an edit after quiet at once);
- burst: 20 keystrokes 10 ms apart -> the diagnostics of the last one (this one waits for the
  debounce, `--debounce-ms`, the server's default 30);
- save cold / warm: didSave -> the publish that carries the IR facts (cuda:sm90); cold compiles in
  the worker subprocess with an empty cache, warm answers from the stored result.

Code actions, per example (a second table), all of the document's diagnostics in one request:
- menu: textDocument/codeAction from a client that resolves edits (VS Code's capabilities): the
  fixes come without edits, from the last triage;
- resolve: codeAction/resolve of each fix offered (a rewrite run, or the suppression comment);
- menu, no resolve: the same request from a client that cannot resolve, which gets every edit.

Targets: change under 100 ms for the 1,000-line file; menu well under 50 ms.
Run: python benchmarks/lsp_latency.py [--runs 20] [--actions-only]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


class Probe:
    """A client that timestamps every publishDiagnostics."""

    def __init__(self) -> None:
        self.client = LanguageClient("lsp-latency", "1")
        self.published: list[tuple[float, types.PublishDiagnosticsParams]] = []

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(ls, params: types.PublishDiagnosticsParams) -> None:
            self.published.append((time.perf_counter(), params))

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(ls, params: types.LogMessageParams) -> None:
            pass

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)  # a fix that does not apply says why
        def on_message(ls, params: types.ShowMessageParams) -> None:
            pass

    async def start(
        self, root: Path, env: dict, options: dict, capabilities: types.ClientCapabilities | None = None
    ) -> None:
        await self.client.start_io(sys.executable, "-m", "diagnose.lsp", env=env)
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=capabilities or types.ClientCapabilities(),
                root_uri=from_fs_path(str(root)),
                initialization_options=options,
            )
        )
        self.client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    async def publish_after(self, uri: str, since: int, version: int | None = None, timeout: float = 120) -> float:
        """Wait for a publish for `uri` (of `version`, if given) after index `since`; its arrival time."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            for at, params in self.published[since:]:
                if params.uri == uri and (version is None or params.version == version):
                    return at
            await asyncio.sleep(0.001)
        raise TimeoutError(f"no diagnostics for {uri} version {version}")

    def change(self, uri: str, version: int, line: int, text: str) -> None:
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(types.Position(line, 2), types.Position(line, 2)), text=text
                    )
                ],
            )
        )


async def measure(probe: Probe, path: Path, runs: int) -> dict:
    uri, text = from_fs_path(str(path)), "# \n" + path.read_text()  # keystrokes go into this comment
    row: dict = {"document": path.name, "lines": len(text.splitlines())}
    mark, start = len(probe.published), time.perf_counter()
    probe.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    row["open"] = (await probe.publish_after(uri, mark) - start) * 1000
    version, waits = 1, []
    for _ in range(runs):
        version += 1
        mark, start = len(probe.published), time.perf_counter()
        probe.change(uri, version, 0, "x")
        waits.append((await probe.publish_after(uri, mark, version) - start) * 1000)
        await asyncio.sleep(0.1)
    row["change p50"] = statistics.median(waits)
    row["change p90"] = statistics.quantiles(waits, n=10)[-1] if len(waits) >= 2 else waits[0]
    for _ in range(20):
        version += 1
        mark, start = len(probe.published), time.perf_counter()
        probe.change(uri, version, 0, "x")
        await asyncio.sleep(0.01)
    row["burst"] = (await probe.publish_after(uri, mark, version) - start) * 1000
    await asyncio.sleep(0.5)  # let the burst settle: the next publish must be the save's
    # The saved file must be the text the server holds now.
    path.write_text("# " + "x" * (runs + 20) + text[2:])
    for kind in ("save cold", "save warm"):
        mark, start = len(probe.published), time.perf_counter()
        probe.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        try:
            row[kind] = (await probe.publish_after(uri, mark, timeout=60) - start) * 1000
        except TimeoutError:  # no IR facts came (the server logs why)
            row[kind] = float("nan")
    return row


RESOLVING = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        code_action=types.CodeActionClientCapabilities(
            data_support=True, resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"])
        )
    )
)


def p50_p90(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), statistics.quantiles(values, n=10)[-1] if len(values) >= 2 else values[0]


async def open_and_triage(probe: Probe, path: Path) -> tuple[str, list[types.Diagnostic]]:
    uri, mark = from_fs_path(str(path)), len(probe.published)
    probe.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text())
        )
    )
    await probe.publish_after(uri, mark)
    return uri, list(next(p for _, p in reversed(probe.published) if p.uri == uri).diagnostics)


async def timed_menu(probe: Probe, uri: str, diagnostics: list[types.Diagnostic]) -> tuple[float, list]:
    start = time.perf_counter()
    actions = await probe.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostics[0].range,
            context=types.CodeActionContext(diagnostics=diagnostics, only=[types.CodeActionKind.QuickFix]),
        )
    )
    return (time.perf_counter() - start) * 1000, list(actions or [])


async def measure_actions(resolving: Probe, eager: Probe, path: Path, runs: int) -> dict:
    """Menu and resolve latency (ms) on one document, with and without resolve support."""
    row: dict = {"document": path.name}
    uri, diagnostics = await open_and_triage(resolving, path)
    row["diagnostics"] = len(diagnostics)
    if not diagnostics:
        return row
    await timed_menu(resolving, uri, diagnostics)  # warm: the first request imports the rewrite table
    menus, actions = [], []
    for _ in range(runs):
        wait, actions = await timed_menu(resolving, uri, diagnostics)
        menus.append(wait)
    row["fixes"] = len(actions)
    row["menu p50"], row["menu p90"] = p50_p90(menus)
    resolves = []
    for _ in range(max(1, runs // 5)):
        for action in actions:
            start = time.perf_counter()
            await resolving.client.code_action_resolve_async(action)
            resolves.append((time.perf_counter() - start) * 1000)
    row["resolve p50"], row["resolve p90"] = p50_p90(resolves)
    uri, diagnostics = await open_and_triage(eager, path)
    await timed_menu(eager, uri, diagnostics)
    eager_menus = [(await timed_menu(eager, uri, diagnostics))[0] for _ in range(max(1, runs // 5))]
    row["menu, no resolve p50"] = statistics.median(eager_menus)
    return row


async def action_table(root: Path, env: dict, docs: list[Path], runs: int) -> None:
    resolving, eager = Probe(), Probe()
    await resolving.start(root, env, {}, RESOLVING)
    await eager.start(root, env, {})
    rows = [await measure_actions(resolving, eager, doc, runs) for doc in docs]
    await resolving.stop()
    await eager.stop()
    columns = ["menu p50", "menu p90", "resolve p50", "resolve p90", "menu, no resolve p50"]
    print(f"\ndiagnose lsp code actions (ms), {runs} menus per document, every fix resolved {max(1, runs // 5)}x")
    print(f"| document | diagnostics | fixes | {' | '.join(columns)} |")
    print("|---|---:|---:|" + "---:|" * len(columns))
    for row in rows:
        cells = " | ".join(f"{row[c]:.1f}" if c in row else "-" for c in columns)
        print(f"| {row['document']} | {row['diagnostics']} | {row.get('fixes', 0)} | {cells} |")


def thousand_line_file(folder: Path) -> Path:
    """The examples three times over (about 970 lines), topped up to 1,000 with small helpers."""
    source = "\n".join(p.read_text() for p in sorted(EXAMPLES.glob("*.py")))
    lines = "\n".join([source] * 3).splitlines()
    j = 0
    while len(lines) < 999:
        lines += ["", f"def helper_{j}(x):", f"    return x + {j}"]
        j += 1
    path = folder / "examples_1000.py"
    path.write_text("\n".join(lines[:999]) + "\n")
    return path


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--debounce-ms", type=int, default=30)
    parser.add_argument("--actions-only", action="store_true", help="only the code-action table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lsp-latency-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "DIAGNOSE_CACHE_DIR": str(root / "cache")}
        docs = []
        for example in sorted(EXAMPLES.glob("*.py")):
            (root / example.name).write_text(example.read_text())
            docs.append(root / example.name)
        if args.actions_only:
            await action_table(root, env, docs, args.runs)
            return
        docs.append(thousand_line_file(root))
        probe = Probe()
        started = time.perf_counter()
        await probe.start(root, env, {"debounceMs": args.debounce_ms})
        startup = (time.perf_counter() - started) * 1000
        rows = [await measure(probe, doc, args.runs) for doc in docs]
        await probe.stop()
    columns = ["open", "change p50", "change p90", "burst", "save cold", "save warm"]
    print(
        f"diagnose lsp latency (ms), debounce {args.debounce_ms} ms, {os.cpu_count()} cores, "
        f"server start {startup:.0f} ms"
    )
    print(f"| document | lines | {' | '.join(columns)} |")
    print("|---|---:|" + "---:|" * len(columns))
    for row in rows:
        print(f"| {row['document']} | {row['lines']} | " + " | ".join(f"{row[c]:.0f}" for c in columns) + " |")
    with tempfile.TemporaryDirectory(prefix="lsp-latency-") as tmp:  # fresh copies: the saves wrote to those
        root = Path(tmp)
        docs = [root / example.name for example in sorted(EXAMPLES.glob("*.py"))]
        for doc in docs:
            doc.write_text((EXAMPLES / doc.name).read_text())
        await action_table(root, {**os.environ, "DIAGNOSE_CACHE_DIR": str(root / "cache")}, docs, args.runs)


if __name__ == "__main__":
    asyncio.run(main())
