"""Worker entries that misbehave on purpose, for the runner's isolation tests."""

import ctypes
import os
import sys
import time


def echo(payload):
    print("noise on stdout that must not corrupt the result")
    sys.stderr.write("noise on stderr\n")
    return {"echo": payload}


def segfault(payload):
    ctypes.string_at(0)


def hang(payload):
    time.sleep(3600)


def eat_memory(payload):
    hoard = []
    while True:
        hoard.append(bytearray(b"\x01") * (64 * 2**20))


def raise_error(payload):
    raise ValueError("bad value 42")


def exit_hard(payload):
    os._exit(7)


def spawn_orphan(payload):
    """Leave a child behind: the runner must kill the whole group."""
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    return {"child": child.pid}


def interpreter_flag(payload):
    return os.environ.get("TRITON_INTERPRET")


def nap(payload):
    time.sleep(payload["seconds"])
    return {"slept": payload["seconds"]}


def parent_pid(payload):
    return os.getppid()


def patch_torch(payload):
    """A job that patches a module its process imported before it ran (the zygote's torch)."""
    import torch

    torch.matmul = None
    torch.diagnose_marker = payload.get("marker")
    return {"patched": True}


def torch_state(payload):
    import torch

    return {"matmul_is_none": torch.matmul is None, "marker": getattr(torch, "diagnose_marker", None)}


def environment(payload):
    return {"value": os.environ.get(payload["name"]), "parent": os.getppid()}
