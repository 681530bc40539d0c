"""Replaying a call of a kernel module: the `Model`/`ModelNew` of a generated task (worker side).

A kernel module becomes a task by a generated section appended to its source
(`diagnose/task/harness.py`); that section builds a `Harness` from the module's globals and the calls
to replay, one per input group, written as call specs. The harness gives the task format's names:

- `get_input_groups()`: per group, a function drawing that call's tensors at random (the harness seeds
  torch before calling it). The inputs are the *storages*: one flat tensor per distinct storage, so
  that views, strides, offsets and arguments sharing a buffer are replayed as they were captured;
  then a one-element tensor holding the group's index, read only where two groups' storages have the
  same sizes.
- `Model` / `ModelNew`: `forward(*storages)` rebuilds the arguments (views of the storages, the
  scalars of the spec) and calls the target: a host function, `Cls.apply` of an autograd function, a
  static method, or a kernel launch `kernel[grid](...)`. Both call the target of the module they were
  defined in: in the reference file that is the original code, in a candidate file the rewritten one.
  With a PyTorch reference (`reference`), `Model` calls that function instead.
- The outputs are the tensors the call returns (NumPy arrays included; numbers and other values
  dropped, as block sizes handed back for a backward pass are not results, except from a call with no
  tensor of ours, a project's `test_x()`, whose return value is its result, or, when it returns
  nothing, `True` for having run to its end past its own assertions), then every storage the call
  wrote. Which storages a call writes is decided on a model's first call (compared with copies taken
  before it) and kept, so timed calls pay nothing for it; a kernel that stops writing an output gives
  fewer outputs and fails.
- `get_inputs()`: uninitialised storages of the largest call, for what needs only shapes (IR capture).

Imports only torch and this package's spec reader: it runs inside the user's process.
"""

from __future__ import annotations

import gc
import importlib.util
import inspect
import math
import random
import warnings
from pathlib import Path
from typing import Any, Callable

from diagnose.task.callspec import parse_call
from diagnose.task.specs import DTYPES, CallSpec, DtypeValue, Opaque, Same, TensorSpec, Value

DEFAULT_INT_RANGE = (0, 16)
# The generator seed before each call that draws its own inputs (no tensor argument to replay).
NO_TENSOR_SEED = 20261205


class Layout:
    """How a call's arguments map onto storages: which spec owns a storage, which share one."""

    def __init__(self, call: CallSpec):
        self.call = call
        self.owners: list[tuple[str, TensorSpec]] = []  # (argument path, spec) of each storage, in order
        self.index: dict[str, int] = {}  # argument path -> storage index
        named = dict(call.kwargs)
        for path, value in _walk(call):
            if isinstance(value, TensorSpec) and not value.base:
                self.index[path] = len(self.owners)
                self.owners.append((path, value))
        for path, value in _walk(call):
            if isinstance(value, TensorSpec) and value.base:
                if value.base not in self.index or not isinstance(named.get(value.base), TensorSpec):
                    raise ValueError(f"{call.target}: {path} names base={value.base}, not a tensor argument")
                self.index[path] = self.index[value.base]
        self.sizes = [0] * len(self.owners)
        for path, value in _walk(call):
            if isinstance(value, TensorSpec):
                i = self.index[path]
                self.sizes[i] = max(self.sizes[i], value.storage_elements)

    def draw(self) -> list:
        """Fresh random storages (the caller seeds torch first)."""
        return [_random(spec, size) for (_, spec), size in zip(self.owners, self.sizes)]

    def empty(self) -> list:
        import torch  # deferred: torch is heavy

        return [torch.empty(size, dtype=_torch_dtype(spec.dtype)) for (_, spec), size in zip(self.owners, self.sizes)]

    def arguments(self, storages: list) -> tuple[list, dict]:
        """The call's positional and keyword arguments, tensors as views of `storages`."""
        built: dict[str, Any] = {}

        def build(path: str, value: Value):
            if isinstance(value, TensorSpec):
                base = storages[self.index[path]]
                if base.dtype != _torch_dtype(value.dtype):
                    base = base.view(_torch_dtype(value.dtype))
                return base.as_strided(value.shape, value.strides, value.offset)
            if isinstance(value, Same):
                if value.name not in built:
                    raise ValueError(f"{self.call.target}: same({value.name}) names no earlier argument")
                return built[value.name]
            if isinstance(value, DtypeValue):
                return _dtype_value(value.name)
            if isinstance(value, Opaque):
                raise ValueError(f"{self.call.target}: argument {path} is {value.text()}, which cannot be replayed")
            if isinstance(value, (list, tuple)):
                items = [build(f"{path}.{i}", v) for i, v in enumerate(value)]
                return items if isinstance(value, list) else tuple(items)
            return value

        args = []
        for i, value in enumerate(self.call.args):
            args.append(build(str(i), value))
            built[str(i)] = args[-1]
        kwargs = {}
        for name, value in self.call.kwargs:
            kwargs[name] = build(name, value)
            built[name] = kwargs[name]
        return args, kwargs


def _walk(call: CallSpec):
    def walk(path: str, value: Value):
        yield path, value
        if isinstance(value, (list, tuple)) and not isinstance(value, str):
            for i, item in enumerate(value):
                yield from walk(f"{path}.{i}", item)

    for i, value in enumerate(call.args):
        yield from walk(str(i), value)
    for name, value in call.kwargs:
        yield from walk(name, value)


def _torch_dtype(short: str):
    import torch  # deferred: torch is heavy

    return getattr(torch, DTYPES[short])


def _dtype_value(name: str):
    module, _, attr = name.partition(".")
    if module == "torch":
        import torch  # deferred: torch is heavy

        return getattr(torch, attr)
    import triton.language as tl  # deferred: triton is heavy

    return getattr(tl, attr)


def _random(spec: TensorSpec, size: int):
    import torch  # deferred: torch is heavy

    dtype = _torch_dtype(spec.dtype)
    if spec.dtype == "b8":
        return torch.rand(size) < 0.5
    if spec.values:
        pool = torch.tensor(list(spec.values), dtype=torch.float64 if spec.is_float else torch.int64)
        picked = pool[torch.randint(len(pool), (size,))]
        if spec.low is None:
            return picked.to(dtype)
        # A range with values beside it: the range, about one element in eight a sentinel value.
        drawn = torch.randint(int(spec.low), max(int(spec.high), int(spec.low) + 1), (size,), dtype=torch.int64)
        return torch.where(torch.rand(size) < 0.125, picked.to(torch.int64), drawn).to(dtype)
    if spec.is_float or spec.dtype.startswith("c"):
        if spec.low is not None and spec.high is not None:
            return (torch.rand(size, dtype=torch.float32) * (spec.high - spec.low) + spec.low).to(dtype)
        if spec.dtype.startswith("c"):
            return torch.randn(size, dtype=dtype)
        return torch.randn(size, dtype=torch.float32).to(dtype)
    low, high = (int(spec.low), int(spec.high)) if spec.low is not None else DEFAULT_INT_RANGE
    return torch.randint(low, max(high, low + 1), (size,), dtype=torch.int64).to(dtype)


def resolve(namespace: dict, target: str) -> Callable:
    """The object `target` names in a module's globals (`fn`, `Cls.apply`, `Cls.method`, `kernel`)."""
    head, *rest = target.split(".")
    if head not in namespace:
        raise NameError(f"{target}: the module defines no {head!r}")
    obj = namespace[head]
    for attr in rest:
        obj = getattr(obj, attr)
    return obj


def invoke(fn: Callable, call: CallSpec, args: list, kwargs: dict):
    """Call `fn` as the spec says: launch a kernel on its grid, or call a function (`Cls.apply` of an
    autograd function takes its arguments in `forward`'s order, positionally)."""
    if call.grid is not None:
        from triton.runtime.jit import KernelInterface  # deferred: triton is heavy

        if not isinstance(fn, KernelInterface):
            raise TypeError(
                f"{call.target} is a {type(fn).__name__}, not a Triton kernel: it is launched through "
                f"code of its own (capture a launch of it)"
            )
        # A guessed launch may pass what the kernel's autotuner or heuristics set (Triton refuses a
        # conflicting meta-parameter): the wrappers decide those.
        decided = decided_by(fn)
        kwargs = {k: v for k, v in kwargs.items() if k not in decided}
        # Positionally, in the kernel's order, as launches are written: an autotuner hands only the
        # positional arguments to its `early_config_prune` and `perf_model` (FlagGems' read them there).
        names = list(getattr(fn, "arg_names", ()))
        args = list(args)
        for name in names[len(args) :]:
            if name not in kwargs:
                break
            args.append(kwargs.pop(name))
        return fn[call.grid](*args, **kwargs)
    owner = getattr(fn, "__self__", None)
    if kwargs and getattr(fn, "__name__", "") == "apply" and isinstance(owner, type) and hasattr(owner, "forward"):
        params = list(inspect.signature(owner.forward).parameters.values())[1:]  # without ctx
        bound = inspect.Signature(params).bind(*args, **kwargs)
        bound.apply_defaults()
        return fn(*bound.args)
    return fn(*args, **kwargs)


def decided_by(kernel: Any) -> set[str]:
    """The launch values the wrappers of `kernel` set: its autotuner's config keys and options, its
    heuristics' names (through a project's own launcher, such as FlagGems' `LibEntry`)."""
    found: set[str] = set()
    for _ in range(8):
        if hasattr(kernel, "configs"):
            found |= {k for config in kernel.configs for k in config.all_kwargs()}
            found |= {"num_warps", "num_stages", "num_ctas", "maxnreg"}
        found |= set(getattr(kernel, "values", None) or {})
        kernel = getattr(kernel, "fn", None)
        if kernel is None:
            break
    return found


def tensors_of(value: Any, numbers: bool = False) -> list:
    """The tensors of a call's result, in order; a NumPy array is one (`out.cpu().numpy()`, as
    TritonBench's tests return them). Numbers are results only with `numbers` (a test's own return value,
    not block sizes handed back for a backward pass); strings and None never are."""
    import torch  # deferred: torch is heavy

    if isinstance(value, torch.Tensor):
        return [value]
    if type(value).__module__ == "numpy" and getattr(getattr(value, "dtype", None), "kind", None) in (
        "b",
        "i",
        "u",
        "f",
    ):
        # an array or a NumPy scalar of numbers (no numpy import here: torch reads either)
        return [torch.as_tensor(value)] if numbers or value.ndim else []
    if numbers and isinstance(value, (bool, int, float)):
        return [torch.tensor(value)]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in tensors_of(item, numbers)]
    if isinstance(value, dict):
        return [t for key in sorted(value, key=str) for t in tensors_of(value[key], numbers)]
    return []


def load_reference(spec: str) -> Callable:
    """`path.py:function` -> the function (imported from that file under a private name)."""
    path, _, name = spec.rpartition(":")
    file = Path(path)
    module_spec = importlib.util.spec_from_file_location(f"diagnose_reference_{file.stem}", file)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def user_kernels() -> list:
    """Every live Triton kernel object (`JITFunction`, or the interpreter's `InterpretedFunction`)
    defined outside the triton package."""
    from triton.runtime.jit import JITFunction, KernelInterface  # deferred: triton is heavy

    try:
        from triton.runtime.interpreter import InterpretedFunction  # deferred: triton is heavy
    except ImportError:  # pragma: no cover - older layouts
        InterpretedFunction = JITFunction
    found = []
    with warnings.catch_warnings():  # isinstance on every live object wakes deprecated module proxies
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():
            if isinstance(obj, (JITFunction, InterpretedFunction)) and isinstance(obj, KernelInterface):
                module = getattr(getattr(obj, "fn", None), "__module__", "") or ""
                if not module.startswith("triton"):
                    found.append(obj)
    return found


class recording:
    """Within: every user kernel's launch calls `record(kernel, args, kwargs)` and launches nothing
    (`kernel[grid](...)` calls the kernel's `run`, shadowed here by an instance attribute)."""

    def __init__(self, record: Callable):
        self.record, self.kernels = record, []

    def __enter__(self):
        self.kernels = user_kernels()
        for kernel in self.kernels:
            kernel.run = lambda *args, _k=kernel, grid=None, warmup=False, **kwargs: (
                None if warmup else self.record(_k, args, kwargs)
            )
        return self

    def __exit__(self, *exc):
        for kernel in self.kernels:
            kernel.__dict__.pop("run", None)
        return False


def _source(kernel) -> str:
    try:
        return inspect.getsource(kernel.fn)
    except (OSError, TypeError, AttributeError):
        return ""


def _dot_flops(tensors: list) -> float:
    """2·M·N·K of the first pair of matrices [.., M, K] x [.., K, N] with an output [.., M, N] among them."""
    mats = [t for t in tensors if t.dim() >= 2 and t.is_floating_point()]
    for a in mats:
        for b in mats:
            if a is b or a.shape[-1] != b.shape[-2]:
                continue
            m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
            if any(c is not a and c is not b and tuple(c.shape[-2:]) == (m, n) for c in mats):
                return 2.0 * math.prod(a.shape[:-2]) * m * n * k
    return 0.0


class Harness:
    """The task-format names of a kernel module, built from its globals and the calls to replay.

    `spec`: `{"groups": {name: call text}, "primary": group name, "reference": "path.py:fn" | None,
    "unseen": {label: call text}}`; the unseen calls are checked as unseen-shape cases, not as groups.
    """

    def __init__(self, namespace: dict, spec: dict):
        import torch  # deferred: torch is heavy

        self.namespace = namespace
        self.calls = {name: parse_call(text) for name, text in spec["groups"].items()}
        self.unseen = {label: parse_call(text) for label, text in (spec.get("unseen") or {}).items()}
        # one numbering for both: the call index that travels as the last input picks from all of them
        self.layouts = {name: Layout(call) for name, call in {**self.calls, **self.unseen}.items()}
        self.primary = spec.get("primary") or max(self.calls, key=lambda g: self.calls[g].nbytes)
        self.reference = spec.get("reference")
        harness = self

        class Replay(torch.nn.Module):
            """Calls the module's target on the storages of one of the harness's calls."""

            reference_function: Callable | None = None

            def __init__(self):
                super().__init__()
                self.written: dict[int, list[int]] = {}

            def target(self, call: CallSpec) -> Callable:
                return resolve(harness.namespace, call.target)

            def forward(self, *inputs):
                *storages, which = inputs
                layout = harness.layout_for(storages, which)
                args, kwargs = layout.arguments(list(storages))
                key = id(layout)
                first = key not in self.written
                before = [s.clone() for s in storages] if first else None
                if not layout.owners:
                    # A call with no tensor of ours (a project's `test_x()`) draws its own inputs: from the
                    # same generator state in the reference and in a candidate, or the original disagrees
                    # with itself (TritonBench-G's tests call torch.randn).
                    seed_global_generators(NO_TENSOR_SEED)
                # A test may check its backward pass (`loss.backward()`): the harness's forwards run
                # without autograd, a test function with it, as it runs in the project.
                with torch.set_grad_enabled(not layout.owners or torch.is_grad_enabled()):
                    result = invoke(self.target(layout.call), layout.call, args, kwargs)
                if first:
                    self.written[key] = [i for i, (b, s) in enumerate(zip(before, storages)) if not torch.equal(b, s)]
                    del before
                outputs = (
                    *(t.detach() for t in tensors_of(result, numbers=not layout.owners)),
                    *(storages[i] for i in self.written[key]),
                )
                if not outputs and not layout.owners:
                    # A test that checks itself (`assert_close` inside, nothing returned): its assertions
                    # are the comparison, and its output is that it ran to its end.
                    return (torch.ones((), dtype=torch.bool),)
                return outputs

        class ModelNew(Replay):
            pass

        class Model(Replay):
            # With no PyTorch reference, the reference is the module's own code (no eager baseline).
            replays_module = harness.reference is None

            def target(self, call: CallSpec) -> Callable:
                if harness.reference is None:
                    return super().target(call)
                if Model.reference_function is None:
                    Model.reference_function = load_reference(harness.reference)
                return Model.reference_function

        self.Model, self.ModelNew = Model, ModelNew

    def layout_for(self, storages: list, which) -> Layout:
        """The layout of the call these storages belong to: by their sizes, or, where two calls have
        storages of the same sizes, by the call index that travels as the last input (reading it
        waits for the device, so it is read only then)."""
        shapes = [tuple(s.shape) for s in storages]
        matches = [
            layout
            for layout in self.layouts.values()
            if len(layout.sizes) == len(shapes) and all(s == (n,) for s, n in zip(shapes, layout.sizes))
        ]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise ValueError("these inputs match none of the task's calls")
        index = int(which.reshape(-1)[0])
        return list(self.layouts.values())[index] if index >= 0 else matches[0]

    @property
    def roofline(self) -> dict:
        """`ROOFLINE` of the task format: the work of a call, counted without running a kernel (the
        reference is Triton code, which a CPU cannot run outside the interpreter): the reference's
        forward is made on copies of the inputs with every kernel recording its launch instead.
        Bytes: each distinct storage a launch reads or writes, once; FLOPs: 2·M·N·K for a launch whose
        kernel calls `tl.dot`, read off its operand shapes (0 where they do not show)."""
        cache: dict = {}

        def work(inputs: list) -> tuple[float, float]:
            which = inputs[-1]
            key = (tuple(tuple(t.shape) for t in inputs), None if which.device.type == "meta" else int(which[0]))
            if key not in cache:
                cache[key] = self.recorded_work(inputs)
            return cache[key]

        return {"bytes": lambda inputs: work(inputs)[0], "flops": lambda inputs: work(inputs)[1]}

    def recorded_work(self, inputs: list) -> tuple[float, float]:
        import torch  # deferred: torch is heavy

        *given, which = inputs
        # Copies of the drawn values (host code may check them: `assert target.max() < V`); on `meta`, where
        # there are none, uninitialised storages (a host check then fails, and the caller counts on CPU).
        storages = [torch.empty(tuple(t.shape), dtype=t.dtype) if t.device.type == "meta" else t.clone() for t in given]
        # the call index, as a value (a meta tensor has none: the storages' sizes tell the call then)
        index = torch.tensor([-1 if which.device.type == "meta" else int(which.reshape(-1)[0])])
        seen: dict[int, int] = {}
        flops = 0.0

        def record(kernel, args: tuple, kwargs: dict) -> None:
            nonlocal flops
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            for t in tensors:
                seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            if "tl.dot" in _source(kernel):
                flops += _dot_flops(tensors)

        with recording(record):
            self.Model()(*storages, index)
        return float(sum(seen.values())), flops

    def get_input_groups(self) -> dict:
        return {
            name: self._drawer(i, layout) for i, (name, layout) in enumerate(self.layouts.items()) if name in self.calls
        }

    def get_unseen_shape_groups(self) -> dict:
        """label -> inputs of each unseen call (`diagnose/task/shrink.py`), for `diagnose/verify/jobs.py`."""
        return {
            name: self._drawer(i, layout)
            for i, (name, layout) in enumerate(self.layouts.items())
            if name in self.unseen
        }

    @staticmethod
    def _drawer(index: int, layout: Layout) -> Callable[[], list]:
        import torch  # deferred: torch is heavy

        return lambda: [*layout.draw(), torch.tensor([index])]

    def get_inputs(self) -> list:
        import torch  # deferred: torch is heavy

        index = list(self.layouts).index(self.primary)
        return [*self.layouts[self.primary].empty(), torch.tensor([index])]

    @staticmethod
    def get_init_inputs() -> list:
        return []


def seed_global_generators(seed: int) -> None:
    """Every global generator a test function may draw its own inputs from, seeded alike wherever it
    runs: torch's, NumPy's (TritonBench-G's kldiv_triton draws with `np.random.rand`) and Python's."""
    import numpy  # deferred: heavy; torch brings it
    import torch  # deferred: torch is heavy

    torch.manual_seed(seed)
    numpy.random.seed(seed)
    random.seed(seed)
