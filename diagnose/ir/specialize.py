"""Launch-time specialization, reproduced offline: what `JITFunction.run` would hand the compiler.

A real launch binds the arguments with a binder generated from the kernel's signature
(`create_function_from_signature`), which asks the backend how to specialize each value: tensors
whose `data_ptr() % 16 == 0` get `tt.divisibility = 16`, ints equal to 1 become constexprs, ints
divisible by 16 get `tt.divisibility`, ints of 2**31 and more become i64; HIP adds
`tt.pointer_range = 32` for tensors under 2 GB. `JITFunction._pack_args` then turns that into the
signature, constexprs and attributes of an `ASTSource`. We call the same two pieces with the target's
backend instead of the active driver's, so no GPU driver is needed and the hash is the JIT's.

Autotuned kernels (`@triton.autotune`, `@triton.heuristics`) are expanded first: every config left
after the autotuner's own pruning (`early_config_prune`, `perf_model`) gives one concrete launch, with
heuristics evaluated on the merged arguments, as `Autotuner.run` and `Heuristics.run` do. A project's
own wrapper that forwards to a kernel held in its `fn` (FlagGems' `LibEntry`) is looked through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from diagnose.errors import UsageError
from diagnose.ir.launch import Launch, named_arguments


class ArgumentsDoNotFit(UsageError):
    """A launch's arguments do not bind to its kernel's signature (a guessed or stale launch)."""


@dataclass(frozen=True)
class ConcreteLaunch:
    """A launch of one `JITFunction` with every constexpr and option fixed (one autotune config)."""

    kernel: str
    jit: Any
    args: tuple
    kwargs: dict = field(default_factory=dict)
    grid: tuple[int, ...] | None = None
    config: str = ""
    origin: str = ""
    label: str = ""

    @property
    def title(self) -> str:
        parts = [p for p in (self.label, self.config) if p]
        return self.kernel + (f" [{'; '.join(parts)}]" if parts else "")


def expand_configs(launch: Launch) -> list[ConcreteLaunch]:
    """One `ConcreteLaunch` per autotune config (a single one for a plain `@triton.jit` kernel)."""
    out = []
    for jit, kwargs, config in _expand(launch.fn, launch.args, dict(launch.kwargs)):
        grid = launch.grid
        if callable(grid):
            grid = grid(named_arguments(jit, launch.args, kwargs))
        if grid is not None:
            grid = tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,)))
        out.append(ConcreteLaunch(launch.kernel, jit, launch.args, kwargs, grid, config, launch.origin, launch.label))
    return out


def _expand(fn: Any, args: tuple, kwargs: dict) -> list[tuple[Any, dict, str]]:
    from triton.runtime.autotuner import Autotuner, Heuristics  # deferred: triton is heavy
    from triton.runtime.jit import JITFunction, KernelInterface  # deferred: triton is heavy

    if isinstance(fn, JITFunction):
        return [(fn, kwargs, "")]
    if isinstance(fn, Heuristics):
        named = dict(zip(fn.arg_names, args))
        kwargs = dict(kwargs)
        for name, heuristic in fn.values.items():
            kwargs[name] = heuristic({**named, **kwargs})
        return _expand(fn.fn, args, kwargs)
    if isinstance(fn, Autotuner):
        # As `Autotuner.run` sets it, plus the kernel's parameters given by name (a guessed launch names
        # them all): a project's `early_config_prune` reads them from here.
        fn.nargs = {**dict(zip(fn.arg_names, args)), **{k: v for k, v in kwargs.items() if k in fn.arg_names}}
        try:
            configs = fn.prune_configs(kwargs)
        finally:
            fn.nargs = None
        out = []
        for cfg in configs:
            for jit, kw, inner in _expand(fn.fn, args, {**kwargs, **cfg.all_kwargs()}):
                out.append((jit, kw, "; ".join(p for p in (str(cfg), inner) if p)))
        return out
    if isinstance(getattr(fn, "fn", None), KernelInterface):
        # A project's own launcher around a kernel (FlagGems' `LibEntry`): it caches and forwards the
        # launch to the kernel it wraps, which compiles as it would.
        return _expand(fn.fn, args, kwargs)
    raise UsageError(f"cannot compile {type(fn).__name__}: not a Triton kernel")


def build_source(jit: Any, args: tuple, kwargs: dict, target: Any) -> tuple[Any, Any]:
    """`(ASTSource, backend options)` exactly as `JITFunction.run` builds them for `target`."""
    from triton import knobs  # deferred: triton is heavy
    from triton.compiler import ASTSource, make_backend  # deferred: triton is heavy
    from triton.runtime.jit import create_function_from_signature  # deferred: triton is heavy

    kwargs = dict(kwargs)
    # The same two defaults JITFunction.run (3.6) adds before binding.
    kwargs["debug"] = kwargs.get("debug", jit.debug) or knobs.runtime.debug
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    backend = make_backend(target)
    binder = create_function_from_signature(jit.signature, jit.params, backend)
    try:
        bound_args, specialization, options = binder(*args, **kwargs)
    except TypeError as e:
        raise ArgumentsDoNotFit(f"{jit.__name__}: the example arguments do not fit the signature: {e}") from e
    options, signature, constexprs, attrs = jit._pack_args(backend, kwargs, bound_args, specialization, options)
    return ASTSource(jit, signature, constexprs, attrs), options


def describe_specialization(source: Any) -> dict[str, Any]:
    """The signature, constexprs and attributes of an `ASTSource`, as JSON-able values."""
    names = source.fn.arg_names
    return {
        "signature": {k: str(v) for k, v in source.signature.items()},
        "constexprs": {names[k[0]] if len(k) == 1 else str(k): _plain(v) for k, v in source.constants.items()},
        "attrs": {names[k[0]] if len(k) == 1 else str(k): v for k, v in source.attrs.items() if v},
    }


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float, bool, str, type(None))) else str(value)
