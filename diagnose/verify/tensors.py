"""Moving values between processes and devices: outputs flattened to a list of CPU tensors.

Files are written with `torch.save` and read back with `torch.load(weights_only=True)`, which refuses
arbitrary pickled objects: a candidate cannot smuggle code into the process that judges it. A file that
would not fit where it goes is refused before a byte is written (`NoRoom`): a full temporary folder
otherwise fails later and obscurely (`torch.save ... unexpected pos`, seen under eight sweep jobs).
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

# Room left free beside every file written: what the zip records and other writers need.
MARGIN = 64 * 2**20


class NoRoom(OSError):
    """Not enough free space for a file of values."""


def import_beside() -> None:
    """Start importing torch in a thread of its own, unless it is imported already. The parent of a
    verification first needs torch to read the reference job's files; imported then, torch's 1-2 s
    followed that job, and now they overlap it (its worker is a process of its own)."""
    if "torch" not in sys.modules:
        threading.Thread(target=import_quietly, args=("torch",), name="import-torch", daemon=True).start()


def import_quietly(name: str) -> None:
    """Import a module, saying nothing if that fails: the thread of `import_beside` is a daemon, and where
    the process ends before the import has (a command that stops at an early error), the import breaks
    off inside torch's initialisation and would print its traceback after the command's one-line error.
    A torch that cannot be imported says so where it is next imported, on the thread that needs it."""
    with contextlib.suppress(BaseException):  # see the docstring: the thread that needs it reports it
        importlib.import_module(name)


def flatten(value: Any) -> list:
    """A forward's result as a flat list of tensors (numbers become 0-d tensors)."""
    import torch  # deferred: torch is heavy

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in flatten(item)]
    if isinstance(value, dict):
        return [t for key in sorted(value) for t in flatten(value[key])]
    if isinstance(value, (bool, int, float)):
        return [torch.tensor(value)]
    if value is None:
        return []
    raise TypeError(f"forward returned a {type(value).__name__}, not tensors")


def require_plain(values: list) -> None:
    """Raise `TypeError` unless every value is a plain dense `torch.Tensor` (or a parameter): a subclass
    can compute when it is first inspected, so that the calls being timed do no work."""
    import torch  # deferred: torch is heavy

    for index, value in enumerate(values):
        if type(value) not in (torch.Tensor, torch.nn.Parameter) or value.layout != torch.strided:
            kind = type(value).__name__ if type(value) not in (torch.Tensor, torch.nn.Parameter) else str(value.layout)
            raise TypeError(
                f"output {index} is a {kind}, not a plain dense torch.Tensor: outputs must be "
                "computed by the call, not when they are read"
            )


def to_device(values: list, device: str) -> list:
    import torch  # deferred: torch is heavy

    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def copy_to(values: list, device: str) -> list:
    """Fresh copies on `device`, also where the values already live there (the originals stay pristine)."""
    import torch  # deferred: torch is heavy

    return [v.to(device, copy=True) if isinstance(v, torch.Tensor) else v for v in values]


def to_cpu(values: list) -> list:
    import torch  # deferred: torch is heavy

    return [v.detach().to("cpu") if isinstance(v, torch.Tensor) else v for v in values]


def save(values: Any, path: Path) -> str:
    """`torch.save`, without the zip records' CRC-32: each file is read back once, on this machine,
    by this package, so the checksum is CPU time over every byte written that guards nothing."""
    import torch  # deferred: torch is heavy

    needed, free = nbytes(values), shutil.disk_usage(Path(path).parent).free
    if needed + MARGIN > free:
        raise NoRoom(
            f"{Path(path).parent}: {free / 2**30:.1f} GiB free, {needed / 2**30:.1f} GiB of values to write there: "
            "point TMPDIR at a folder with more room"
        )
    with _without_crc32():
        torch.save(values, path)
    return str(path)


def nbytes(values: Any) -> int:
    """Bytes of every tensor in `values` (lists, tuples and dicts of them)."""
    import torch  # deferred: torch is heavy

    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, (list, tuple)):
        return sum(nbytes(v) for v in values)
    if isinstance(values, dict):
        return sum(nbytes(v) for v in values.values())
    return 0


def _without_crc32():
    try:  # torch >= 2.6
        from torch.utils.serialization import config  # deferred: torch is heavy
    except ImportError:
        return contextlib.nullcontext()
    return config.patch({"save.compute_crc32": False})


def load(path: str | Path) -> Any:
    """`torch.load` of a file `save` wrote, its storages memory-mapped rather than read in: what is used
    is paged in once, without the reader's copies (`benchmarks/tensor_io_speed.py`). The mapping is
    private: writing to a loaded tensor leaves the file as it was, and a deleted file's tensors stay valid."""
    import torch  # deferred: torch is heavy

    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except TypeError:  # a torch before 2.1, without `mmap`
        return torch.load(path, map_location="cpu", weights_only=True)


def changed(before: list, after: list) -> list[int]:
    """Indices of tensor inputs whose contents differ (bitwise; NaN equal to NaN), compared where the
    `after` values live (on a device, GiB inputs need not cross to the host)."""
    import torch  # deferred: torch is heavy

    out = []
    for i, (a, b) in enumerate(zip(before, after)):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            a = a.to(b.device)
            if a.shape != b.shape:
                out.append(i)
            # The plain comparison first: NaN-aware copies of GiB inputs only where it fails.
            elif not torch.equal(a, b) and not torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)):
                out.append(i)
    return out
