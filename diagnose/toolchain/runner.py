"""The worker protocol of `diagnose.runtime.runner`, run by a toolchain's own Python interpreter.

A toolchain's virtual environment (triton-ascend installs as `triton` and cannot share ours) runs
`python -m diagnose.runtime.worker REQUEST RESULT` exactly as the main environment does: the worker
module needs only the standard library and `diagnose.errors`/`diagnose.records`, and the runner puts this
checkout on the child's `PYTHONPATH`. A toolchain whose interpreter is gone is a `load_error`, not a crash.
"""

from __future__ import annotations

from pathlib import Path

from diagnose.records import Failure
from diagnose.runtime.runner import DEFAULT_MEMORY_LIMIT, DEFAULT_TIMEOUT_S, WorkerResult
from diagnose.runtime.runner import call as runtime_call


def call(
    entry: str,
    payload: dict,
    python: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interpret: bool = False,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    env: dict[str, str] | None = None,
    user_code: bool = True,
) -> WorkerResult:
    """Run `entry` ("module:function") on `payload` in a fresh worker of the interpreter `python`
    (`user_code`: as in `diagnose.runtime.runner.call`)."""
    if not Path(python).exists():
        return WorkerResult(False, failure=Failure("load_error", f"cannot start {python}: no such interpreter"))
    return runtime_call(
        entry,
        payload,
        timeout_s=timeout_s,
        interpret=interpret,
        memory_limit=memory_limit,
        env=env,
        python=python,
        user_code=user_code,
    )
