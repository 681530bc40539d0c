"""Configuration: initializationOptions, workspace/configuration over them, pyproject.toml beneath."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from tests.lsp.conftest import codes, ir_diagnostics, open_document, save, wait_until

pytestmark = pytest.mark.asyncio

CONFIGURABLE = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(configuration=True))


async def test_initialization_options_select_rules(launch, examples):
    client = await launch(examples, options={"select": ["TRI019"]})
    path, uri = examples.copy("matmul.py")
    open_document(client, uri, path.read_text())
    await wait_until(lambda: uri in client.diagnostics, what="diagnostics")
    assert codes(client, uri) == ["TRI019"]


async def test_workspace_configuration_overrides_initialization_options(launch, examples):
    client = await launch(
        examples, capabilities=CONFIGURABLE, options={"select": ["TRI019"]}, configuration={"select": ["TRI005"]}
    )
    path, uri = examples.copy("matmul.py")
    open_document(client, uri, path.read_text())
    await wait_until(lambda: codes(client, uri) == ["TRI005"], what="TRI005 only")


async def test_pyproject_is_the_fallback(launch, folder):
    (folder.root / "pyproject.toml").write_text('[tool.diagnose]\nignore = ["TRI019"]\ntarget = "ascend:910b"\n')
    client = await launch(folder)
    path, uri = folder.copy("matmul.py")
    open_document(client, uri, path.read_text())
    await wait_until(lambda: uri in client.diagnostics, what="diagnostics")
    found = codes(client, uri)
    assert "TRI019" not in found
    assert "TRI005" not in found  # a wgmma rule: not for an Ascend target


async def test_bad_options_are_logged_and_dropped(launch, examples):
    client = await launch(examples, options={"select": ["NOPE1"], "target": "tpu:v5", "debounceMs": "soon"})
    path, uri = examples.copy("matmul.py")
    open_document(client, uri, path.read_text())
    await wait_until(lambda: "TRI005" in codes(client, uri), what="diagnostics with the defaults")
    logged = " ".join(m.message for m in client.log_messages)
    assert "NOPE1" in logged and "tpu" in logged and "debounceMs" in logged


@pytest.mark.slow
async def test_ir_on_save_can_be_switched_off(launch, examples):
    client = await launch(examples, options={"irOnSave": False})
    path, uri = examples.copy("matmul.py")
    open_document(client, uri, path.read_text())
    await wait_until(lambda: uri in client.diagnostics, what="diagnostics")
    save(client, uri)
    await asyncio.sleep(1.0)  # a stored IR result would have arrived by now
    assert ir_diagnostics(client, uri) == []


async def test_configuration_change_triages_again(launch, examples):
    client = await launch(examples, capabilities=CONFIGURABLE, configuration={})
    path, uri = examples.copy("matmul.py")
    open_document(client, uri, path.read_text())
    await wait_until(lambda: "TRI005" in codes(client, uri), what="TRI005")
    client.set_configuration({"ignore": ["TRI005"]}, section="diagnose")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_until(lambda: "TRI005" not in codes(client, uri), what="TRI005 ignored")
