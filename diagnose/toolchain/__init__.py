"""Toolchains: Python environments of their own for compilers that cannot share the main one.

triton-ascend installs as the `triton` package itself, so it cannot live beside upstream Triton:
it gets a virtual environment of its own, made by `diagnose toolchain setup ascend`, recorded in
`<cache>/toolchains.json`, and driven through worker processes of that environment's Python that
speak the same JSON protocol as every other worker (`diagnose.runtime.worker`).

- `specs.py`: what each toolchain is (requirements, interpreter version, its probe);
- `config.py`: the records of the environments made here (`toolchains.json`);
- `install.py`: making an environment, probing it, reusing one that works (`ensure`);
- `runner.py`: `call(entry, payload, python=...)`, the worker protocol with another interpreter;
- `commands.py`: `toolchain_setup(name)` and `toolchain_list()`, the command line's two verbs.

Nothing here imports torch or triton.
"""

from diagnose.toolchain.commands import toolchain_list, toolchain_setup
from diagnose.toolchain.config import ToolchainRecord, find_record
from diagnose.toolchain.install import ensure
from diagnose.toolchain.runner import call

__all__ = ["ToolchainRecord", "call", "ensure", "find_record", "toolchain_list", "toolchain_setup"]
