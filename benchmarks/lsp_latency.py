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

Target: change under 100 ms for the 1,000-line file. Run: python benchmarks/lsp_latency.py [--runs 20]
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

    async def start(self, root: Path, env: dict, options: dict) -> None:
        await self.client.start_io(sys.executable, "-m", "diagnose.lsp", env=env)
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(root)),
            initialization_options=options))
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
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(line, 2), types.Position(line, 2)), text=text)]))


async def measure(probe: Probe, path: Path, runs: int) -> dict:
    uri, text = from_fs_path(str(path)), "# \n" + path.read_text()  # keystrokes go into this comment
    row: dict = {"document": path.name, "lines": len(text.splitlines())}
    mark, start = len(probe.published), time.perf_counter()
    probe.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
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
        probe.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        try:
            row[kind] = (await probe.publish_after(uri, mark, timeout=60) - start) * 1000
        except TimeoutError:  # no IR facts came (the server logs why)
            row[kind] = float("nan")
    return row


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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lsp-latency-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "DIAGNOSE_CACHE_DIR": str(root / "cache")}
        docs = []
        for example in sorted(EXAMPLES.glob("*.py")):
            (root / example.name).write_text(example.read_text())
            docs.append(root / example.name)
        docs.append(thousand_line_file(root))
        probe = Probe()
        started = time.perf_counter()
        await probe.start(root, env, {"debounceMs": args.debounce_ms})
        startup = (time.perf_counter() - started) * 1000
        rows = [await measure(probe, doc, args.runs) for doc in docs]
        await probe.stop()
    columns = ["open", "change p50", "change p90", "burst", "save cold", "save warm"]
    print(f"diagnose lsp latency (ms), debounce {args.debounce_ms} ms, {os.cpu_count()} cores, "
          f"server start {startup:.0f} ms")
    print(f"| document | lines | {' | '.join(columns)} |")
    print("|---|---:|" + "---:|" * len(columns))
    for row in rows:
        print(f"| {row['document']} | {row['lines']} | " + " | ".join(f"{row[c]:.0f}" for c in columns) + " |")


if __name__ == "__main__":
    asyncio.run(main())
