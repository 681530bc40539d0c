"""Recording the Triton launches of a running program, and the host calls that made them.

Installed in the user's own process (`diagnose capture -- COMMAND` arranges that through
`sitecustomize`), it watches function calls with Python's own trace hook (`sys.settrace`, and
`threading.settrace` for new threads), which sees every Python frame as it starts and costs one small
callback per call; Triton itself is never patched:

- a frame of `JITFunction.run` or of the interpreter's `InterpretedFunction.run` (or of the CPU
  stand-in's `InterpretedJITFunction.run` around it, the one recorded then) is a launch: its
  locals hold the kernel, the arguments, the constexprs and options, and the grid. Launches made by
  the autotuner while it benchmarks configs are not recorded (the launch with the chosen config is).
  A launch forwarded by a wrapper's `run` (`Autotuner`, `Heuristics`, a project's own `KernelInterface`
  such as FlagGems' `LibEntry`) is recorded as a launch of that wrapper, as the module wrote it.
- a frame of a function defined in a file that mentions `triton` (and is not Triton, torch or the
  standard library) may be a host call: the specs of its arguments are taken as it starts, before its
  body reassigns them (`X = X.view(-1, n)`), and kept under the frame's id.

Backward passes are made to run on the thread that calls them (`backward_on_this_thread`): autograd's
own device threads are not Python's, so no trace hook would see the launches made there.

For each launch the record names the kernel, the launch as a spec (`kernel[grid](...)`), the line that
launched it, and the host call to replay: the outermost call in the launching file that can be called
again on its own — a module-level function, `Cls.apply` for the `forward` of a
`torch.autograd.Function`, a static method — whose arguments all have specs. A launch with no such
call (from `backward(ctx, ...)`, a method of an object, a nested function) is replayed at the kernel
itself. Records are deduplicated by their text and counted; each new one is appended at once as a JSON
line to `<out>/capture-<pid>.jsonl` (a crash keeps what was seen), counts at exit.
"""

from __future__ import annotations

import atexit
import inspect
import json
import os
import sys
import sysconfig
import threading
import weakref
from pathlib import Path
from typing import Any, Callable

from diagnose.capture.describe import describe_call
from diagnose.capture.written import written_only
from diagnose.task.replay import decided_by
from diagnose.task.specs import CallSpec, Opaque

IGNORE, HOST, LAUNCH = 0, 1, 2
LIBRARIES = (
    "triton",
    "torch",
    "numpy",
    "_pytest",
    "pytest",
    "pluggy",
    "diagnose",
    "typing_extensions",
    "importlib",
    "functools",
    "contextlib",
)
CO_VARARGS, CO_VARKEYWORDS = 0x04, 0x08


def backward_on_this_thread() -> bool:
    """Have autograd run backward passes on the thread that asks for them (torch's own switch,
    thread-local; `torch.autograd.set_multithreading_enabled`), once torch is imported: on a GPU the
    engine otherwise runs them on its device threads, which no trace hook reaches (`threading.settrace`
    covers Python's threads only), and every launch of a backward kernel would be missed. The results
    are the same; only which thread computes them changes. True once set."""
    torch = sys.modules.get("torch")
    switch = getattr(getattr(torch, "autograd", None), "set_multithreading_enabled", None)
    if switch is None:  # torch not imported (or still importing) yet: a later host call sets it
        return False
    switch(False)
    return True


def _stdlib_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({str(Path(paths[k]).resolve()) + os.sep for k in ("stdlib", "platstdlib") if k in paths})


class Tracer:
    """The trace hook and what it has seen; `sink(record)` receives each new record."""

    def __init__(self, sink: Callable[[dict], None]):
        self.sink = sink
        self.kinds: dict[Any, int] = {}
        self.files: dict[str, bool] = {}
        self.projects: dict[str, bool] = {}
        self.entries: dict[int, tuple[Any, list, Any]] = {}  # frame id -> (code, arguments, frame)
        self.counts: dict[str, int] = {}
        self.records: dict[str, dict] = {}
        self.stdlib = _stdlib_roots()
        self.lock = threading.Lock()
        self.busy = threading.local()

    def install(self) -> None:
        sys.settrace(self.on_call)
        threading.settrace(self.on_call)

    def uninstall(self) -> None:
        sys.settrace(None)
        threading.settrace(None)

    # --- the hook -------------------------------------------------------------------------------

    def on_call(self, frame, event, arg):
        if event != "call" or getattr(self.busy, "on", False):
            return None
        code = frame.f_code
        kind = self.kinds.get(code)
        if kind is None:
            kind = self.kinds[code] = self.classify(code)
        if kind == IGNORE:
            return None
        self.busy.on = True
        try:
            if kind == LAUNCH:
                self.launch(frame)
            else:
                self.enter(frame, code)
        except Exception:  # noqa: BLE001 - a capture must never break the program it watches
            pass
        finally:
            self.busy.on = False
        return None

    def classify(self, code) -> int:
        file = code.co_filename
        if code.co_name == "run" and file.replace(os.sep, "/").endswith(
            ("triton/runtime/jit.py", "triton/runtime/interpreter.py", "diagnose/runtime/interpreted_jit.py")
        ):
            return LAUNCH
        if code.co_name.startswith("<") or file.startswith("<"):
            return IGNORE
        return HOST if self.user_file(file) else IGNORE

    def top_level_site(self, code) -> bool:
        """A launch written at a script's top level or in a lambda (`do_bench(lambda: k[grid](...))`), as
        tutorials and benchmark files have them: a site with no host call, replayed at the kernel."""
        return (
            code.co_name in ("<module>", "<lambda>")
            and not code.co_filename.startswith("<")
            and self.user_file(code.co_filename)
        )

    def user_file(self, file: str) -> bool:
        known = self.files.get(file)
        if known is None:
            known = self.files[file] = self._is_user_file(file)
        return known

    def project_file(self, file: str) -> bool:
        """Not the standard library, Triton, torch, pytest or this package: the user's own code."""
        known = self.projects.get(file)
        if known is None and file.startswith("<"):  # <frozen runpy>, <string>, <stdin>
            known = self.projects[file] = False
        if known is None:
            try:
                resolved = str(Path(file).resolve())
            except OSError:
                resolved = ""
            stdlib = resolved.startswith(self.stdlib) and "site-packages" not in resolved
            library = any(p in LIBRARIES for p in Path(resolved).parts[-4:-1])
            known = self.projects[file] = bool(resolved) and not stdlib and not library
        return known

    def _is_user_file(self, file: str) -> bool:
        if not self.project_file(file):
            return False
        try:
            return "triton" in Path(file).read_text(errors="replace")
        except OSError:
            return False

    # --- host calls ------------------------------------------------------------------------------

    def enter(self, frame, code) -> None:
        if not getattr(self.busy, "backward_here", False):
            self.busy.backward_here = backward_on_this_thread()
        names = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
        if code.co_flags & CO_VARARGS:
            names.append(code.co_varnames[len(names)])
        if code.co_flags & CO_VARKEYWORDS:
            names.append(code.co_varnames[len(names)])
        local = frame.f_locals
        # Weak references: holding a test's tensors past its calls would keep device memory alive.
        arguments = [(n, _weak(local.get(n))) for n in names]
        if len(self.entries) > 100_000:  # frames that ended long ago
            self.entries.clear()
        self.entries[id(frame)] = (code, arguments, frame.f_globals)

    # --- launches --------------------------------------------------------------------------------

    def launch(self, frame) -> None:
        local = frame.f_locals
        if local.get("warmup"):
            return
        below = frame.f_back
        if (
            below is not None
            and self.kinds.get(below.f_code) == LAUNCH
            and below.f_locals.get("self") is local.get("self")
        ):
            return  # the interpreter's own `run` under the stand-in's: one launch, recorded at the outer frame
        jit, args, kwargs, grid = (
            local.get("self"),
            tuple(local.get("args", ())),
            dict(local.get("kwargs", {})),
            local.get("grid"),
        )
        fn = getattr(jit, "fn", None)
        if fn is None or not hasattr(fn, "__code__"):
            return
        site, hosts, by = None, [], None
        outer = jit  # the wrapper the module launches
        f = frame.f_back
        while f is not None:
            code = f.f_code
            name = code.co_filename.replace(os.sep, "/")
            if name.endswith("triton/runtime/autotuner.py") and code.co_name == "_bench":
                return  # the autotuner trying a config: its final launch is recorded
            if site is None and code.co_name == "run" and _is_wrapper(f.f_locals.get("self"), jit):
                # An `Autotuner`, `Heuristics` or a project's own launcher (FlagGems' `LibEntry`, its
                # `LibTuner`) forwarding the launch: the module launches the wrapper, not the kernel.
                outer = f.f_locals["self"]
                f = f.f_back
                continue
            if site is None and (self.classify_frame(f) != IGNORE or self.top_level_site(code)):
                site = f
            entry = self.entries.get(id(f))
            if entry is not None and entry[0] is code:
                hosts.append((f, entry))
            if site is not None and code.co_filename != site.f_code.co_filename and self.project_file(code.co_filename):
                by = f"{_relative(code.co_filename)}:{f.f_lineno} {code.co_name}"  # the outermost wins
            f = f.f_back
        if site is None:
            return
        named = _kernel_arguments(jit, fn, args, kwargs)
        grid_value = _grid(grid, named)
        # A launch replayed at the kernel goes through the module's own wrapper (autotune, heuristics),
        # which sets its values itself: the launch spec leaves them out, and names the wrapper's global.
        decided = decided_by(outer) if outer is not jit else set()
        named = [(k, v) for k, v in named if k not in decided]
        target = (
            _global_name(site.f_globals, outer) or _global_name(getattr(fn, "__globals__", {}), outer) or fn.__name__
        )
        light = CallSpec(target, tuple(), tuple(describe_call(named, ranges=False)), grid_value)
        module_file = site.f_code.co_filename
        host = self.host_call(module_file, hosts, ranges=False)
        key = f"{module_file}\0{site.f_lineno}\0{light.text()}\0{host.text() if host else ''}"
        with self.lock:
            if key in self.counts:
                self.counts[key] += 1
                return
            self.counts[key] = 1
        launch_spec = CallSpec(target, tuple(), tuple(describe_call(named, unwritten=written_only(fn))), grid_value)
        host = self.host_call(module_file, hosts, ranges=True)
        record = {
            "key": key,
            "module_file": str(Path(module_file).resolve()),
            "line": site.f_lineno,
            "kernel": fn.__name__,
            "kernel_file": str(Path(fn.__code__.co_filename).resolve()),
            "kernel_line": fn.__code__.co_firstlineno,
            "launch": launch_spec.text(),
            "call": host.text() if host is not None else None,
            "host": site.f_code.co_name,
            "by": by,
        }
        self.records[key] = record
        self.sink(record)

    def classify_frame(self, f) -> int:
        kind = self.kinds.get(f.f_code)
        if kind is None:
            kind = self.kinds[f.f_code] = self.classify(f.f_code)
        return kind if kind == HOST else IGNORE

    def host_call(self, module_file: str, hosts: list, ranges: bool) -> CallSpec | None:
        """The outermost replayable call made in `module_file` (hosts are listed innermost first), a test
        function of the module's own (`def test_rms_layernorm(dim=1024, ...)` beside the kernel) only
        where no call below it is: a test builds its tensors inside, at its own sizes, where the
        function it tests takes them as arguments that a task can draw, at sizes a CPU can run."""
        own = [host for _, host in reversed(hosts) if host[0].co_filename == module_file]
        for code, arguments, namespace in sorted(own, key=lambda host: _is_test(host[0])):
            call = _replayable(code, arguments, namespace, ranges)
            if call is not None:
                return call
        return None

    def counted(self) -> list[dict]:
        return [{"key": key, "count": n} for key, n in self.counts.items() if n > 1]


def _is_wrapper(obj: Any, jit: Any) -> bool:
    """`obj` is a launcher around `jit`: a `KernelInterface` whose `fn` chain reaches it."""
    from triton.runtime.jit import KernelInterface  # deferred: triton is heavy

    if obj is jit or not isinstance(obj, KernelInterface):
        return False
    seen = 0
    while obj is not None and seen < 8:
        obj, seen = getattr(obj, "fn", None), seen + 1
        if obj is jit:
            return True
    return False


def _global_name(namespace: dict, obj: Any) -> str | None:
    """The module-level name bound to `obj` (`_KERNEL` for a kernel a factory made), if any."""
    return next((name for name, value in list(namespace.items()) if value is obj and not name.startswith("__")), None)


def _relative(file: str) -> str:
    try:
        return str(Path(file).resolve().relative_to(Path.cwd()))
    except ValueError:
        return file


def _kernel_arguments(jit, fn, args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    """The launch's arguments by parameter name (defaults filled), then its launch options."""
    try:
        signature = inspect.signature(fn)
        params = [p for p in signature.parameters]
        bound = signature.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in params})
        bound.apply_defaults()
        named = list(bound.arguments.items())
    except TypeError:
        params = list(getattr(jit, "arg_names", []))
        named = list(zip(params, args)) + [(k, v) for k, v in kwargs.items() if k in params]
    options = [(k, v) for k, v in kwargs.items() if k not in params]
    return named + options


def _grid(grid: Any, named: list[tuple[str, Any]]) -> tuple[int, ...]:
    if callable(grid):
        grid = grid(dict(named))
    if isinstance(grid, int):
        grid = (grid,)
    return tuple(int(g) for g in grid)


class _Gone(Exception):
    pass


def _weak(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        items = [_weak(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if type(value).__module__.startswith("torch") and hasattr(value, "data_ptr"):
        return weakref.ref(value)
    return value


def _strong(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        items = [_strong(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, weakref.ref):
        alive = value()
        if alive is None:
            raise _Gone
        return alive
    return value


def _is_test(code) -> bool:
    """A module-level function named `test...`: a test, not the module's own API."""
    return code.co_name.startswith("test") and getattr(code, "co_qualname", code.co_name) == code.co_name


def _replayable(code, arguments: list, namespace: dict, ranges: bool) -> CallSpec | None:
    """The call of `code` with these arguments, as something the module can call again, or None."""
    try:
        arguments = [(name, _strong(value)) for name, value in arguments]
    except _Gone:  # an argument was freed before the launch: nothing to describe it from
        return None
    qualname = getattr(code, "co_qualname", code.co_name)
    if "<locals>" in qualname or "<" in qualname:
        return None
    parts = qualname.split(".")
    if len(parts) == 1:
        target = parts[0]
        if not callable(namespace.get(target)):
            return None
    elif len(parts) == 2:
        owner = namespace.get(parts[0])
        if not isinstance(owner, type):
            return None
        method = owner.__dict__.get(parts[1])
        if _is_autograd(owner) and parts[1] == "forward":
            target, arguments = f"{parts[0]}.apply", arguments[1:]  # without ctx
        elif isinstance(method, staticmethod):
            target = qualname
        else:
            return None  # a method of an instance: the instance cannot be rebuilt from specs
    else:
        return None
    described = describe_call(arguments, ranges=ranges)
    if any(isinstance(v, Opaque) for _, v in described):
        return None
    return CallSpec(target, (), tuple(described))


def _is_autograd(owner: type) -> bool:
    return any(
        base.__name__ == "Function" and base.__module__.startswith("torch.autograd") for base in owner.__mro__[1:]
    )


def jsonl_sink(folder: Path) -> Callable[[dict], None]:
    """A sink appending each record to `folder/capture-<pid>.jsonl` (the pid read at each write, so
    that a forked child writes its own file)."""

    def write(record: dict) -> None:
        path = folder / f"capture-{os.getpid()}.jsonl"
        with open(path, "a") as handle:
            handle.write(json.dumps(record) + "\n")

    return write


def install_from_environment() -> Tracer | None:
    """Start capturing when `DIAGNOSE_CAPTURE_DIR` names the folder to write to (the bootstrap's call)."""
    folder = os.environ.get("DIAGNOSE_CAPTURE_DIR")
    if not folder:
        return None
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    sink = jsonl_sink(out)
    tracer = Tracer(sink)

    def flush_counts() -> None:
        for counted in tracer.counted():
            sink({"count_of": counted["key"], "count": counted["count"]})

    atexit.register(flush_counts)
    tracer.install()
    return tracer
