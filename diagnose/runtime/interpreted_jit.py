"""Interpreted kernels with the shape of compiled ones, for the project code that reads that shape.

Under `TRITON_INTERPRET=1`, Triton 3.6's `triton.jit` returns an `InterpretedFunction`: it launches the
kernel but is not a `JITFunction` and has none of its attributes (`params`, `signature`, `constexprs`,
`device_caches`, `src`, `cache_key`), and its `run` returns nothing where a compiled kernel's returns
the `CompiledKernel` it launched. Launchers that projects write around their kernels read both:
FlagGems' `LibEntry` unwraps `autotune`/`heuristics` objects through `.fn` until it meets a
`JITFunction` (Triton's own `Autotuner.check_disk_cache` does the same), reads `params` and
`signature`, and caches what `run` returned to launch it again as `kernel[grid](*args)`. With the
interpreter's kernels the unwrapping runs past the kernel onto the plain Python function
(`'function' object has no attribute 'fn'`), so no such module even imports.

`install()` makes the interpreter's kernels `InterpretedJITFunction`s: `InterpretedFunction`s that are
also `JITFunction`s (built by `JITFunction.__init__`, so every attribute is Triton's own), whose `run`
launches in the interpreter as before and returns an `InterpretedKernel`, which launches again in the
interpreter when indexed with a grid and called with the kernel's runtime arguments, as a compiled
kernel is; a grid given as a list (or made by a callable as one) launches, as compiled Triton
takes it. Called as a device function, one gets a dtype argument as a `tl.constexpr`, as compiled
device code does; its `and`/`or`/`not` on tensors are elementwise, as compiled code's are
(`interpreter_semantics.py`). `triton.jit` looks the interpreter's class up when it decorates, so this takes effect for
every kernel defined afterwards. Interpreter processes only (`cpu_standin.install`).
"""

from __future__ import annotations

import functools
import inspect
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from triton.runtime import interpreter
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

from diagnose.knobs import Knobs
from diagnose.runtime.interpreter_semantics import CompiledSemanticsRewriter

# Options `triton.jit` passes to the interpreter's class; `JITFunction.__init__` takes the same ones.
JIT_OPTIONS = (
    "version",
    "do_not_specialize",
    "do_not_specialize_on_alignment",
    "debug",
    "noinline",
    "repr",
    "launch_metadata",
)


@dataclass(frozen=True, eq=False)  # a kernel is itself, as a compiled one is (and its constants are a dict)
class InterpretedKernel:
    """What an interpreted launch returns in place of a `CompiledKernel`: `kernel[grid](*args)` launches
    the same kernel again with the constexpr values of the launch that made it. `args` are the
    kernel's runtime (non-constexpr) arguments in order, as Triton 3.6's compiled kernels take them,
    or every parameter in order, as Triton 3.3 to 3.5's did."""

    function: "InterpretedJITFunction"
    constants: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.function.__name__

    def __getitem__(self, grid) -> Callable[..., None]:
        def launch(*args, stream=None):
            params = self.function.params
            runtime = [p.name for p in params if not p.is_constexpr]
            names = [p.name for p in params] if len(args) > len(runtime) else runtime
            self.function.run(grid=grid, warmup=False, **{**self.constants, **dict(zip(names, args))})

        return launch


# The interpreter's own launch, as Triton defines it: `InterpretedJITFunction.run` calls it directly, so a
# launch is one call of a `run` in Triton's interpreter module (what a capture's tracer looks for), and
# a wrapper that counts launches on both classes (diagnose/verify/instrument.py) counts it once.
# Triton 3.2 (what triton-ascend ships) launches through `__getitem__` and has no `run`: left as it is.
_launch = vars(InterpretedFunction).get("run")


def has_source(fn) -> bool:
    try:
        inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return False
    return True


class InterpretedJITFunction(InterpretedFunction, JITFunction):
    """A kernel the interpreter runs that is also a `JITFunction`: its attributes are `JITFunction`'s
    own, its launches (`run`, `kernel[grid](...)`, a device-function call) the interpreter's.

    A function without source (made by `exec`, or typed at `python -c`) cannot be a `JITFunction`, which
    reads its source when made; it stays the interpreter's plain kernel, as it was (no GPU would compile
    it either, so no launcher written for one expects more)."""

    def __new__(cls, fn, **kwargs):
        if not has_source(fn):
            return InterpretedFunction(fn, **kwargs)
        return super().__new__(cls)

    def __init__(self, fn, **kwargs) -> None:
        JITFunction.__init__(self, fn, **{k: v for k, v in kwargs.items() if k in JIT_OPTIONS})
        InterpretedFunction.__init__(self, fn, **kwargs)
        self.rewriter = CompiledSemanticsRewriter(fn, **kwargs)

    # `JITCallable.__init__` assigns `__name__`; the interpreter's class reads it from the function. Both
    # are the function's name, so the assignment keeps nothing.
    @property
    def __name__(self) -> str:
        return self.fn.__name__

    @__name__.setter
    def __name__(self, value: str) -> None:
        pass

    # A compiled kernel hashes by its compile cache key (its source and every global it reads, found by
    # walking its code); the interpreter compiles nothing, so a kernel is itself.
    __hash__ = object.__hash__

    def __call__(self, *args, **kwargs):
        """A device-function call. The compiler hands a device function every argument that is not a
        tensor as a `tl.constexpr`, so device code reads a dtype argument's `.value` (FlagGems'
        `get_dtype_min(dtype)`: `dtype.value.is_floating()`); the interpreter passes the bare
        `tl.dtype`. Dtypes are passed as the compiler passes them (other values stay as they were:
        the interpreter's own arithmetic on them is what kernels rely on)."""
        return InterpretedFunction.__call__(
            self, *map(_as_compiled, args), **{k: _as_compiled(v) for k, v in kwargs.items()}
        )

    def run(self, *args, grid, warmup, **kwargs):
        """Launch in the interpreter, unless the launch is larger than `DIAGNOSE_INTERPRET_MAX_ELEMENTS`
        allows (`diagnose.knobs`): a capture's tracer sees this frame as the launch and records it
        either way (`diagnose/capture/tracer.py`)."""
        limit = Knobs.read().interpret_max_elements
        if limit is None or _elements((*args, *kwargs.values())) <= limit:
            with _builtin_aliases(self.fn):
                _launch(self, *args, grid=_tuple_grid(grid), warmup=warmup, **kwargs)
        return InterpretedKernel(self, self._constants(args, kwargs))

    def _constants(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """The constexpr parameters' values in a launch (given, from a config, or defaults)."""
        bound = self.signature.bind_partial(
            *args, **{k: v for k, v in kwargs.items() if k in self.signature.parameters}
        )
        bound.apply_defaults()
        values = bound.arguments
        return {
            p.name: values[p.name]
            for p in self.params
            if p.is_constexpr and p.name in values and values[p.name] is not inspect.Parameter.empty
        }


@contextmanager
def _builtin_aliases(fn):
    """During a launch, a module global bound to a `triton.language` builtin under a name of its own
    (unsloth's `triton_cast = tl.cast`, called in its cross-entropy kernel) calls the interpreter's
    version: the interpreter patches each builtin where `tl` keeps it (`_patch_lang`), not its aliases,
    and an alias called in a kernel failed with "Did you forget to add @triton.jit ?". Restored after."""
    import triton.language as tl  # deferred: triton is heavy
    from triton.language.semantic import TritonSemantic  # deferred: as above

    namespace = getattr(fn, "__globals__", {})
    aliases = {
        name: value
        for name, value in namespace.items()
        if tl.core.is_builtin(value)
        and getattr(tl, name, None) is not value
        and getattr(tl.math, name, None) is not value
    }
    semantic = TritonSemantic(interpreter.interpreter_builder)
    for name, builtin in aliases.items():
        namespace[name] = functools.partial(_with_semantic, builtin, semantic)
    try:
        yield
    finally:
        namespace.update(aliases)


def _with_semantic(builtin, semantic, *args, **kwargs):
    return builtin(*args, **{k: v for k, v in kwargs.items() if k != "_semantic"}, _semantic=semantic)


def _elements(values) -> int:
    """Tensor elements among a launch's arguments."""
    return sum(v.numel() for v in values if hasattr(v, "numel") and hasattr(v, "data_ptr"))


def _tuple_grid(grid):
    """A grid as the interpreter takes it: a tuple. Compiled Triton indexes the grid, so a list (or a
    callable returning one: the tutorials' `lambda meta: [triton.cdiv(N, meta['BLOCK_SIZE_N'])]`)
    launches there; the interpreter extends it with `+ (1,) * k` and fails."""
    if callable(grid):
        return lambda meta: tuple(grid(meta))
    return tuple(grid) if isinstance(grid, list) else grid


def _as_compiled(value):
    import triton.language as tl  # deferred: triton is heavy

    return tl.constexpr(value) if isinstance(value, tl.dtype) else value


def install() -> None:
    """From now on, `triton.jit` under the interpreter makes `InterpretedJITFunction`s (nothing to do
    where the interpreter's kernels already are `JITFunction`s)."""
    if _launch is None or issubclass(interpreter.InterpretedFunction, JITFunction):
        return
    interpreter.InterpretedFunction = InterpretedJITFunction
