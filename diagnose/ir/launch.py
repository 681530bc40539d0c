"""Example launches: where the arguments of an offline compile come from.

A compile reproduces what one real launch would compile, so it needs that launch's arguments. They
come from the user's file, in one of two ways (importing the file runs user code: call this inside a
worker process):

(a) A KernelBench task (`class Model`, `get_inputs()`, `get_init_inputs()`, `class ModelNew`):
    `ModelNew(*get_init_inputs())` is built and its `forward(*get_inputs())` is called on CPU tensors
    while every kernel the file defines has an instance attribute `run` that records the launch
    (kernel, args, kwargs, grid) and returns None instead of launching. `kernel[grid](...)` calls
    `self.run(...)`, so the outermost wrapper (`Autotuner`, `Heuristics` or `JITFunction`) is
    the one that records; its configs are expanded later.

(b) A plain file of `@triton.jit` kernels with an example spec: a module-level `DIAGNOSE_EXAMPLES`
    dict, or a function `diagnose_examples()` returning one (preferred: nothing is allocated at
    import). Keys are the names the file binds its kernels to; each value is one example or a list
    of them::

        def diagnose_examples():
            x = torch.empty(4096, dtype=torch.float32)          # CPU tensors: only dtype, shape,
            return {                                             # strides and alignment matter
                "add_kernel": dict(
                    args=[x, x, x, 4096],                        # positional kernel arguments
                    kwargs=dict(BLOCK=1024, num_warps=4),        # constexprs and launch options
                    grid=(4,),                                   # or lambda meta: (cdiv(...),)
                    label="aligned",                             # optional, names the example
                ),
            }

    `grid` may be omitted (launch-shape facts are then skipped) or be a callable taking the dict of
    named arguments and constexprs, as Triton's grid functions do. A view such as `x[1:]` keeps its
    real offset, so it loses the 16-byte alignment a fresh tensor has, exactly as on a GPU.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose.errors import UsageError
from diagnose.task import import_task_file
from diagnose.task.harness import header
from diagnose.task.kernel_module import GUESSED, PER_KERNEL

SPEC_NAMES = ("diagnose_examples", "DIAGNOSE_EXAMPLES")


@dataclass(frozen=True)
class Launch:
    """One launch of a kernel as the user's file makes it, before autotune configs are expanded.

    `fn` is the outermost wrapper (`Autotuner`, `Heuristics` or `JITFunction`); `kwargs` holds the
    constexprs and launch options given at the call; `grid` a tuple, a callable, or None. `error` says
    why a kernel module's replay made no launch of this kernel (`fn` is then None): that kernel is
    reported as failed and the module's other kernels are still compiled.
    """

    kernel: str
    fn: Any
    args: tuple
    kwargs: dict = field(default_factory=dict)
    grid: Any = None
    origin: str = ""
    label: str = ""
    error: str = ""

    @property
    def title(self) -> str:
        return self.kernel + (f" [{self.label}]" if self.label else "")


def load_module(path: str) -> Any:
    """Import the user's file as a module named after its stem, its folder first on `sys.path` (a kernel
    module's task file as its module, in its package: `diagnose.task.import_task_file`)."""
    file = Path(path).resolve()
    if not file.is_file():
        raise UsageError(f"no such file: {path}")
    if file.suffix != ".py":
        raise UsageError(f"not a Python file: {path}")
    if header(file.read_text(errors="replace")) is not None:
        return import_task_file(file)
    folder = str(file.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = file.stem if file.stem not in sys.modules else f"{file.stem}__diagnose"
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise UsageError(f"{path}:{e.lineno}: syntax error: {e.msg}") from e
    return module


def find_kernels(module: Any) -> dict[str, Any]:
    """Kernels bound by the user's module and by user modules it imported (same folder tree)."""
    from triton.runtime.jit import KernelInterface  # deferred: triton is heavy

    root = Path(module.__file__).resolve().parent
    task = header(Path(module.__file__).read_text(errors="replace"))
    if task is not None:  # a kernel module's task file: its kernels may live anywhere in its package
        root = task.root
    found: dict[str, Any] = {}
    user_modules = [module] + [
        m for m in list(sys.modules.values()) if m is not module and _is_under(getattr(m, "__file__", None), root)
    ]
    for mod in user_modules:
        for name, value in list(vars(mod).items()):
            if isinstance(value, KernelInterface) and name not in found:
                found[name] = value
    return found


def _is_under(file: str | None, root: Path) -> bool:
    if not file or "site-packages" in file:
        return False
    try:
        return Path(file).resolve().is_relative_to(root)
    except OSError:
        return False


def collect_launches(path: str, kernel: str | None = None) -> list[Launch]:
    """The example launches of the file at `path` (spec first, then a task's `ModelNew`)."""
    module = load_module(path)
    kernels = find_kernels(module)
    if not kernels:
        raise UsageError(f"{path}: no @triton.jit kernels found")
    if any(hasattr(module, name) for name in SPEC_NAMES):
        launches = launches_from_spec(module, kernels)
    elif per_kernel_groups(module):
        launches = per_kernel_launches(module, kernels)
    elif hasattr(module, "ModelNew") and hasattr(module, "get_inputs"):
        launches = capture_task_launches(module, kernels)
    else:
        raise UsageError(
            f"{path}: no example arguments: define diagnose_examples() or DIAGNOSE_EXAMPLES, "
            "or make it a task (ModelNew, get_inputs, get_init_inputs)"
        )
    if kernel is not None:
        launches = [launch for launch in launches if launch.kernel == kernel]
        if not launches:
            raise UsageError(f"{path}: no example launch of kernel {kernel!r}; kernels: {', '.join(kernels)}")
    if not launches:
        raise UsageError(f"{path}: the example launched no Triton kernel")
    return launches


def launches_from_spec(module: Any, kernels: dict[str, Any]) -> list[Launch]:
    spec = getattr(module, "diagnose_examples", None)
    spec = spec() if callable(spec) else module.DIAGNOSE_EXAMPLES
    if not isinstance(spec, dict):
        raise UsageError("DIAGNOSE_EXAMPLES must be a dict: kernel name -> dict(args=..., kwargs=..., grid=...)")
    launches = []
    for name, examples in spec.items():
        if name not in kernels:
            raise UsageError(f"DIAGNOSE_EXAMPLES names {name!r}, which is not a kernel; kernels: {', '.join(kernels)}")
        for i, example in enumerate(examples if isinstance(examples, (list, tuple)) else [examples]):
            if not isinstance(example, dict) or "args" not in example:
                raise UsageError(f"DIAGNOSE_EXAMPLES[{name!r}] entry {i} needs a dict with 'args'")
            unknown = set(example) - {"args", "kwargs", "grid", "label"}
            if unknown:
                raise UsageError(f"DIAGNOSE_EXAMPLES[{name!r}] entry {i}: unknown keys {sorted(unknown)}")
            launches.append(
                Launch(
                    kernel=name,
                    fn=kernels[name],
                    args=tuple(example["args"]),
                    kwargs=dict(example.get("kwargs", {})),
                    grid=example.get("grid"),
                    origin="DIAGNOSE_EXAMPLES",
                    label=str(example.get("label", "")),
                )
            )
    return launches


def capture_task_launches(module: Any, kernels: dict[str, Any]) -> list[Launch]:
    """Run `ModelNew(...).forward(*get_inputs())` with every kernel's `run` recording, not launching."""
    import torch  # deferred: torch is heavy

    launches: list[Launch] = []
    names = {id(fn): name for name, fn in kernels.items()}

    def recorder(fn: Any):
        def run(*args, grid=None, warmup=False, **kwargs):
            launches.append(Launch(names[id(fn)], fn, args, kwargs, grid, origin="ModelNew.forward"))

        return run

    patched = []
    try:
        for fn in kernels.values():
            fn.run = recorder(fn)  # an instance attribute shadows the class's run
            patched.append(fn)
        init_inputs = module.get_init_inputs() if hasattr(module, "get_init_inputs") else []
        with torch.no_grad():
            model = module.ModelNew(*init_inputs)
            try:
                model(*module.get_inputs())
            except Exception:
                # Outputs are never computed (nothing launches), so code after the launches may
                # fail on them; the launches recorded before that are what we need.
                if not launches:
                    raise
    finally:
        for fn in patched:
            del fn.run
    return launches


def per_kernel_groups(module: Any) -> list[str]:
    """A kernel module's inspection task (`diagnose.task.kernel_module.inspect_task`): its groups, one per
    kernel (`kernel_<name>`: a captured call; `guess_<name>`: a launch guessed from the source)."""
    harness = getattr(module, "_diagnose", None)
    groups = list(getattr(harness, "layouts", {}))
    return groups if groups and all(g.startswith((PER_KERNEL, GUESSED)) for g in groups) else []


def per_kernel_launches(module: Any, kernels: dict[str, Any]) -> list[Launch]:
    """Each group's call replayed on drawn inputs (host code may check values: a target index below
    the vocabulary size), its own kernel's launches kept. A group whose replay fails, or launches no
    kernel of that name, gives one `Launch` with an `error`: one kernel's failure is its own."""
    import torch  # deferred: torch is heavy

    harness = module._diagnose
    out: list[Launch] = []
    for index, group in enumerate(per_kernel_groups(module)):
        guessed = group.startswith(GUESSED)
        wanted = group.removeprefix(GUESSED if guessed else PER_KERNEL)
        origin = harness.calls[group].text()
        label = "guessed launch: shapes guessed from the source" if guessed else "captured launch"
        try:
            torch.manual_seed(index)
            inputs = [*harness.layouts[group].draw(), torch.tensor([index])]
            module.get_inputs = lambda inputs=inputs: inputs
            recorded = capture_task_launches(module, kernels)
        except Exception as e:  # the user's host code or a guess that does not fit the kernel
            out.append(Launch(wanted, None, (), origin=origin, label=label, error=replay_error(e)))
            continue
        mine = [
            dataclasses.replace(launch, origin=origin, label=label)
            for launch in recorded
            if wanted in (launch.kernel, getattr(unwrap(launch.fn), "__name__", launch.kernel))
        ]
        if not mine:
            names = sorted({launch.kernel for launch in recorded}) or ["nothing"]
            mine = [
                Launch(
                    wanted,
                    None,
                    (),
                    origin=origin,
                    label=label,
                    error=f"the replay launched {', '.join(names)}, not {wanted}",
                )
            ]
        out += mine
    return out


def replay_error(error: BaseException) -> str:
    """`Type: message (at file:line in function)`, the innermost frame of the user's code."""
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if "/diagnose/" not in f.filename and "site-packages" not in f.filename
    ]
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    first = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {first}{where}"


def unwrap(fn: Any) -> Any:
    """The Python function under Triton's wrappers (`Autotuner`, `Heuristics`, `JITFunction`)."""
    while hasattr(fn, "fn"):
        fn = fn.fn
    return fn


def named_arguments(jit: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Kernel parameters by name, defaults applied, as Triton's grid callables receive them."""
    bound = inspect.signature(jit.fn).bind_partial(*args, **{k: v for k, v in kwargs.items() if k in jit.arg_names})
    bound.apply_defaults()
    return {**kwargs, **bound.arguments}
