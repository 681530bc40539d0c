"""The language server as a client meets it: every feature registered, and the command that starts it.

`create_server()` registers one handler per feature and declares the capabilities; `main(argv)` is
`diagnose lsp` / `python -m diagnose.lsp`. The server object and the plumbing the handlers share
are `server.py`'s, which the handlers import; this module sits above them all.
"""

from __future__ import annotations

import argparse
import logging

from lsprotocol import types

from diagnose.lsp import code_actions, diagnostics, hover, lifecycle, optimize
from diagnose.lsp.server import DiagnoseServer


def create_server() -> DiagnoseServer:
    """A server with every feature registered: one handler per feature, capabilities declared here."""
    server = DiagnoseServer()
    server.feature(types.INITIALIZE)(lifecycle.initialize)
    server.feature(types.INITIALIZED)(lifecycle.initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(lifecycle.did_change_configuration)
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(diagnostics.did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(diagnostics.did_change)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(diagnostics.did_save)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(diagnostics.did_close)
    server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(identifier="diagnose", inter_file_dependencies=False, workspace_diagnostics=False),
    )(diagnostics.pull)
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover.hover)
    server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Source], resolve_provider=True
        ),
    )(code_actions.code_action)
    server.feature(types.CODE_ACTION_RESOLVE)(code_actions.resolve)
    server.command(optimize.COMMAND)(optimize.optimize)
    server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)(optimize.progress_cancelled)
    return server


def main(argv: list[str] | None = None) -> int:
    """`diagnose lsp` / `python -m diagnose.lsp`: serve over stdio (or TCP for debugging)."""
    parser = argparse.ArgumentParser(prog="diagnose lsp", description="The diagnose language server.")
    parser.add_argument("--stdio", action="store_true", help="serve over stdin/stdout (the default)")
    parser.add_argument("--tcp", action="store_true", help="serve over TCP instead (for debugging)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=2087)
    parser.add_argument("--log-level", default="WARNING", help="stderr log level (DEBUG, INFO, WARNING)")
    args = parser.parse_args(argv)
    # stdout is the protocol channel: logs go to stderr only.
    logging.basicConfig(level=args.log_level.upper(), format="diagnose-lsp %(levelname)s %(message)s")
    server = create_server()
    if args.tcp:
        server.start_tcp(args.host, args.port)
    else:
        server.start_io()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
