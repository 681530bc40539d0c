"""Values written to files between the harness's processes (`diagnose.verify.tensors`)."""

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
