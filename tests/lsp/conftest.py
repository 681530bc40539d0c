"""End-to-end fixtures: the real server as a subprocess (`python -m diagnose.lsp`), a pytest-lsp client.

Documents are copies of `examples/*.py` in temporary folders. The read-only copies are shared by the
whole session, so the IR cache (`DIAGNOSE_CACHE_DIR`, one per session) makes every compile after
the first a stored answer; tests that edit files on disk get their own folder.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.protocol import default_converter
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tests.conftest import EXAMPLES

SERVER = [sys.executable, "-m", "diagnose.lsp"]


@dataclass
class Folder:
    """A folder of documents the tests open."""

    root: Path

    def copy(self, example: str) -> tuple[Path, str]:
        path = self.root / example
        if not path.exists():
            shutil.copy(EXAMPLES / example, path)
        return path, from_fs_path(str(path))

    def write(self, name: str, text: str) -> tuple[Path, str]:
        path = self.root / name
        path.write_text(text)
        return path, from_fs_path(str(path))

    @property
    def uri(self) -> str:
        return from_fs_path(str(self.root))


@pytest.fixture(scope="session")
def server_env(tmp_path_factory) -> dict[str, str]:
    cache = tmp_path_factory.mktemp("diagnose-cache")
    # The checkout on the path: the server starts as `python -m diagnose.lsp` even where it is not installed.
    return {**os.environ, "DIAGNOSE_CACHE_DIR": str(cache), "PYTHONPATH": str(EXAMPLES.parent)}


@pytest.fixture(scope="session")
def examples(tmp_path_factory) -> Folder:
    """Copies of the examples, shared by the session (never written to)."""
    return Folder(tmp_path_factory.mktemp("examples"))


@pytest.fixture
def folder(tmp_path) -> Folder:
    """A folder of this test's own."""
    return Folder(tmp_path)


def recording_client() -> LanguageClient:
    """pytest-lsp's client, also keeping every publishDiagnostics in order (`client.published`) and
    every workspace/applyEdit it was asked for (`client.applied_edits`; each is accepted)."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []
    client.applied_edits = []

    def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        ls.published.append(params)

    def apply_edit(ls: LanguageClient, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        ls.applied_edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    register_lsp_features(
        client,
        {
            **DEFAULT_CLIENT_FEATURES,
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish,
            types.WORKSPACE_APPLY_EDIT: apply_edit,
        },
    )
    return client


async def start(
    env: dict[str, str],
    root: Folder,
    capabilities: types.ClientCapabilities | None = None,
    options: Any = None,
    configuration: dict | None = None,
) -> LanguageClient:
    config = ClientServerConfig(server_command=SERVER, client_factory=recording_client, server_env=env)
    client = await config.start()
    if configuration is not None:
        client.set_configuration(configuration, section="diagnose")
    client.initialize_result = await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities or types.ClientCapabilities(), root_uri=root.uri, initialization_options=options
        )
    )
    return client


@pytest_asyncio.fixture
async def launch(server_env):
    """`await launch(folder, capabilities=..., options=..., configuration=...)`; shut down after the test."""
    clients: list[LanguageClient] = []

    async def _launch(root: Folder, **kwargs) -> LanguageClient:
        client = await start(server_env, root, **kwargs)
        clients.append(client)
        return client

    yield _launch
    for client in clients:
        await client.shutdown_session()
        await client.stop()


@pytest_asyncio.fixture
async def client(server_env, examples) -> LanguageClient:
    """A plain client (no declared capabilities: the server pushes diagnostics) on the shared examples."""
    client = await start(server_env, examples)
    yield client
    await client.shutdown_session()
    await client.stop()


# --- helpers --------------------------------------------------------------------------------------


async def wait_until(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def open_document(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def save(client: LanguageClient, uri: str) -> None:
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


def published_version(client: LanguageClient, uri: str) -> int | None:
    versions = [p.version for p in client.published if p.uri == uri]
    return versions[-1] if versions else None


def codes(client: LanguageClient, uri: str) -> list[str]:
    return [str(d.code) for d in client.diagnostics.get(uri, [])]


def ir_diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.source == "diagnose ir"]


def line_of(text: str, needle: str) -> int:
    """0-based line of the first line containing `needle`."""
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


def apply_edit(text: str, edit: types.WorkspaceEdit, uri: str) -> str:
    """Apply a WorkspaceEdit (either form) to a document, as an editor would (UTF-16 columns)."""
    if edit.document_changes:
        edits = [e for change in edit.document_changes if change.text_document.uri == uri for e in change.edits]
    else:
        edits = list((edit.changes or {}).get(uri, []))
    lines = text.splitlines(keepends=True)

    def offset(pos: types.Position) -> int:
        if pos.line >= len(lines):
            return len(text)
        units, chars = 0, 0
        for ch in lines[pos.line]:
            if units >= pos.character:
                break
            units += 2 if ord(ch) > 0xFFFF else 1
            chars += 1
        return sum(len(line) for line in lines[: pos.line]) + chars

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end) :]
    return text
