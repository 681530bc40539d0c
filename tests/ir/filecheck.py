"""FileCheck for the IR tests: LLVM's own binary, which the triton wheel bundles."""

from __future__ import annotations

import os
import subprocess
import tempfile


def filecheck_binary() -> str:
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "FileCheck")


def filecheck(check_file: str, text: str, prefixes: tuple[str, ...]) -> tuple[bool, str]:
    """Match `text` against the CHECK lines (with `prefixes`) written in `check_file`."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        proc = subprocess.run(
            [
                filecheck_binary(),
                check_file,
                "--input-file",
                f.name,
                "--check-prefixes",
                ",".join(prefixes),
                "--allow-unused-prefixes",
                "--dump-input=never",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(f.name)
    return proc.returncode == 0, proc.stderr
