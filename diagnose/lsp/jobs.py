"""Long requests that can be cancelled, and the protocol changes that cancel them.

A long request (`diagnose.optimize`) registers a `Job` while it runs: the request id, the handler's
task, its progress token and a `threading.Event` that the work running in a thread checks between
steps (`Job.checkpoint`, which raises `Cancelled`). A job is cancelled three ways, all ending the
same: the stop event is set (the thread stops at its next step), the progress ends with the reason,
the handler's task is cancelled and the request is answered with RequestCancelled at once.

- `$/cancelRequest` for the request's id;
- `window/workDoneProgress/cancel` for its progress token (the editor's cancel button);
- `shutdown`, for every job still running.

`DiagnoseProtocol` is pygls 2.1.1's protocol with two changes. Its `$/cancelRequest` only drops the
request's answer, so it also cancels the job. Its `shutdown` cancels every pending request while
iterating over the dict of pending requests that each cancellation shrinks (`RuntimeError:
dictionary changed size during iteration`, and the shutdown is answered with an error): ours cancels
the jobs, then the other requests over a copy, and answers the shutdown.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method


class Cancelled(Exception):
    """Raised in a job's thread at its next step once the job is cancelled."""


@dataclass
class Job:
    """A running long request: its id, the handler's task, its progress token, the stop event."""

    request_id: Any
    task: asyncio.Task | None
    title: str
    progress: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    def checkpoint(self, *_: Any) -> None:
        """Call between steps of the work (any hook signature): raises `Cancelled` once cancelled."""
        if self.stop.is_set():
            raise Cancelled(f"{self.title}: cancelled")


class Jobs:
    """The running jobs of one server, by request id."""

    def __init__(self) -> None:
        self._running: dict[Any, Job] = {}

    def start(self, request_id: Any, title: str) -> Job:
        job = Job(request_id, asyncio.current_task(), title)
        if request_id is not None:
            self._running[request_id] = job
        return job

    def finish(self, job: Job) -> None:
        if self._running.get(job.request_id) is job:
            del self._running[job.request_id]

    def take(self, request_id: Any) -> Job | None:
        """Remove and return the job of a request (None when it is not running)."""
        return self._running.pop(request_id, None)

    def by_progress(self, token: Any) -> Job | None:
        return next((job for job in self._running.values() if job.progress == token), None)

    def ids(self) -> list[Any]:
        return list(self._running)


class DiagnoseProtocol(LanguageServerProtocol):
    """pygls' protocol; `$/cancelRequest` and `shutdown` also cancel the server's jobs."""

    def cancel_request(self, msg_id: Any, reason: str) -> None:
        """Cancel a request: its job stops, and the request is answered with RequestCancelled."""
        self._server.cancel_job(msg_id, reason)
        if (future := self._request_futures.get(msg_id)) is not None and not future.done():
            super()._handle_cancel_notification(msg_id)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        self.cancel_request(msg_id, "cancelled")

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> None:
        """Cancel every job, then every other pending request, and answer (pygls' own, over a copy;
        like the server, it has no user `shutdown` handler to call first)."""
        for msg_id in self._server.jobs.ids():
            self.cancel_request(msg_id, "the server is shutting down")
        current = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        self._shutdown = True
        return None
