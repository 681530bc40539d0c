"""Running user code in worker subprocesses: timeouts, crash isolation, devices, the interpreter on CPU."""

from diagnose.runtime.runner import WorkerResult, call

__all__ = ["WorkerResult", "call"]
