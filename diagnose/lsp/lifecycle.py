"""Initialize, initialized and configuration changes: what the server learns about its client.

Diagnostics go to a client one way only, so that an editor never shows a finding twice: pulled
(`textDocument/diagnostic`) when the client can pull *and* can be told to pull again
(`workspace/diagnostic/refresh`, needed when IR facts arrive after a save), pushed
(`textDocument/publishDiagnostics`) otherwise.
"""

from __future__ import annotations

from lsprotocol import types

from diagnose.lsp.diagnostics import refresh
from diagnose.lsp.fixes import warm_up
from diagnose.lsp.server import DiagnoseServer


def initialize(ls: DiagnoseServer, params: types.InitializeParams) -> None:
    ls.init_options = ls.take_options(params.initialization_options, "initializationOptions")
    ls.set_options(ls.init_options)
    ls.pull_diagnostics = ls.supports("text_document.diagnostic") and ls.supports(
        "workspace.diagnostics.refresh_support"
    )


async def initialized(ls: DiagnoseServer, params: types.InitializedParams) -> None:
    # The first code-action menu would otherwise wait for the rewrite table's import (0.1-0.3 s).
    ls.spawn(ls.run_blocking(warm_up))
    await fetch_configuration(ls)


async def did_change_configuration(ls: DiagnoseServer, params: types.DidChangeConfigurationParams) -> None:
    if ls.supports("workspace.configuration"):
        await fetch_configuration(ls)
    else:
        ls.set_options(ls.init_options.merged(ls.take_options(params.settings, "didChangeConfiguration")))
        await refresh_open_documents(ls)


async def fetch_configuration(ls: DiagnoseServer) -> None:
    """The `diagnose` section of workspace/configuration over initializationOptions, when the client has one."""
    if not ls.supports("workspace.configuration"):
        return
    try:
        result = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="diagnose")])
        )
    except Exception as err:  # noqa: BLE001 - a client that fails this request keeps the options it gave
        ls.log(f"workspace/configuration failed: {err}", types.MessageType.Warning)
        return
    section = result[0] if result else None
    options = ls.init_options.merged(ls.take_options(section, "workspace/configuration"))
    if options != ls.options:
        ls.set_options(options)
        await refresh_open_documents(ls)


async def refresh_open_documents(ls: DiagnoseServer) -> None:
    """New settings: triage every open document again (a pulling client is asked to pull once)."""
    if ls.pull_diagnostics:
        for state in ls.documents.values():
            state.triaged_version = None  # the next pull triages afresh
        if ls.documents:
            ls.workspace_diagnostic_refresh(None)
        return
    for uri in list(ls.documents):
        await refresh(ls, uri)
