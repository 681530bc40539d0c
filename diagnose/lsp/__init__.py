"""The language server: `diagnose lsp` (or `python -m diagnose.lsp`) over stdio.

A thin adapter over the code the command line uses: triage findings as diagnostics on open and on
change, IR facts from `diagnose inspect` on save and on hover, suppression and rewrite quick fixes,
and a `diagnose.optimize` command. Modules: `app` (the handlers registered, startup), `server` (the
server's state and the plumbing handlers share), `lifecycle`, `diagnostics`, `hover`, `code_actions`,
`optimize` (one LSP feature each), and the pure helpers they share: `settings`, `convert`, `ir_facts`,
`fixes`, `rule_docs`.
"""

import sys

from diagnose.errors import EXIT_INTERNAL

INSTALL = "pip install 'diagnose[lsp]'"


def main(argv: list[str] | None = None) -> int:
    """Start the server (imports pygls only when called, so `diagnose --help` stays fast).

    Without the `lsp` extra (pygls, lsprotocol) it says so in one line and returns 3 (a missing
    toolchain, in the command line's exit codes).
    """
    try:
        import lsprotocol.types  # noqa: F401 - the `lsp` extra
        import pygls.lsp.server  # noqa: F401 - the `lsp` extra
    except ImportError as err:
        print(f"diagnose: error: the language server needs the lsp extra ({err}): {INSTALL}", file=sys.stderr)
        return EXIT_INTERNAL
    from diagnose.lsp.app import main as serve  # deferred: imports pygls (the lsp extra, checked above)

    return serve(argv)
