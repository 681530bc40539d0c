"""Started by Python in every process of a `diagnose capture -- COMMAND` run (this folder is put first on
`PYTHONPATH`): installs the CPU stand-in where asked (`interpreter` and `record` modes), in `record`
mode the hook that skips every compile, then the launch tracer, then runs the `sitecustomize` this one
shadows, if there is one."""

import importlib.machinery
import importlib.util
import os
import sys


def _start() -> None:
    if not os.environ.get("DIAGNOSE_CAPTURE_DIR"):
        return
    mode = os.environ.get("DIAGNOSE_CAPTURE_MODE", "gpu")
    if mode in ("interpreter", "record"):
        # deferred: only when capturing, inside the try at the end (a failed import must not stop the command)
        from diagnose.runtime import cpu_standin

        cpu_standin.install(os.environ.get("DIAGNOSE_CAPTURE_TARGET", "cuda:sm90"), interpreter=mode == "interpreter")
    if mode == "record":
        from triton import knobs  # deferred: triton is heavy; record mode only

        # Triton's own seam: a jit_cache_hook that answers True makes JITFunction.run return None
        # before compiling, so nothing is compiled or launched; the tracer saw the launch on entry.
        knobs.runtime.jit_cache_hook = _skip_compile
    from diagnose.capture.tracer import install_from_environment  # deferred: as cpu_standin above

    install_from_environment()


def _skip_compile(*args, **kwargs) -> bool:
    return True


def _chain() -> None:
    """The user's own sitecustomize, found on the rest of the path."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None and spec.origin != os.path.abspath(__file__):
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


try:
    _start()
except Exception as exc:  # noqa: BLE001 - the user's command must run even if the capture cannot start
    sys.stderr.write(f"diagnose capture: not capturing in this process: {type(exc).__name__}: {exc}\n")
_chain()
