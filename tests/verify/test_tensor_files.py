"""Values written to files between the harness's processes (`diagnose.verify.tensors`)."""

import subprocess
import sys

import pytest
import torch

from diagnose.verify import tensors


def test_a_file_that_would_not_fit_is_refused_before_it_is_written(tmp_path, monkeypatch):
    room = tensors.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(tensors.shutil, "disk_usage", lambda path: room._replace(free=tensors.MARGIN + 2**20))
    tensors.save([torch.zeros(2**16)], tmp_path / "fits.pt")  # 256 KiB: within the MiB left
    with pytest.raises(tensors.NoRoom, match="GiB free.*point TMPDIR"):
        tensors.save([torch.zeros(2**20)], tmp_path / "too_big.pt")  # 4 MiB
    assert not (tmp_path / "too_big.pt").exists()


def test_an_import_beside_that_breaks_off_prints_nothing():
    """The daemon thread of `import_beside` may be cut short by the process's end (a command that stops
    at an early error): whatever the import raises stays in the thread, and the command's stderr holds
    only its own one-line error."""
    code = (
        "import sys, threading\n"
        "from diagnose.verify import tensors\n"
        "tensors.import_quietly('diagnose_no_such_module')\n"
        "seen = []\n"
        "threading.excepthook = lambda args: seen.append(args.exc_type)\n"
        "class Refuse:\n"
        "    def find_spec(name, *args):\n"
        "        if name == 'torch': raise RuntimeError('torch broke off')\n"
        "sys.meta_path.insert(0, Refuse)\n"
        "tensors.import_beside()\n"
        "[t.join() for t in threading.enumerate() if t.name == 'import-torch']\n"
        "print(seen)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "[]" and result.stderr == "", result.stderr
