"""Without the `lsp` extra: one line naming the install command and exit code 3, never a traceback.

pygls is hidden, not uninstalled: a `pygls` package first on PYTHONPATH whose import fails.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES


@pytest.fixture
def without_pygls(tmp_path) -> dict[str, str]:
    shim = tmp_path / "pygls"
    shim.mkdir()
    (shim / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'pygls'\", name='pygls')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(EXAMPLES.parent)])}


@pytest.mark.parametrize(
    "command", [["diagnose.cli", "lsp"], ["diagnose.lsp"]], ids=["diagnose lsp", "-m diagnose.lsp"]
)
def test_missing_lsp_extra_says_how_to_install_it(without_pygls, command):
    hidden = subprocess.run([sys.executable, "-c", "import pygls"], env=without_pygls, capture_output=True)
    assert hidden.returncode != 0, "the shim hides pygls"
    done = subprocess.run(
        [sys.executable, "-m", *command],
        env=without_pygls,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "pip install 'diagnose[lsp]'" in line and "Traceback" not in done.stderr
    assert done.stdout == ""
