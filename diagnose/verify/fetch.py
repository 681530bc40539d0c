"""A worker's side of the vault (`diagnose.verify.vault`): one of its job's files, fetched when it is needed.

`fetch(payload, name)` asks the vault at `payload["vault"]` for `name` with the job's ticket, receives
the sealed file's descriptor, maps the tensors in it (`tensors.load`: private, copy-on-write) and
closes the descriptor. Each name can be fetched once per job: the harness fetches a case's inputs
right before the case runs, and the re-check's change only after the calls it checks.

Standard library and torch only: this runs in whichever interpreter the device's placement names.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from diagnose.verify import tensors

REPLY_LIMIT = 4096
# The files every job reads besides its cases': the reference job writes them beside the cases'.
INIT_INPUTS = "init_inputs.pt"
STATE = "state.pt"


def fetch(payload: dict, name: str) -> Any:
    """The values of the job's file `name`; raises `RuntimeError` with the vault's reason when refused."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(payload["vault"])
        connection.sendall(json.dumps({"ticket": payload["ticket"], "name": name}).encode() + b"\n")
        message, fds, _, _ = socket.recv_fds(connection, REPLY_LIMIT, 1)
        while not message.endswith(b"\n"):
            more = connection.recv(REPLY_LIMIT)
            if not more:
                break
            message += more
    try:
        reply = json.loads(message)
        if "error" in reply or not fds:
            raise RuntimeError(f"the harness's vault refused {name}: {reply.get('error', 'no file came')}")
        return tensors.load(f"/proc/self/fd/{fds[0]}")
    finally:
        for fd in fds:
            os.close(fd)
