"""The reference job's files, held by the parent and handed to a worker one at a time, when it needs them.

A candidate runs as the same user as the harness: any file it can name, it can read. Were the inputs
of every case left in the reference's folder, a candidate could read them all in `__init__`, the
re-check's change included, and compute every answer before anything is judged or timed (then do no
work in the calls that are timed). So once the reference job is done the parent moves each file it
wrote (the init inputs, the model's state, every case's inputs, the re-check's change) into a sealed
in-memory file (Linux `memfd_create`, sealed against writing, growing and shrinking: no process, root
included, can change it) and deletes it from the folder. The data then lives only behind descriptors
of this process, which is non-dumpable (`harness.hide_memory`: a worker running as the same user, not
root, cannot open `/proc/<pid>/fd/*` of it).

A worker asks for a file by name when it needs it (`diagnose.verify.fetch`), over a Unix socket in
Linux's abstract namespace (no path to outgrow the 108 bytes a socket path may have under a long
`TMPDIR`, nothing on disk), with its job's ticket (a 128-bit secret); the vault answers with the sealed
file's descriptor (`SCM_RIGHTS`), which the worker maps and closes. A ticket names the files its job
reads and is good for each of them once: a candidate that fetches a case ahead of the harness (to
precompute its answer) makes the harness's own fetch fail, and the job with it. A name outside the
ticket is refused too. Each refusal is kept on the ticket (`Ticket.refused`) and fails the
verification (`anticheat.inputs_in_turn`) even when the candidate swallows the error; a request with
no live ticket is kept apart (`Vault.strays`).

The sealed files take memory, not disk, for as long as the prepared reference is kept: the size of
every case's inputs once, beside the reference outputs the parent already holds.

Linux only, as the harness's workers are.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import socket
import socketserver
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from diagnose.verify import tensors
from diagnose.verify.fetch import INIT_INPUTS, STATE

__all__ = ["INIT_INPUTS", "STATE", "Ticket", "Vault"]

REQUEST_LIMIT = 4096  # bytes: a request is a ticket and a file name
# How often the serving thread looks for `close`: what closing a vault waits, at most (the default 0.5 s
# was paid once per prepared reference).
POLL_S = 0.02
SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def sealed_copy(path: Path) -> int:
    """A descriptor of a sealed in-memory copy of the file at `path`; the file is deleted."""
    fd = os.memfd_create(path.name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    source = os.open(path, os.O_RDONLY)
    try:
        size, offset = os.fstat(source).st_size, 0
        while offset < size:
            offset += os.sendfile(fd, source, offset, size - offset)
    finally:
        os.close(source)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    path.unlink()
    return fd


@dataclass
class Ticket:
    """What one job may fetch, each name once; what it fetched, and every request refused."""

    secret: str
    names: frozenset[str]
    address: str
    served: set[str] = field(default_factory=set)
    refused: list[str] = field(default_factory=list)

    @property
    def payload(self) -> dict:
        """The job payload's part that lets its worker fetch (`diagnose.verify.fetch`)."""
        return {"vault": self.address, "ticket": self.secret}


class Vault:
    """The sealed files of one prepared reference, and the socket that hands them out."""

    def __init__(self, folder: Path, names: list[str]) -> None:
        self._fds = {name: sealed_copy(folder / name) for name in dict.fromkeys(names)}
        self._tickets: dict[str, Ticket] = {}
        self._strays: list[str] = []
        self._lock = threading.Lock()
        self.address = f"\0diagnose-vault-{secrets.token_hex(8)}"
        self._server = _Server(self.address, self)
        threading.Thread(target=self._server.serve_forever, args=(POLL_S,), name="diagnose-vault", daemon=True).start()

    def names(self) -> frozenset[str]:
        return frozenset(self._fds)

    def path(self, name: str) -> str:
        """A path of a sealed file that opens in this process only (for the parent's own reading)."""
        return f"/proc/self/fd/{self._fds[name]}"

    def load(self, name: str):
        """The values of a sealed file, read in this process (the parent's own comparisons)."""
        return tensors.load(self.path(name))

    @contextmanager
    def ticket(self, names: list[str]) -> Iterator[Ticket]:
        """A ticket for one job that reads `names`, valid until the block ends."""
        unknown = set(names) - set(self._fds)
        if unknown:
            raise KeyError(f"no such file in the vault: {sorted(unknown)}")
        issued = Ticket(secrets.token_hex(16), frozenset(names), self.address)
        with self._lock:
            self._tickets[issued.secret] = issued
        try:
            yield issued
        finally:
            with self._lock:
                self._tickets.pop(issued.secret, None)

    def strays(self) -> list[str]:
        """Requests that named no live ticket (a job's ticket after its job, or a guessed one)."""
        with self._lock:
            return list(self._strays)

    def answer(self, request: dict) -> tuple[dict, int | None]:
        """The reply to one request and the descriptor to send with it (None when refused)."""
        name, secret = str(request.get("name")), str(request.get("ticket"))
        with self._lock:
            held = self._tickets.get(secret)
            if held is None:
                self._strays.append(name)
                return {"error": f"{name}: not a live ticket"}, None
            if name not in held.names:
                held.refused.append(f"{name} (not one of this job's files)")
                return {"error": f"{name} is not one of this job's files"}, None
            if name in held.served:
                held.refused.append(f"{name} (asked for twice)")
                return {
                    "error": f"{name} was already handed out to this job: something in the worker "
                    "fetched it before the harness did"
                }, None
            held.served.add(name)
            return {"name": name}, self._fds[name]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        vault: Vault = self.server.vault  # type: ignore[attr-defined]
        try:
            request = json.loads(self.rfile.readline(REQUEST_LIMIT))
            reply, fd = vault.answer(request if isinstance(request, dict) else {})
        except (ValueError, UnicodeDecodeError):
            reply, fd = {"error": "not a request"}, None
        message = json.dumps(reply).encode() + b"\n"
        if fd is None:
            self.request.sendall(message)
        else:
            socket.send_fds(self.request, [message], [fd])


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, address: str, vault: Vault) -> None:
        self.vault = vault
        super().__init__(address, _Handler)
