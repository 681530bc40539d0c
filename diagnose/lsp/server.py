"""The language server object: its state, and the plumbing every feature handler shares.

All state lives on `DiagnoseServer` (one per process): the client's options, one `DocumentState` per
open document, how diagnostics reach this client (push or pull), and the documentation links. The
feature handlers (`diagnostics.py`, `hover.py`, `code_actions.py`, `optimize.py`) are registered in
`app.create_server`; each is a thin adapter over triage, IR inspection or the verification harness.

Blocking work (triage of a large file, an IR compile, a verification run) runs in daemon threads
via `run_blocking`, so the event loop keeps answering and a compile still running at exit does not
hold the process; user code itself only ever runs in the worker subprocesses those calls start.
Long requests register a `Job` (`jobs.py`) so that `$/cancelRequest`, the progress's cancel button
and `shutdown` stop them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from diagnose.lsp.ir_facts import IrSnapshot
from diagnose.lsp.jobs import DiagnoseProtocol, Jobs
from diagnose.lsp.rule_docs import RuleDocs
from diagnose.lsp.settings import ClientOptions, Settings, parse_options, resolve
from diagnose.records import Finding

log = logging.getLogger("diagnose.lsp")

try:
    from importlib.metadata import version as _version

    VERSION = _version("diagnose")
except Exception:  # noqa: BLE001 - running from a checkout that is not installed
    VERSION = "dev"


@dataclass
class DocumentState:
    """What the server knows about one open document.

    Triage results belong to `triaged_version` and carry the lines they were computed on, so that
    IR facts are placed on those same lines; `triage_requests` numbers triage runs (the result of
    an older run never replaces a newer one's), and `ir_saves` counts saves (an IR job started for
    an older save than the latest is superseded). While the text does not parse, `findings` are
    the syntax error and the last parsed text's findings, moved to the current lines.
    """

    triaged_version: int | None = None
    triage_requests: int = 0
    triage_stored: int = 0
    triaged_lines: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    triage: list[types.Diagnostic] = field(default_factory=list)
    parsed_lines: list[str] = field(default_factory=list)  # the last text that parsed,
    parsed_findings: list[Finding] = field(default_factory=list)  # and its findings (kept mid-edit)
    debounce: asyncio.Task | None = None
    last_change: float = 0.0  # time.monotonic() of the last didChange
    triaging: bool = False  # a debounced triage is running
    stale: bool = False  # the text changed while it ran: run once more
    ir: IrSnapshot | None = None
    ir_saves: int = 0
    ir_problem: str | None = None
    published: int = 0  # bumped at every change of the diagnostics: the pull result id


class DiagnoseServer(LanguageServer):
    """pygls' server plus diagnose's state; handlers receive it as `ls`."""

    def __init__(self) -> None:
        super().__init__(
            "diagnose",
            VERSION,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=DiagnoseProtocol,
        )
        self.init_options = ClientOptions()
        self.options = ClientOptions()  # initializationOptions, then workspace/configuration on top
        self.documents: dict[str, DocumentState] = {}
        self.rule_docs = RuleDocs()
        self.pull_diagnostics = False
        self.checks_running: set[str] = set()
        self.reported: set[str] = set()
        self.tasks: set[asyncio.Task] = set()  # background work, held so that it is not collected
        self.jobs = Jobs()  # long requests, cancellable
        self._ir_slot: asyncio.Semaphore | None = None

    # --- client and configuration -------------------------------------------------------------

    def supports(self, capability: str) -> bool:
        return bool(get_capability(self.client_capabilities, capability, None))

    def set_options(self, options: ClientOptions) -> None:
        self.options = options
        self.rule_docs = RuleDocs(url_template=options.docs_url)

    def take_options(self, data: Any, origin: str) -> ClientOptions:
        options, problems = parse_options(data)
        for problem in problems:
            self.warn_once(f"{origin}: {problem}")
        return options

    def settings_for(self, uri: str) -> Settings:
        settings, problems = resolve(self.options, document_path(uri), self.root_path())
        for problem in problems:
            self.warn_once(problem)
        return settings

    def root_path(self) -> str | None:
        try:
            return self.workspace.root_path
        except Exception:  # noqa: BLE001 - before initialize there is no workspace
            return None

    # --- documents -----------------------------------------------------------------------------

    def open_document(self, uri: str) -> TextDocument | None:
        """The open document, or None (never pygls' fallback of reading a closed file from disk)."""
        return self.workspace.text_documents.get(unquote(uri))

    def state(self, uri: str) -> DocumentState:
        return self.documents.setdefault(uri, DocumentState())

    def forget(self, uri: str) -> None:
        state = self.documents.pop(uri, None)
        if state and state.debounce:
            state.debounce.cancel()

    # --- logging -------------------------------------------------------------------------------

    def log(self, message: str, level: types.MessageType = types.MessageType.Info) -> None:
        """To the client's log (window/logMessage) and to stderr."""
        log.log(
            {types.MessageType.Error: logging.ERROR, types.MessageType.Warning: logging.WARNING}.get(
                level, logging.INFO
            ),
            message,
        )
        try:
            self.window_log_message(types.LogMessageParams(type=level, message=message))
        except Exception as err:  # noqa: BLE001 - the connection may be gone during shutdown
            log.debug("no client to log to: %s", err)

    def warn_once(self, message: str) -> None:
        if message not in self.reported:
            self.reported.add(message)
            self.log(message, types.MessageType.Warning)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A handler raised: log it (with the traceback on stderr) and keep serving, without a pop-up."""
        log.error("%s: %s", getattr(source, "__name__", source), error, exc_info=error)
        self.log(
            f"internal error ({getattr(source, '__name__', source)}): {type(error).__name__}: {error}",
            types.MessageType.Error,
        )

    # --- background and blocking work ---------------------------------------------------------

    def spawn(self, coro: Any) -> asyncio.Task:
        """Run a coroutine in the background; an exception it raises is logged, never lost."""
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)

        def done(t: asyncio.Task) -> None:
            self.tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                self.report_server_error(t.exception(), "background task")

        task.add_done_callback(done)
        return task

    def run_blocking(self, fn: Callable, *args: Any) -> asyncio.Future:
        """Run `fn(*args)` in a daemon thread; the future resolves on the event loop."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def settle(value: Any, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

        def work() -> None:
            try:
                value, error = fn(*args), None
            except BaseException as err:  # noqa: BLE001 - handed to the awaiting handler
                value, error = None, err
            try:
                loop.call_soon_threadsafe(settle, value, error)
            except RuntimeError:  # the loop closed: the server is exiting
                pass

        threading.Thread(target=work, name=f"diagnose-{getattr(fn, '__name__', 'job')}", daemon=True).start()
        return future

    def cancel_job(self, request_id: Any, reason: str) -> bool:
        """Stop a long request's work and end its progress with `reason`; False when none runs.

        The thread stops at its next step; the handler's task is cancelled (the request's answer is
        the caller's: `DiagnoseProtocol.cancel_request`).
        """
        job = self.jobs.take(request_id)
        if job is None:
            return False
        job.stop.set()
        if job.progress is not None:
            try:
                self.work_done_progress.end(job.progress, types.WorkDoneProgressEnd(message=f"cancelled: {reason}"))
            except Exception as err:  # noqa: BLE001 - the connection may be closing
                log.debug("no client to end the progress: %s", err)
        if job.task is not None:
            job.task.cancel()
        self.log(f"{job.title}: {reason}")
        return True

    @property
    def ir_slot(self) -> asyncio.Semaphore:
        """One IR compile at a time: each is heavy, and the newest save is the one that matters."""
        if self._ir_slot is None:
            self._ir_slot = asyncio.Semaphore(1)
        return self._ir_slot


def document_path(uri: str) -> str | None:
    """The file behind a file:// URI; None for unsaved buffers (untitled:, ...)."""
    if not uri.startswith("file:"):
        return None
    try:
        return to_fs_path(uri)
    except Exception:  # noqa: BLE001 - a malformed URI is treated as an unsaved buffer
        return None
