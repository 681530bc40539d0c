"""The README's Neovim 0.7 snippet, in a real Neovim (Debian 12's 0.7.2): it attaches and diagnostics come.

Skipped where there is no `nvim`; Neovim runs headless with the snippet as its only configuration.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import EXAMPLES, ROOT
from tests.lsp.conftest import line_of

CHECK = """
local ok = vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 50)
for _, c in ipairs(vim.lsp.get_active_clients()) do
  io.stdout:write('client ' .. c.name .. ' ' .. tostring(vim.lsp.buf_is_attached(0, c.id)) .. '\\n')
end
for _, d in ipairs(vim.diagnostic.get(0)) do
  io.stdout:write('diagnostic ' .. tostring(d.code) .. ' ' .. d.lnum .. '\\n')
end
vim.cmd('qall!')
"""


def readme_snippet(heading: str) -> str:
    readme = (ROOT / "README.md").read_text()
    after = readme[readme.index(heading) :]
    return re.search(r"```lua\n(.*?)```", after, re.S).group(1)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvim") is None, reason="needs Neovim (apt-get install neovim)")
def test_neovim_07_snippet_attaches_and_shows_diagnostics(tmp_path):
    version = subprocess.run(["nvim", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    (tmp_path / "init.lua").write_text(readme_snippet("Neovim 0.7 ("))
    (tmp_path / "check.lua").write_text(CHECK)
    (tmp_path / "pyproject.toml").write_text("")
    shutil.copy(EXAMPLES / "vector_add.py", tmp_path / "vector_add.py")
    env = {
        **os.environ,
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
        "PYTHONPATH": str(ROOT),
        "DIAGNOSE_CACHE_DIR": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
    }
    done = subprocess.run(
        ["nvim", "--headless", "-u", "init.lua", "-c", "luafile check.lua", "vector_add.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    lines = done.stdout.splitlines()
    assert "client diagnose true" in lines, (version, done.stdout, done.stderr)
    launch = line_of((EXAMPLES / "vector_add.py").read_text(), "add_kernel[grid]")
    assert f"diagnostic TRI001 {launch}" in lines, (version, done.stdout, done.stderr)
